"""Recommendations and isolation for the TUI, through the same use cases as ``ibfab recommend`` and
``ibfab isolate`` (the plan text both print is :func:`fabric.present.advice.isolation_plan_text`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fabric.advise.cabling import LastPeer
from fabric.advise.candidates import LinkFinding, findings_from_report, node_label, read_health_file
from fabric.advise.recommend import Recommendations, recommend
from fabric.advise.safety import SafetyPolicy
from fabric.advise.subnet_manager import Unknown
from fabric.advise.sweep_repairs import SweepSuspect
from fabric.app.discover import Discovery, discover
from fabric.app.health import assess_store
from fabric.app.health_window import HealthWindow
from fabric.app.isolate import AppliedChange, IsolationPlan, plan_isolation
from fabric.app.isolation_limits import isolate_ports, isolation_limits
from fabric.app.source import Source
from fabric.app.subnet import learn_subnet_manager, probe_subnet_manager
from fabric.app.views import Advice, FabricView, Unavailable
from fabric.health.reading import ReadingFinding
from fabric.health.thresholds import HealthThresholds
from fabric.store import Store
from topology.errors import SafetyError, StoreError, UsageError
from topology.model import Guid, PortRef
from topology.plancheck import PlanCheck


def recommendations(
    db: Path | None,
    lab: str | None,
    view: FabricView,
    health: HealthWindow | None,
    thresholds: HealthThresholds | None = None,
) -> list[Advice] | Unavailable:
    """``ibfab recommend`` over the stored topology and the current health report (judged by the
    site's ``thresholds``, as ``ibfab recommend --thresholds``)."""
    got = advice_view(db, lab, view, health, thresholds)
    return got if isinstance(got, Unavailable) else list(got.advice)


@dataclass(frozen=True)
class AdviceView:
    """The TUI's advice and what it holds back: each thing not known (the SM's routing engine,
    whether AR is on) with the advice waiting for it, and why the TUI could not learn it."""

    advice: tuple[Advice, ...]
    held_back: tuple[Unknown, ...]
    sm_source: str | None  # where the SM was asked ("lab NAME"), None: nowhere (no --lab)


def advice_view(
    db: Path | None,
    lab: str | None,
    view: FabricView,
    health: HealthWindow | None,
    thresholds: HealthThresholds | None = None,
) -> AdviceView | Unavailable:
    """What ``ibfab recommend`` gives with the same store: the health findings, the newest
    reading's counters and the newest sweep's suspects; the subnet manager asked only where the TUI
    can reach it (a lab), so the routing, AR and NCCL advice that waits for it is listed as held back."""
    if health is None:
        return Unavailable("recommendations", "no health report yet (ibfab counters collect)")
    from fabric.app.status.gather import newest_suspects  # the status room imports this module

    evidence = MoreEvidence(newest_suspects(None if db is None else str(db)), health.readings)
    recs = recommend_fabric(
        view.discovery,
        Source("lab", lab) if lab else None,
        findings_from_report(health.report),
        SafetyPolicy(),
        db=None if db is None else str(db),
        thresholds=thresholds,
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
    return AdviceView(advice, recs.routing.unknowns, f"lab {lab}" if lab else None)


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
    with Store.open(db) as store:
        run = isolate_ports(
            store,
            discover(src),
            ports,
            plan.safety.policy,
            reason,
            lab=lab,
            rediscover=lambda: discover(src),
            apply=True,
        )
    return list(run.changes)


def stored_findings(db: str | None, thresholds: HealthThresholds | None = None) -> list[LinkFinding] | None:
    """Findings from the store's counters (the same assessment as 'ibfab health', with the same
    ``thresholds``), or None when the store has no topology or counters yet."""
    try:
        stored = Store.existing(db)
        if stored is None:
            return None
        with stored as store:
            view = assess_store(store, thresholds=thresholds, record=False)
    except StoreError:
        return None
    return findings_from_report(view.report)


def health_findings(
    health_file: str | None, db: str | None, thresholds: HealthThresholds | None = None
) -> list[LinkFinding] | None:
    """The findings advice rests on: a saved ``ibfab health --json`` file when given, else the
    store's newest assessment under the site's ``thresholds``; None when neither holds any."""
    return read_health_file(health_file) if health_file else stored_findings(db, thresholds)


def safety_policy(
    min_uplink_share: float, max_isolations: int | None, allow_switch_to_host: bool
) -> SafetyPolicy:
    """The isolation safety rules an operator set on the command line or in the TUI."""
    return SafetyPolicy(min_uplink_share, max_isolations, allow_switch_to_host)


def live_source(lab: str | None, ssh: str | None, d: Discovery, saved: bool) -> Source | None:
    """Where tools reach the fabric ``d`` was read from: the lab, the SSH host, this machine; None
    when it came from saved text, an ibdiagnet run or a stored snapshot (nothing runs for those)."""
    if lab:
        return Source("lab", lab)
    if ssh:
        return Source("ssh", ssh)
    if saved or d.stored is not None:
        return None
    return Source("local")


def recommend_fabric(
    d: Discovery,
    live: Source | None,
    findings: list[LinkFinding],
    policy: SafetyPolicy,
    *,
    db: str | None = None,
    min_status: str = "warn",
    opensm_log: str | None = None,
    opensm_conf: str | None = None,
    ibdiagnet: str | None = None,
    thresholds: HealthThresholds | None = None,
    evidence: MoreEvidence | None = None,
) -> Recommendations:
    """``ibfab recommend``: the SM learned from what can be read (sminfo and the SM's files where
    ``live`` reaches, the files given, the ibdiagnet run), the isolation limits from the fabric
    and the store, then :func:`fabric.advise.recommend.recommend` (with ``evidence``: the sweep's
    suspects, the reading's counters and the plan check, as ``ibfab status`` gathers them)."""
    if live is not None and live.kind == "lab":
        sm = probe_subnet_manager(lab=live.target, log_path=opensm_log, conf_path=opensm_conf)
    else:
        sm = learn_subnet_manager(
            live,
            log_path=opensm_log,
            conf_path=opensm_conf,
            look_locally=live is not None and live.kind == "local",
            ibdiagnet=ibdiagnet,
        )
    last_peers: dict[PortRef, LastPeer] = {}
    stored = Store.existing(db)  # advice only reads: a store that is not there is not created
    if stored is not None:
        with stored as store:
            limits = isolation_limits(store, d.fabric, d.classification, live)
            last_peers = down_ports_last_peers(store, d)
    else:
        limits = isolation_limits(None, d.fabric, d.classification, live)
    return recommend(
        d.fabric,
        d.classification,
        findings,
        policy,
        sm,
        min_status=min_status,
        already_isolated=limits.already,
        anomalies=d.anomalies,
        designed=limits.designed,
        thresholds=thresholds,
        last_peers=last_peers,
        suspects=evidence.suspects if evidence is not None else (),
        readings=evidence.readings if evidence is not None else (),
        plan=evidence.plan if evidence is not None else None,
    )


@dataclass(frozen=True)
class MoreEvidence:
    """What advice takes beyond health findings and discovery's anomalies."""

    suspects: tuple[SweepSuspect, ...] = ()
    readings: tuple[ReadingFinding, ...] = ()
    plan: PlanCheck | None = None


def down_ports_last_peers(store: Store, d: Discovery) -> dict[PortRef, LastPeer]:
    """Each down port's peer when ibfab last saw its link change (the store's link events), named
    as today's discovery names it, else as the newest stored topology that still had it."""
    out: dict[PortRef, LastPeer] = {}
    for an in d.anomalies:
        if an.kind != "down_port" or not an.ports:
            continue
        ref = an.ports[0]
        event = store.last_link_event(ref.guid, ref.port)
        if event is None:
            continue
        (ag, ap), (bg, bp) = event.link
        far = PortRef(Guid(bg), bp) if (ag, ap) == (ref.guid, ref.port) else PortRef(Guid(ag), ap)
        name = node_label(d.fabric, d.classification, far.guid) if far.guid in d.fabric.nodes else None
        if name is None:
            name = _stored_name(store, far.guid) or f"node {far.guid}"
        out[ref] = LastPeer(far, name, event.time, event.kind)
    return out


def _stored_name(store: Store, guid: Guid, look_back: int = 5) -> str | None:
    """The node's description in the newest of the last ``look_back`` stored topologies that had it
    (a node gone with its link: an HCA whose only port is down is not discovered any more)."""
    for summary in reversed(store.list_topologies()[-look_back:]):
        try:
            node = store.load_topology(summary.id).fabric.nodes.get(guid)
        except StoreError:  # a damaged copy (the store warns of it): the next older one
            continue
        if node is not None:
            return node.description or None
    return None
