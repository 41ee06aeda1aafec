"""Recommendations and isolation for the TUI, through the same use cases as ``ibfab recommend`` and
``ibfab isolate`` (the plan text both print is :func:`fabric.present.advice.isolation_plan_text`)."""

from __future__ import annotations

from fabric.advise.candidates import findings_from_report
from fabric.advise.safety import SafetyPolicy
from fabric.app.advice.recommend import recommend_fabric
from fabric.app.health.window import HealthWindow
from fabric.app.isolation.isolate import IsolationPlan, plan_isolation
from fabric.app.isolation.limits import isolation_limits
from fabric.app.readmodel.views import Advice, FabricView, Unavailable
from fabric.app.session import Session
from probes.driver import FabricDriver
from topology.errors import UsageError


def _live(session: Session) -> FabricDriver | None:
    # The TUI's fabric is the store's newest topology. A lab's SM and port states are its own and
    # cheap to read, so its advice reads them; on a real fabric the advice rests on the store alone
    # (as ``ibfab recommend`` over a stored snapshot), and only an apply reads the fabric.
    return session.driver if session.driver.simulated else None


def recommendations(
    session: Session, view: FabricView, health: HealthWindow | None
) -> list[Advice] | Unavailable:
    """``ibfab recommend`` over the stored topology and the current health report (judged by the
    site's thresholds, as ``ibfab recommend --thresholds``)."""
    if health is None:
        return Unavailable("recommendations", "no health report yet (ibfab counters collect)")

    recs = recommend_fabric(
        view.discovery,
        _live(session),
        findings_from_report(health.report),
        SafetyPolicy(),
        session.store,
        thresholds=session.thresholds,
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


def isolation_plan(session: Session, view: FabricView, advice: Advice) -> IsolationPlan:
    """The safety-checked plan for an isolate_port advice (what ``ibfab isolate PORT`` shows)."""

    port = advice.action.port
    if port is None or advice.kind != "isolate_port":
        raise UsageError(f"{advice.kind} {advice.target}: advice only, nothing to apply here")
    d = view.discovery
    found = session.store.read()  # planning reads; no store yet: no isolation is open
    if found is None:
        limits = isolation_limits(None, d.fabric, d.classification, _live(session))
    else:
        with found as store:
            limits = isolation_limits(store, d.fabric, d.classification, _live(session))
    return plan_isolation(
        d.fabric,
        d.classification,
        [port],
        SafetyPolicy(),
        advice.reason,
        limits.already,
        designed=limits.designed,
    )
