"""Read every source of evidence ibfab has about a fabric, and say for each what it read or why it
has nothing: the store's counter history and newest reading (health), its newest sweep, its
stored forwarding tables, and the cable plan (given, or the one stored with ``topology check
--save``). Discovery's anomalies come with the fabric itself.

Nothing here runs a tool or changes the store (health is assessed without recording findings).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from fabric.advise.candidates import LinkFinding, findings_from_report
from fabric.advise.sweep_repairs import SweepSuspect, suspects_of
from fabric.app.advice.recommend import MoreEvidence
from fabric.app.discovery.discover import Discovery
from fabric.app.health.assess import AssessedHealth, assess_store
from fabric.app.session import Session, StoreAccess
from fabric.app.status.records import EvidenceSource, SourceState
from fabric.core.units import human_duration, utc_time
from fabric.health import HealthReport
from fabric.health.reading import ReadingFinding
from fabric.health.thresholds import HealthThresholds
from fabric.store import Store
from probes.localize import final_results
from topology.errors import IbfabError, StoreError
from topology.plancheck import PlanCheck
from topology.route_checks import RouteReport

# A sweep is a measurement of its day: older ones are not taken as evidence about today's cables.
SWEEP_MAX_AGE_S = 7 * 86400.0
# Judging forwarding tables walks every route; past this many HCAs it takes minutes
# (README: the balance check at 16,384 HCAs took over 600 s), too long for a status.
ROUTES_MAX_HCAS = 4096


@dataclass(frozen=True)
class Gathered:
    health: HealthReport | None = None
    findings: list[LinkFinding] = field(default_factory=list)
    readings: tuple[ReadingFinding, ...] = ()
    suspects: tuple[SweepSuspect, ...] = ()
    plan: PlanCheck | None = None
    routes: RouteReport | None = None
    states: tuple[SourceState, ...] = ()


@dataclass(frozen=True)
class GivenHealth:
    """A health assessment the caller has already made (the TUI's window): its report, the
    newest reading's findings and what it covers, in words."""

    report: HealthReport
    readings: tuple[ReadingFinding, ...]
    read: str


def gather(
    d: Discovery,
    session: Session,
    *,
    since_s: float | None = 86400.0,
    plans: Sequence[str] = (),
    now: float | None = None,
    given: GivenHealth | None = None,
    judge_routes: bool = True,
) -> Gathered:
    """Every source's evidence in the session's store, judged by its thresholds (``given``:
    health already assessed, used as it is; ``judge_routes`` False: stored tables are not judged,
    a UI's cheap path)."""
    now = time.time() if now is None else now
    thresholds = session.thresholds
    states: dict[EvidenceSource, SourceState] = {}
    health: AssessedHealth | None = None
    suspects: tuple[SweepSuspect, ...] = ()
    routes: RouteReport | None = None
    plan = _plan_given(d, plans) if plans else None
    stored = session.store.read()
    if stored is None:
        missing = f"no store at {session.store.path} (ibfab counters collect, ibfab sweep run)"
        for src in (
            EvidenceSource.HEALTH,
            EvidenceSource.READING,
            EvidenceSource.SWEEP,
            EvidenceSource.ROUTES,
        ):
            states[src] = SourceState(src, missing=missing)
    else:
        with stored as store:
            if given is None:
                health, states[EvidenceSource.HEALTH], states[EvidenceSource.READING] = _health(
                    store, since_s, thresholds, now
                )
            else:
                states[EvidenceSource.HEALTH] = SourceState(EvidenceSource.HEALTH, read=given.read)
                states[EvidenceSource.READING] = SourceState(
                    EvidenceSource.READING, read="the newest reading"
                )
            suspects, states[EvidenceSource.SWEEP] = _sweep(store, session.store, now)
            if judge_routes:
                routes, states[EvidenceSource.ROUTES] = _routes(store, d)
            else:
                states[EvidenceSource.ROUTES] = SourceState(
                    EvidenceSource.ROUTES, missing="not judged here (ibfab status judges the stored tables)"
                )
    if plans:
        states[EvidenceSource.PLAN] = SourceState(EvidenceSource.PLAN, read=", ".join(plans))
    else:
        plan, states[EvidenceSource.PLAN] = _stored_plan(d, session.store)
    states[EvidenceSource.WIRING] = SourceState(
        EvidenceSource.WIRING, read=f"discovery of {d.source}: {len(d.anomalies)} anomalies"
    )
    report = given.report if given is not None else health.report if health is not None else None
    return Gathered(
        report,
        findings_from_report(report) if report is not None else [],
        given.readings if given is not None else health.readings if health is not None else (),
        suspects,
        plan,
        routes,
        tuple(states[s] for s in EvidenceSource),
    )


def _health(
    store: Store, since_s: float | None, thresholds: HealthThresholds | None, now: float
) -> tuple[AssessedHealth | None, SourceState, SourceState]:
    try:
        view = assess_store(store, since_s=since_s, now=now, thresholds=thresholds, record=False)
    except StoreError as exc:
        why = str(exc)
        return (
            None,
            SourceState(EvidenceSource.HEALTH, missing=why),
            SourceState(EvidenceSource.READING, missing=why),
        )
    s = view.report.summary
    if view.one_reading is not None:
        health = SourceState(
            EvidenceSource.HEALTH,
            missing=f"one counter reading (snapshot {view.one_reading.snapshot.id}): rates need a second "
            "(ibfab counters collect)",
        )
    else:
        first, last = view.covered or (s.since, s.now)
        health = SourceState(
            EvidenceSource.HEALTH,
            read=f"{s.links} links over {human_duration(last - first)} of readings ({s.snapshots} snapshots "
            f"to {utc_time(last)})",
        )
    read_at = view.covered[1] if view.covered else None
    reading = SourceState(
        EvidenceSource.READING,
        read=f"the newest reading{f' at {utc_time(read_at)}' if read_at else ''}: saturated counters"
        + (", and totals (one reading)" if view.one_reading is not None else ""),
    )
    return view, health, reading


def _sweep(store: Store, stored: StoreAccess, now: float) -> tuple[tuple[SweepSuspect, ...], SourceState]:
    from fabric.app.sweeps.sweep import show

    sweeps = [s for s in store.list_sweeps() if s.finished is not None]
    if not sweeps:
        return (), SourceState(EvidenceSource.SWEEP, missing="no sweep stored (ibfab sweep run)")
    newest = sweeps[-1]
    if now - newest.finished > SWEEP_MAX_AGE_S:  # type: ignore[operator]
        return (), SourceState(
            EvidenceSource.SWEEP,
            missing=f"the newest sweep ({newest.id}, {utc_time(newest.finished)}) is older than "  # type: ignore[arg-type]
            f"{human_duration(SWEEP_MAX_AGE_S)}: not taken as today's (ibfab sweep run)",
        )
    try:
        shown = show(newest.id, stored)
    except IbfabError as exc:
        return (), SourceState(EvidenceSource.SWEEP, missing=f"sweep {newest.id}: {exc}")
    found = suspects_of(
        [(s.link, s.reason, len(s.slow_pairs), s.group) for s in shown.suspects],
        shown.id,
        shown.pattern,
        shown.finished,
    )
    last = final_results(shown.results)
    slow = sum(1 for r in last if not r.ok)
    return tuple(found), SourceState(
        EvidenceSource.SWEEP,
        read=f"sweep {shown.id} ({shown.pattern}, {utc_time(shown.finished or shown.started)}): "
        f"{len(last)} pairs, {slow} slow or failed on their last attempt",
    )


def _routes(store: Store, d: Discovery) -> tuple[RouteReport | None, SourceState]:
    if d.stored is None:
        return None, SourceState(
            EvidenceSource.ROUTES,
            missing="the fabric was read live: stored tables belong to a stored snapshot "
            "(ibfab routes --save; ibfab status --snapshot latest)",
        )
    sid = d.stored.id
    if not store.has_routes(sid):
        return None, SourceState(
            EvidenceSource.ROUTES,
            missing=f"no forwarding tables stored with topology {sid} (ibfab routes --save)",
        )
    hcas = sum(1 for n in d.fabric.nodes.values() if n.kind.value == "hca")
    if hcas > ROUTES_MAX_HCAS:
        return None, SourceState(
            EvidenceSource.ROUTES,
            missing=f"{hcas} HCAs: judging every route takes minutes here (ibfab routes check --snapshot {sid})",
        )
    from fabric.app.routes.tables import stored_tables
    from topology.route_checks import check_routes

    tables = stored_tables(store, sid)
    if tables is None:
        return None, SourceState(
            EvidenceSource.ROUTES, missing=f"topology {sid}: its tables could not be read"
        )
    lfts = tables.lfts
    # judged alone: health and the SM are sources of their own in the status, not flags on routes
    report = check_routes(d.fabric, d.classification, lfts)
    return report, SourceState(
        EvidenceSource.ROUTES, read=f"the tables stored with topology {sid} ({lfts.source or lfts.format})"
    )


def _plan_given(d: Discovery, plans: Sequence[str]) -> PlanCheck:
    from fabric.app.discovery.cableplan import check_against_plans

    return check_against_plans(d, plans)


@dataclass(frozen=True)
class AdviceInputs:
    """What ``ibfab recommend`` rests on beyond discovery: the health findings (None: no health
    data at all) and the rest of the evidence ``ibfab status`` reads."""

    findings: list[LinkFinding] | None
    evidence: MoreEvidence
    notes: tuple[str, ...] = ()  # sources that gave nothing, and why


def advice_inputs(
    d: Discovery,
    session: Session,
    *,
    health_file: str | None = None,
    plans: Sequence[str] = (),
    now: float | None = None,
) -> AdviceInputs:
    """The findings (a saved ``ibfab health --json`` when given, else the session's store's
    assessment under its thresholds, done once), the newest reading's counters, the newest sweep's
    suspects and the plan check."""
    from fabric.advise.candidates import read_health_file

    now = time.time() if now is None else now
    findings: list[LinkFinding] | None = read_health_file(health_file) if health_file else None
    readings: tuple[ReadingFinding, ...] = ()
    suspects: tuple[SweepSuspect, ...] = ()
    notes: list[str] = []
    stored = session.store.read()
    if stored is not None:
        with stored as store:
            if health_file is None:
                view, state, _ = _health(store, 86400.0, session.thresholds, now)
                if view is not None:
                    findings, readings = findings_from_report(view.report), view.readings
                elif state.missing:
                    notes.append(f"health: {state.missing}")
            suspects, sweep = _sweep(store, session.store, now)
            if sweep.missing:
                notes.append(f"sweep: {sweep.missing}")
    plan = _plan_given(d, plans) if plans else None
    return AdviceInputs(findings, MoreEvidence(suspects, readings, plan), tuple(notes))


def newest_suspects(stored: StoreAccess, now: float | None = None) -> tuple[SweepSuspect, ...]:
    """The newest sweep's suspect cables (none when there is no store or no recent sweep)."""
    found = stored.read()
    if found is None:
        return ()
    with found as store:
        return _sweep(store, stored, time.time() if now is None else now)[0]


def _stored_plan(d: Discovery, stored: StoreAccess) -> tuple[PlanCheck | None, SourceState]:
    from fabric.app.discovery.cableplan import check_stored_plan

    try:
        found = check_stored_plan(d, stored)
    except IbfabError as exc:  # a damaged copy, a plan today's parser refuses
        return None, SourceState(
            EvidenceSource.PLAN, missing=f"the stored plan cannot be read: {exc.one_line()}"
        )
    if found is None:
        return None, SourceState(
            EvidenceSource.PLAN,
            missing="no cable plan given or stored (--plan FILE, or ibfab topology check --plan FILE --save; "
            "ibfab export plan writes one)",
        )
    check, kept = found
    return check, SourceState(
        EvidenceSource.PLAN,
        read=f"the plan stored at {utc_time(kept.taken_at)}: {', '.join(kept.sources)}",
    )
