"""Recommendations, what is wrong and isolation for the TUI, through the same use cases as ``ibfab
recommend``, ``ibfab status`` and ``ibfab isolate`` (the plan text both print is
:func:`fabric.present.advice.isolation_plan_text`)."""

from __future__ import annotations

from dataclasses import dataclass

from fabric.advise.candidates import findings_from_report
from fabric.advise.safety import SafetyPolicy
from fabric.advise.subnet_manager import Unknown
from fabric.app.advice.recommend import MoreEvidence, recommend_fabric
from fabric.app.health.window import HealthWindow
from fabric.app.isolation.isolate import IsolationPlan, plan_isolation
from fabric.app.isolation.limits import isolation_limits
from fabric.app.readmodel.views import Advice, FabricView, Unavailable
from fabric.app.session import Session
from fabric.app.status import StatusReport, fabric_status
from fabric.app.status.gather import GivenHealth, newest_suspects
from fabric.core.units import human_duration
from probes.driver import FabricDriver
from topology.errors import IbfabError, UsageError


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
    got = advice_view(session, view, health)
    return got if isinstance(got, Unavailable) else list(got.advice)


@dataclass(frozen=True)
class AdviceView:
    """The TUI's advice and what it holds back: each thing not known (the SM's routing engine,
    whether AR is on) with the advice waiting for it, and why the TUI could not learn it."""

    advice: tuple[Advice, ...]
    held_back: tuple[Unknown, ...]
    sm_source: str | None  # where the SM was asked ("lab NAME"), None: nowhere (a real fabric)


def advice_view(session: Session, view: FabricView, health: HealthWindow | None) -> AdviceView | Unavailable:
    """What ``ibfab recommend`` gives with the same store: the health findings, the newest
    reading's counters and the newest sweep's suspects; the subnet manager asked only where the TUI
    can reach it cheaply (a simulated fabric), so the routing, AR and NCCL advice that waits for it
    is listed as held back."""
    if health is None:
        return Unavailable("recommendations", "no health report yet (ibfab counters collect)")
    live = _live(session)
    evidence = MoreEvidence(newest_suspects(session.store), health.readings)
    recs = recommend_fabric(
        view.discovery,
        live,
        findings_from_report(health.report),
        SafetyPolicy(),
        session.store,
        thresholds=session.thresholds,
        evidence=evidence,
    )
    advice = tuple(
        Advice(
            a.kind.value,
            a.target,
            a.reason,
            (*a.evidence, *([f"cost: {a.impact}"] if a.impact else [])),
            a,
        )
        for a in recs.actions
    )
    return AdviceView(advice, recs.routing.unknowns, session.source.label if live is not None else None)


def status_view(
    session: Session, view: FabricView, health: HealthWindow | None, now: float | None = None
) -> StatusReport:
    """``ibfab status`` on the topology and health on screen: what is wrong, per cable and host,
    with every source's evidence and its action (stored routes are judged by the CLI only: that
    can take minutes on a large fabric); ``now`` the clock a sweep's age is told by."""
    given = None
    if health is not None:
        span = human_duration(health.now - health.since)
        given = GivenHealth(
            health.report, health.readings, f"the last {span} to snapshot {health.snapshot_id}"
        )
    live = _live(session)
    if live is not None:
        try:  # a simulated SM tells whether routing is adaptive (an isolation's advice rests on it)
            return fabric_status(view.discovery, session, live=live, given=given, judge_routes=False, now=now)
        except IbfabError:  # the lab is down (the store stays to be read): as without it
            pass
    return fabric_status(view.discovery, session, given=given, judge_routes=False, now=now)


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
