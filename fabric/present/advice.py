"""Advice for people: numbered actions with their evidence and commands, and isolation plans."""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from fabric.advise.actions import Action
from fabric.app.isolate import IsolationPlan, UndoPlan
from fabric.core.units import human_duration


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


def isolation_plan_text(plan: IsolationPlan) -> str:
    """The plan as ``ibfab isolate`` prints it before asking: each safety verdict (ok / STOP, the
    rule, its costs), then each port with the commands that would isolate it."""
    lines = []
    for v in plan.safety.verdicts:
        mark = "ok  " if v.accepted else "STOP"
        lines.append(f"{mark} {v.reason}" + (f" [{v.rule.value}]" if v.rule else ""))
        lines += [f"     cost: {cost.describe()}" for cost in v.costs]
    for s in plan.steps:
        lines.append(f"  {s.name} <-> {s.far}")
        lines += [f"    [{cmd.manager} {cmd.purpose}] {cmd.text}" for cmd in s.action.commands]
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
