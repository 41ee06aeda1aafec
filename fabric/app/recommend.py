"""Recommendations and isolation for the TUI, through the same services as ``ibfab recommend`` and
``ibfab isolate``; :func:`isolation_plan_text` is the plan text both print before asking."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fabric.store import Store
from topology.errors import UsageError

if TYPE_CHECKING:
    from fabric.advise.actions import Action
    from fabric.app.health_window import HealthView
    from fabric.app.isolate import AppliedChange, IsolationPlan
    from fabric.app.readmodel import FabricView, Unavailable


@dataclass(frozen=True, slots=True)
class Advice:
    """One recommendation as the TUI lists it; ``action`` is fabric.advise's own record."""

    kind: str
    target: str
    reason: str
    evidence: tuple[str, ...]
    action: Action

    @property
    def can_apply(self) -> bool:
        return self.kind == "isolate_port" and self.action.port is not None


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


def recommendations(
    db: Path | None, lab: str | None, view: FabricView, health: HealthView | None
) -> list[Advice] | Unavailable:
    """``ibfab recommend`` over the stored topology and the current health report."""
    from fabric.app.readmodel import Unavailable, optional_service

    mod = optional_service("fabric.advise.recommend", "recommendations", "recommend")
    if isinstance(mod, Unavailable):
        return mod
    if health is None:
        return Unavailable("recommendations", "no health report yet (ibfab counters collect)")
    from fabric.advise.candidates import findings_from_report
    from fabric.advise.routing_advice import SubnetManager, probe_subnet_manager
    from fabric.advise.safety import SafetyPolicy
    from fabric.app.isolate import open_isolations

    sm = probe_subnet_manager(lab=lab) if lab else SubnetManager()
    with Store.open(db) as store:
        already = len(open_isolations(store))
    d = view.discovery
    recs = mod.recommend(
        d.fabric,
        d.classification,
        findings_from_report(health.report),
        SafetyPolicy(),
        sm,
        already_isolated=already,
    )
    return [
        Advice(
            a.kind.value,
            a.target,
            a.reason,
            (*a.evidence, *([f"cost: {a.impact}"] if a.impact else [])),
            a,
        )
        for a in recs.actions
    ]


def isolation_plan(db: Path | None, view: FabricView, advice: Advice) -> IsolationPlan:
    """The safety-checked plan for an isolate_port advice (what ``ibfab isolate PORT`` shows)."""
    from fabric.advise.safety import SafetyPolicy
    from fabric.app.isolate import open_isolations, plan_isolation

    port = advice.action.port
    if port is None or advice.kind != "isolate_port":
        raise UsageError(f"{advice.kind} {advice.target}: advice only, nothing to apply here")
    with Store.open(db) as store:
        already = len(open_isolations(store))
    d = view.discovery
    return plan_isolation(d.fabric, d.classification, [port], SafetyPolicy(), advice.reason, already)


def apply_isolation(db: Path | None, lab: str | None, plan: IsolationPlan) -> list[AppliedChange]:
    """What ``ibfab isolate --apply --yes`` does after its plan (every port audited)."""
    from fabric.app.isolate import apply_plan

    if not plan.safe:
        from topology.errors import SafetyError

        raise SafetyError("the plan breaks safety rules; nothing was changed")
    with Store.open(db) as store:
        return apply_plan(plan, store, lab=lab)
