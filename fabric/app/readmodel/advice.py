"""Recommendations and isolation for the TUI, through the same use cases as ``ibfab recommend`` and
``ibfab isolate`` (the plan text both print is :func:`fabric.present.advice.isolation_plan_text`)."""

from __future__ import annotations

from pathlib import Path

from fabric.advise.candidates import findings_from_report
from fabric.advise.safety import SafetyPolicy
from fabric.app.advice.recommend import recommend_fabric
from fabric.app.discovery.discover import discover
from fabric.app.health.window import HealthWindow
from fabric.app.isolation.isolate import AppliedChange, IsolationPlan, plan_isolation
from fabric.app.isolation.limits import isolate_ports, isolation_limits
from fabric.app.readmodel.views import Advice, FabricView, Unavailable
from fabric.app.source import Source
from fabric.health.thresholds import HealthThresholds
from fabric.store import Store
from topology.errors import SafetyError, UsageError


def recommendations(
    db: Path | None,
    lab: str | None,
    view: FabricView,
    health: HealthWindow | None,
    thresholds: HealthThresholds | None = None,
) -> list[Advice] | Unavailable:
    """``ibfab recommend`` over the stored topology and the current health report (judged by the
    site's ``thresholds``, as ``ibfab recommend --thresholds``)."""
    if health is None:
        return Unavailable("recommendations", "no health report yet (ibfab counters collect)")

    recs = recommend_fabric(
        view.discovery,
        Source("lab", lab) if lab else None,
        findings_from_report(health.report),
        SafetyPolicy(),
        db=None if db is None else str(db),
        thresholds=thresholds,
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


def isolation_plan(
    db: Path | None, view: FabricView, advice: Advice, lab: str | None = None
) -> IsolationPlan:
    """The safety-checked plan for an isolate_port advice (what ``ibfab isolate PORT`` shows)."""

    port = advice.action.port
    if port is None or advice.kind != "isolate_port":
        raise UsageError(f"{advice.kind} {advice.target}: advice only, nothing to apply here")
    d = view.discovery
    with Store.open(db) as store:
        limits = isolation_limits(store, d.fabric, d.classification, Source("lab", lab) if lab else None)
    return plan_isolation(
        d.fabric,
        d.classification,
        [port],
        SafetyPolicy(),
        advice.reason,
        limits.already,
        designed=limits.designed,
    )


def apply_isolation(db: Path | None, lab: str | None, plan: IsolationPlan) -> list[AppliedChange]:
    """What ``ibfab isolate --apply --yes`` does after its plan: under the fabric's change lock,
    the same ports planned again on the fabric as it is now, then changed (every port audited)."""

    if not plan.safe:
        raise SafetyError("the plan breaks safety rules; nothing was changed")
    src = Source("lab", lab) if lab is not None else Source("local")
    ports = [s.port for s in plan.steps]
    reason = plan.steps[0].action.reason if plan.steps else "requested by the operator"
    from fabric.app.isolation.limits import IsolationRun
    from fabric.app.twin import routing_gate

    d = discover(src)

    def gate(r: IsolationRun) -> None:
        # where the fabric's twin is up, the change runs there first: a STOP refuses it
        routing_gate(d, [s.port for s in r.plan.steps])

    with Store.open(db) as store:
        run = isolate_ports(
            store,
            d,
            ports,
            plan.safety.policy,
            reason,
            lab=lab,
            rediscover=lambda: discover(src),
            apply=True,
            before_apply=gate,
        )
    return list(run.changes)
