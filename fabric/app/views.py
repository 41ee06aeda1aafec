"""What the TUI and ``ibfab tui``'s report show, as records: store state, the classified fabric with
one row per cable, the overview, a node's detail, recommendations as the TUI lists them.

Statuses in rows are the health model's (:class:`fabric.health.status.Status` values) or
``NO_DATA`` when no health report covers the cable; :func:`status_order` is their one order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fabric.app.discover import TIER_NAMES, Discovery
from fabric.app.health_window import HealthWindow
from fabric.health.status import Status, status_rank
from fabric.store import CounterSnapshotInfo, ProbeSweep, TopologySummary
from fabric.store import StoredSweep as StoredSweep  # what FabricService.sweeps_of returns
from topology.classify import Role
from topology.model import Guid, Link, LinkKey
from topology.wiring import Anomaly

if TYPE_CHECKING:
    from fabric.advise.actions import Action

NO_DATA = "no data"
# Every status a row can have, worst first: the overview's counts and the TUI's sort use it.
STATUSES: tuple[str, ...] = (*(s.value for s in sorted(Status, key=lambda s: -s.rank)), NO_DATA)


def status_order(status: str) -> int:
    """Sort key, worst first: critical 0 .. ok 3, no data last."""
    return Status.CRITICAL.rank - status_rank(status, -1)


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
    a_name: str
    a_port: int
    b_name: str
    b_port: int
    tiers: str  # "hca-leaf", "leaf-spine", "spine-core"
    rail: int | None
    group: int | None
    width: int
    speed: str
    status: str = NO_DATA
    score: int | None = None
    ber: float | None = None
    flaps_per_hour: float = 0.0
    reasons: tuple[str, ...] = ()
    search: str = ""  # lower-case names, tiers, rail and group: what the filter box matches


@dataclass(frozen=True)
class FabricView:
    """The latest stored topology, classified, with one :class:`LinkRow` per cable."""

    topology: TopologySummary
    discovery: Discovery
    links: tuple[LinkRow, ...]
    row_of: Mapping[LinkKey, int] = field(default_factory=dict)

    def name(self, guid: str) -> str:
        c = self.discovery.classification.nodes.get(Guid(guid))
        return c.name if c is not None else guid

    def tier(self, guid: str) -> int | None:
        c = self.discovery.classification.nodes.get(Guid(guid))
        return c.tier if c is not None else None


@dataclass(frozen=True, slots=True)
class Overview:
    """The overview screen and the no-terminal report, as data."""

    state: StoreState
    fabric: Mapping[str, object]  # discovery summary (switch tiers, hosts, rails, groups ...)
    links_by_status: Mapping[str, int]
    worst: tuple[LinkRow, ...]
    anomalies: tuple[Anomaly, ...]  # discovery's error and critical anomalies
    has_topology: bool
    health: HealthWindow | None


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
    tier_name: str | None
    rail: int | None
    group: int | None
    ports: tuple[PortLine, ...]
    anomalies: tuple[str, ...]
    hcas: tuple[str, ...]  # for a host: its HCA GUIDs


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
        out.append(
            LinkRow(
                r.index,
                r.key,
                r.a_name,
                r.a_port,
                r.b_name,
                r.b_port,
                r.tiers,
                r.rail,
                r.group,
                r.width,
                r.speed,
                lh.status.value,
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
    lo, hi, lo_port, hi_port = (
        (ca, cb, lk.a.port, lk.b.port) if (ca.tier or 0) <= (cb.tier or 0) else (cb, ca, lk.b.port, lk.a.port)
    )
    tiers = f"{tier_label(lo.tier, lo.role)}-{tier_label(hi.tier, hi.role)}"
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
        lo.name,
        lo_port,
        hi.name,
        hi_port,
        tiers,
        rail,
        group,
        lk.width,
        lk.speed,
        search=search,
    )


def tier_label(tier: int | None, role: Role) -> str:
    if tier is None:
        return "switch" if role is Role.SWITCH else "hca"
    return TIER_NAMES.get(tier, f"tier{tier}")


def worst_first(r: LinkRow) -> tuple[int, int]:
    return (status_order(r.status), r.score if r.score is not None else 101)
