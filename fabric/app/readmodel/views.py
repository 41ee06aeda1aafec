"""What the TUI and ``ibfab tui``'s report show, as records: store state, the classified fabric with
one row per cable, the overview, a node's detail, recommendations as the TUI lists them.

A row's status is the health model's :class:`fabric.health.status.Status`, or :data:`NO_DATA`
(a :class:`NoData`) when no health report covers the cable or the report has no counter time for
it and nothing else to say (one reading, no samples: "ok" would claim what nobody measured; the
row's reason says why); :func:`status_order` is their one order.
Alerts (:class:`Alert`) put discovery's anomalies and link health on one severity scale
(:class:`topology.wiring.Severity`): what the overview counts and the anomalies screen lists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, TypeAlias

from fabric.app.discovery.discover import Discovery
from fabric.app.health.window import HealthWindow
from fabric.health.status import Status, status_rank
from fabric.store import CounterSnapshotInfo, ProbeSweep, TopologySummary
from fabric.store import StoredSweep as StoredSweep  # what FabricService.sweeps_of returns
from topology.anomaly import Severity
from topology.model import Guid, Link, LinkKey
from topology.route_findings import RouteFinding

if TYPE_CHECKING:
    from fabric.advise.actions import Action


class NoData(StrEnum):
    """A cable no health report covers yet (no counters, or not in the window): not a health
    status, so it is not in :class:`Status`; it reads "no data" and sorts after every status."""

    NO_DATA = "no data"


NO_DATA = NoData.NO_DATA
RowStatus: TypeAlias = "Status | NoData"
# Every status a row can have, worst first: the overview's counts and the TUI's sort use it.
STATUSES: tuple[RowStatus, ...] = (*sorted(Status, key=lambda s: -s.rank), NO_DATA)


def status_order(status: RowStatus) -> int:
    """Sort key, worst first: critical 0 .. ok 3, no data last."""
    return Status.CRITICAL.rank - status_rank(status, -1)


# A link's health status as an alert; ok and no data raise none.
LINK_ALERT = {Status.CRITICAL: Severity.CRITICAL, Status.WARN: Severity.ERROR, Status.WATCH: Severity.WARNING}
# Worst first: the overview's counts and the anomalies screen's order.
SEVERITIES: tuple[Severity, ...] = (Severity.CRITICAL, Severity.ERROR, Severity.WARNING, Severity.INFO)
LINK_HEALTH = "link health"  # the kind of an alert raised by a cable's health


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A feature whose service has not landed (or failed to import): say so, show nothing made up."""

    feature: str
    reason: str

    def __str__(self) -> str:
        return f"{self.feature}: not available yet ({self.reason})"


@dataclass(frozen=True, slots=True)
class StoreState:
    """What is in the store, from a few cheap queries (safe to poll)."""

    db: str
    topology: TopologySummary | None
    topologies: int
    latest_snapshot: CounterSnapshotInfo | None
    snapshots: int
    last_sweep: ProbeSweep | None
    sweeps: int


@dataclass(frozen=True, slots=True)
class LinkRow:
    """One cable as the links table shows it (health fields filled in by :func:`with_health`)."""

    index: int
    key: LinkKey
    a_guid: str  # the ends as shown (lower tier first), whatever order the key has
    b_guid: str
    a_name: str
    a_port: int
    b_name: str
    b_port: int
    tiers: str  # "hca-leaf", "leaf-spine", "spine-core"
    rail: int | None
    group: int | None
    width: int
    speed: str
    status: RowStatus = NO_DATA
    score: int | None = None
    ber: float | None = None
    flaps_per_hour: float | None = 0.0  # None: too short a span for a rate (fabric.health.rates)
    reasons: tuple[str, ...] = ()
    search: str = ""  # lower-case names, tiers, rail and group: what the filter box matches

    @property
    def cable(self) -> str:
        """The cable as an operator names it: ``leaf-su01-r0/5 - spine-01/1``."""
        return f"{self.a_name}/{self.a_port} - {self.b_name}/{self.b_port}"


@dataclass(frozen=True)
class FabricView:
    """The latest stored topology, classified, with one :class:`LinkRow` per cable."""

    topology: TopologySummary
    discovery: Discovery
    links: tuple[LinkRow, ...]
    row_of: Mapping[LinkKey, int] = field(default_factory=dict)
    port_row: Mapping[tuple[str, int], int] = field(default_factory=dict)  # either end -> its row

    def name(self, guid: str) -> str:
        c = self.discovery.classification.nodes.get(Guid(guid))
        return c.name if c is not None else guid

    def tier(self, guid: str) -> int | None:
        c = self.discovery.classification.nodes.get(Guid(guid))
        return c.tier if c is not None else None

    def rail(self, guid: str) -> int | None:
        c = self.discovery.classification.nodes.get(Guid(guid))
        return c.rail if c is not None else None


