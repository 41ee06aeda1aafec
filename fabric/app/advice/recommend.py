"""``ibfab recommend``: the findings advice rests on, the subnet manager as known, the isolation
limits, then the safety-checked recommendations (the TUI's advice goes through the same use case,
:mod:`fabric.app.readmodel.advice`)."""

from __future__ import annotations

from dataclasses import dataclass

from fabric.advise.cabling import LastPeer
from fabric.advise.candidates import LinkFinding, node_label, read_health_file
from fabric.advise.recommend import Recommendations, recommend
from fabric.advise.safety import SafetyPolicy
from fabric.advise.sweep_repairs import SweepSuspect
from fabric.app.advice.subnet import learn_subnet_manager, probe_subnet_manager
from fabric.app.discovery.discover import Discovery
from fabric.app.health.findings import stored_findings
from fabric.app.isolation.limits import isolation_limits
from fabric.app.session import Session, StoreAccess
from fabric.health.reading import ReadingFinding
from fabric.health.thresholds import HealthThresholds
from fabric.store import Store
from probes.driver import FabricDriver
from topology.errors import StoreError
from topology.model import Guid, PortRef
from topology.plancheck import PlanCheck


def health_findings(health_file: str | None, session: Session) -> list[LinkFinding] | None:
    """The findings advice rests on: a saved ``ibfab health --json`` file when given, else the
    store's newest assessment under the site's thresholds; None when neither holds any."""
    return read_health_file(health_file) if health_file else stored_findings(session)


def safety_policy(
    min_uplink_share: float, max_isolations: int | None, allow_switch_to_host: bool
) -> SafetyPolicy:
    """The isolation safety rules an operator set on the command line or in the TUI."""
    return SafetyPolicy(min_uplink_share, max_isolations, allow_switch_to_host)


def live_driver(session: Session) -> FabricDriver | None:
    """Where tools reach the session's fabric: the lab, the SSH host, this machine; None when it
    came from saved text, an ibdiagnet run or a stored snapshot (nothing runs for those)."""
    return session.driver if session.source.runs_tools else None


def recommend_fabric(
    d: Discovery,
    live: FabricDriver | None,
    findings: list[LinkFinding],
    policy: SafetyPolicy,
    stored: StoreAccess,
    *,
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
    if live is not None:
        sm = probe_subnet_manager(live, opensm_log, opensm_conf, ibdiagnet)
    else:
        sm = learn_subnet_manager(None, log_path=opensm_log, conf_path=opensm_conf, ibdiagnet=ibdiagnet)
    last_peers: dict[PortRef, LastPeer] = {}
    found = stored.read()  # advice only reads: a store that is not there is not created
    if found is not None:
        with found as store:
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
