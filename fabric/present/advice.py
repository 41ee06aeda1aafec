"""Advice for people: numbered actions with their evidence and commands, and isolation plans."""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from fabric.advise.actions import Action
from fabric.advise.recommend import Recommendations
from fabric.advise.routing_advice import RoutingAdvice
from fabric.advise.whatif import WhatIf
from fabric.app.isolation.isolate import IsolationPlan, UndoPlan
from fabric.app.isolation.limits import IsolationLimits
from fabric.app.readmodel.advice import AdviceView
from fabric.core.units import human_duration
from fabric.present.table import table


def render_actions(actions: Iterable[Action]) -> str:
    """The numbered action list as the CLI prints it (the demo and the TUI show the same text)."""
    out: list[str] = []
    for i, a in enumerate(actions, 1):
        out.append(f"{i}. {a.kind.value}: {a.target}")
        out.append(f"   why: {a.reason}")
        out += [f"   - {e}" for e in a.evidence]
        if a.impact:
            out.append(f"   cost: {a.impact}")
        for c in a.commands:
            lines = c.text.splitlines() or [""]
            out.append(f"   [{c.manager} {c.purpose}] {lines[0]}")
            out += [f"       {more}" for more in lines[1:]]
    return "\n".join(out)


def render_routing(routing: RoutingAdvice) -> str:
    """What routing advice rests on: each known fact with its source, then each unknown with the
    advice it holds back and the commands that would tell."""
    out = ["routing evidence:"]
    out += [f"  - {f}" for f in routing.facts]
    out += [f"  - (could not read) {n}" for n in routing.subnet_manager.notes]
    for u in routing.unknowns:
        out.append(f"unknown: {u.what}")
        out.append(f"  nothing advised on: {u.waits}")
        out.append("  to learn it:")
        out += [f"    {c}" for c in u.commands]
    return "\n".join(out)


def render_recommendations(recs: Recommendations) -> str:
    """``ibfab recommend`` as text: the headline, the routing evidence, the actions, the notes."""
    settings = len(recs.routing.actions)
    repairs = len(recs.actions) - settings
    parts = [
        f"{recs.findings} links judged; {repairs} repairs, {settings} settings; {recs.routing.summary}",
        render_routing(recs.routing),
    ]
    actions = render_actions(recs.actions)
    if actions:
        parts.append(actions)
    parts += [f"- {n}" for n in recs.notes]
    return "\n".join(parts)


def isolation_plan_text(plan: IsolationPlan, limits: IsolationLimits | None = None) -> str:
    """The plan as ``ibfab isolate`` prints it before asking: what counts toward the cap, each
    safety verdict (ok / STOP, the rule, its costs), then each port with the commands that would
    isolate it."""
    lines = []
    if limits is not None:
        lines.append(f"cap {plan.safety.cap}: {limits.describe()}")
        lines += [f"  - {n}" for n in limits.notes]
    for v in plan.safety.verdicts:
        mark = "ok  " if v.accepted else "STOP"
        lines.append(f"{mark} {v.reason}" + (f" [{v.rule.value}]" if v.rule else ""))
        lines += [f"     cost: {cost.describe()}" for cost in v.costs]
    for s in plan.steps:
        lines.append(f"  {s.name} <-> {s.far}")
        lines += [f"    [{cmd.manager} {cmd.purpose}] {cmd.text}" for cmd in s.action.commands]
    return "\n".join(lines)


def render_whatif(result: WhatIf) -> str:
    """The worst group's sentence, the routing model, one row per group of HCAs, who is cut off."""
    rows = [
        (
            g.group,
            g.endpoints,
            f"{g.slowed}/{g.pairs}",
            f"{g.all_to_all['static']:.0%}",
            f"{g.all_to_all['adaptive']:.0%}",
            f"{g.ring['static']:.0%}",
            f"{g.ring['adaptive']:.0%}",
        )
        for g in result.groups
    ]
    lines = [
        result.sentence(),
        f"({result.routing_model}; adaptive = ideal spread over equal-cost paths)",
        table(("group", "HCAs", "slowed pairs", "a2a static", "a2a AR", "ring static", "ring AR"), rows),
    ]
    if result.missing:
        lines.append("cut off: " + ", ".join(result.missing))
    return "\n".join(lines)


def change_title(kind: str, target: str) -> str:
    """The heading of a change's plan: ``ISOLATE PORT leaf-su01-r0:5 <-> spine-01:1``."""
    return f"{kind.replace('_', ' ').upper()} {target}"


def undo_plan_text(plan: UndoPlan) -> str:
    """What returning an isolated port to service runs (``ibfab isolate --undo ID``), labelled
    like the isolation plan, with the age against the re-test window."""
    lines = [
        f"undo isolation {plan.entry.id}: {plan.entry.target}",
        f"  [opensm undo] {shlex.join(plan.argv)}",
    ]
    lines += [
        f"  [lab console] {line}   (ibsim only: a real port retrains by itself)" for line in plan.lab_console
    ]
    lines.append(f"  [ufm undo] {plan.ufm}")
    state = "passed" if plan.window_passed else "NOT passed"
    since = (
        f"{human_duration(plan.age_seconds)} ago"
        if plan.age_seconds >= 0
        else f"at a time {human_duration(-plan.age_seconds)} ahead of this clock"
    )
    lines.append(
        f"  isolated {since} by {plan.entry.user}; re-test window of {human_duration(plan.window_seconds)} {state}"
    )
    return "\n".join(lines)


def held_back_text(view: AdviceView) -> str:
    """What the TUI's advice lacks beside ``ibfab recommend``'s, and why, the advice first (a
    small screen shows the first lines): ``held back: NCCL_IB_..., which need whether ... (AR):
    the TUI asks the subnet manager only on a lab ...``."""
    if not view.held_back:
        return ""
    waits = "; ".join(f"{u.waits}, which need {u.what}" for u in view.held_back)
    why = (
        f"the subnet manager of {view.sm_source} did not tell"
        if view.sm_source
        else "the TUI asks the subnet manager only on a lab (--lab NAME); ibfab recommend --ssh "
        "SM-HOST asks a real one"
    )
    return f"held back: {waits}: {why}"