@dataclass(frozen=True, slots=True)
class Overview:
    """The overview screen and the no-terminal report, as data."""

    state: StoreState
    fabric: Mapping[str, object]  # discovery summary (switch tiers, hosts, rails, groups ...)
    links_by_status: Mapping[str, int]
    worst: tuple[LinkRow, ...]
    alerts: tuple[Alert, ...]  # every anomaly and every cable at watch or worse, worst first
    has_topology: bool
    health: HealthWindow | None

    def alerts_by_severity(self) -> dict[Severity, int]:
        counts = dict.fromkeys(SEVERITIES, 0)
        for a in self.alerts:
            counts[a.severity] += 1
        return counts


@dataclass(frozen=True, slots=True)
class Alert:
    """One finding to show an operator: a discovery anomaly, a cable's health at watch or worse
    (kind :data:`LINK_HEALTH`), or an error-level finding of the stored forwarding tables (``route``:
    its record, opened on the routes screen), with the element to open (a cable, else a node)."""

    severity: Severity
    kind: str
    element: str  # the cable or nodes it names, as an operator reads them
    message: str
    link: LinkKey | None = None
    guid: str | None = None
    status: Status | None = None  # a link alert: the cable's health status
    route: RouteFinding | None = None  # a route alert: the finding, with its evidence


@dataclass(frozen=True, slots=True)
class PortLine:
    port: int
    peer_name: str
    peer_port: int
    link: LinkRow


@dataclass(frozen=True, slots=True)
class CounterSeries:
    """Per-sample deltas of one counter on one port, oldest first (for a sparkline)."""

    port: int
    counter: str
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class NodeDetail:
    guid: str
    name: str
    kind: str
    description: str
    tier_name: str  # NodeClass.tier_name: leaf, side spine, hostless, hca...
    section: str  # the compute fabric or the side group it belongs to
    rail: int | None
    group: int | None
    ports: tuple[PortLine, ...]
    anomalies: tuple[str, ...]
    hcas: tuple[str, ...]  # for a host: its HCA GUIDs
    host: str | None = None  # an HCA's host
    role: str = ""  # an HCA's role (compute, service, unnamed...); a service leaf's "service leaf"
    role_reason: str = ""  # a host's role: the rule and the evidence (topology.hostroles)
    chassis: str | None = None  # a director board's chassis: its name, else its GUID
    board: str | None = None  # line | fabric | unsure (topology.chassis.BoardKind)
    pod: int | None = None  # a leaf's pod, an HCA's leaf's (Classification.pods); None: one pod


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
        """An isolation (ibfab changes the port) or a drain (ibfab drains the node in Slurm);
        every other action is advice whose commands the operator runs."""
        return (self.kind == "isolate_port" and self.action.port is not None) or self.kind == "drain_node"


def with_health(rows: Sequence[LinkRow], health: HealthWindow | None) -> tuple[LinkRow, ...]:
    """``rows`` with each cable's status, score, BER, flaps and reasons from ``health``."""
    if health is None:
        return tuple(rows)
    out = []
    for r in rows:
        lh = health.by_key.get(r.key)
        if lh is None:
            out.append(r)
            continue
        if lh.status is Status.OK and lh.observed_s <= 0 and not lh.reasons:
            # unmeasured, not healthy: no counter time for it in the window (one reading only)
            out.append(replace(r, reasons=(lh.pending,) if lh.pending else ()))
            continue
        out.append(
            LinkRow(
                r.index,
                r.key,
                r.a_guid,
                r.b_guid,
                r.a_name,
                r.a_port,
                r.b_name,
                r.b_port,
                r.tiers,
                r.rail,
                r.group,
                r.width,
                r.speed,
                lh.status,
                lh.score,
                lh.ber.value,
                lh.flaps_per_hour,
                lh.reasons,
                r.search,
            )
        )
    return tuple(out)


def link_row(index: int, lk: Link, d: Discovery) -> LinkRow:
    cls = d.classification.nodes
    ca, cb = cls[lk.a.guid], cls[lk.b.guid]
    # The lower tier first: an operator reads a cable from the host up.
    lo, hi, lo_ref, hi_ref = (
        (ca, cb, lk.a, lk.b) if (ca.tier or 0) <= (cb.tier or 0) else (cb, ca, lk.b, lk.a)
    )
    tiers = f"{tier_word(lo.tier_name)}-{tier_word(hi.tier_name)}"
    rail = lo.rail if lo.rail is not None else hi.rail
    group = lo.group if lo.group is not None else hi.group
    search = " ".join(
        x
        for x in (
            lo.name,
            hi.name,
            tiers,
            lo.host or "",
            f"rail{rail}" if rail is not None else "",
            f"group{group}" if group is not None else "",
        )
        if x
    ).lower()
    return LinkRow(
        index,
        lk.key,
        lo_ref.guid,
        hi_ref.guid,
        lo.name,
        lo_ref.port,
        hi.name,
        hi_ref.port,
        tiers,
        rail,
        group,
        lk.width,
        lk.speed,
        search=search,
    )


def tier_word(tier_name: str) -> str:
    """A tier name as one word for a tier pair and the filter box: ``side leaf`` -> ``side_leaf``."""
    return tier_name.replace(" ", "_")


def worst_first(r: LinkRow) -> tuple[int, int]:
    return (status_order(r.status), r.score if r.score is not None else 101)
