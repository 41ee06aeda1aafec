"""The read side that the TUI and ``ibfab tui``'s report share: store state, fabric, health, details.

Nothing here parses, connects or scores: it opens the store (one :class:`Store` per call, so any
thread may call it), and hands what it reads to the services that own the logic
(:func:`fabric.app.discover.analyse`, ``fabric.app.health``, ``fabric.app.sweep``, ``fabric.advise`` /
``fabric.app.isolate``). A service that is not there is reported as :class:`Unavailable`, never
replaced by made-up data.

The jobs live in their own modules and :class:`FabricService` is their one front door:
:mod:`fabric.app.health_window` (health, also in a child process), :mod:`fabric.app.bandwidth`
(sweeps and per-cable bandwidth), :mod:`fabric.app.recommend` (recommendations, isolation and
its plan text) and :mod:`fabric.present.overview` (the overview as text).

Cheap calls (:meth:`FabricService.state`, :meth:`FabricService.latest_snapshot_id`) are a few
indexed SELECTs, so a UI can paint and poll with them; :meth:`FabricService.load_view` (topology +
classification) takes seconds on a 16,384-HCA fabric and belongs in a worker thread, and
:meth:`FabricService.health` (~20 s there) in another process (:meth:`FabricService.start_health`).
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING

from fabric.app import bandwidth as service_probes
from fabric.app import recommend as service_advice
from fabric.app.bandwidth import SweepBandwidth
from fabric.app.discover import TIER_NAMES, Discovery, analyse, summary
from fabric.app.health_window import (
    HEALTH_WINDOW_S,
    SNAPSHOT_SPREAD_S,
    HealthProcess,
    HealthView,
    LinkKey,
    compute_health,
)
from fabric.app.recommend import Advice
from fabric.present.overview import duration, link_text, overview_report, overview_sections
from fabric.store import CounterSnapshotInfo, ProbeSweep, Store, StoredSweep, TopologySummary
from probes.sweep import SweepStep
from topology.classify import Role
from topology.model import Guid, Link

if TYPE_CHECKING:
    from fabric.app.isolate import AppliedChange, IsolationPlan

NO_DATA = "no data"
STATUS_ORDER: Mapping[str, int] = MappingProxyType(
    {"critical": 0, "warn": 1, "watch": 2, "ok": 3, NO_DATA: 4}
)
__all__ = [
    "HEALTH_WINDOW_S",
    "NO_DATA",
    "SNAPSHOT_SPREAD_S",
    "STATUS_ORDER",
    "Advice",
    "CounterSeries",
    "FabricService",
    "FabricView",
    "HealthView",
    "LinkKey",
    "LinkRow",
    "NodeDetail",
    "Overview",
    "PortLine",
    "StoreState",
    "SweepBandwidth",
    "SweepStep",
    "Unavailable",
    "optional_service",
    "overview_report",
    "overview_sections",
    "with_health",
]


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A feature whose service has not landed (or failed to import): say so, show nothing made up."""

    feature: str
    reason: str

    def __str__(self) -> str:
        return f"{self.feature}: not available yet ({self.reason})"


def optional_service(module: str, feature: str, *needed: str) -> ModuleType | Unavailable:
    """Import ``module`` if it exists and has the attributes ``needed``; else an :class:`Unavailable`."""
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        return Unavailable(feature, f"{module} is not installed: {exc}")
    missing = [name for name in needed if not hasattr(mod, name)]
    if missing:
        return Unavailable(feature, f"{module} has no {', '.join(missing)} yet")
    return mod


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
    alerts: tuple[str, ...]
    health_note: str


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


class FabricService:
    """Read-side use cases over one store. ``lab`` names the lab fabric sweeps run against."""

    def __init__(self, db: str | Path | None = None, lab: str | None = None) -> None:
        self.db = Path(db) if db is not None else None
        self.lab = lab

    def open(self) -> Store:
        return Store.open(self.db)

    # -- cheap --------------------------------------------------------------------------------
    def latest_snapshot_id(self) -> tuple[int | None, int | None]:
        """(newest topology id, newest complete counter snapshot id): what a poller compares."""
        with self.open() as store:
            tops = store.list_topologies()
            snaps = store.list_counter_snapshots()
        return (tops[-1].id if tops else None, snaps[-1].id if snaps else None)

    def state(self) -> StoreState:
        with self.open() as store:
            tops = store.list_topologies()
            snaps = store.list_counter_snapshots()
            sweeps = store.list_sweeps()
        return StoreState(
            str(store.path),
            tops[-1] if tops else None,
            len(tops),
            snaps[-1] if snaps else None,
            len(snaps),
            sweeps[-1] if sweeps else None,
            len(sweeps),
        )

    # -- topology -----------------------------------------------------------------------------
    def load_view(self) -> FabricView | None:
        """The latest topology, classified (None when the store has none)."""
        with self.open() as store:
            if not store.list_topologies():
                return None
            stored = store.load_topology("latest")
        d = analyse(stored.fabric, source=stored.summary.source)
        rows = tuple(_link_row(i, lk, d) for i, lk in enumerate(stored.fabric.links))
        return FabricView(stored.summary, d, rows, MappingProxyType({r.key: r.index for r in rows}))

    # -- health -------------------------------------------------------------------------------
    def health(self, window_s: float = HEALTH_WINDOW_S) -> HealthView | None:
        """Health (fabric.app.health, nothing recorded) over the window ending at the newest counter
        snapshot, computed in this process; None when there are no snapshots or no topology."""
        return compute_health(self.db, window_s)

    def start_health(self, window_s: float = HEALTH_WINDOW_S) -> HealthProcess:
        """The same computation in a child process (``.result()`` waits, ``.cancel()`` stops it):
        what a UI calls, so its own threads keep the GIL."""
        return HealthProcess(self.db, window_s)

    def rows_with_health(self, view: FabricView, health: HealthView | None) -> tuple[LinkRow, ...]:
        return with_health(view.links, health)

    def overview(
        self,
        view: FabricView | None,
        health: HealthView | None,
        state: StoreState,
        rows: Sequence[LinkRow] | None = None,
    ) -> Overview:
        """The overview; ``rows``: ``with_health(view.links, health)`` if the caller has it already."""
        if rows is None or view is None or len(rows) != len(view.links):
            rows = with_health(view.links, health) if view is not None else ()
        by_status = Counter(r.status for r in rows)
        worst = tuple(sorted((r for r in rows if r.status not in ("ok", NO_DATA)), key=_worst_first)[:10])
        alerts: list[str] = []
        if view is not None:
            alerts += [
                f"CRITICAL link {link_text(r)}: {'; '.join(r.reasons) or 'score ' + str(r.score)}"
                for r in worst
                if r.status == "critical"
            ]
            alerts += [
                f"{a.severity.value.upper()} {a.kind}: {a.message}"
                for a in view.discovery.anomalies
                if a.severity.value in ("error", "critical")
            ]
        note = (
            "no topology stored yet (run: ibfab discover --save)"
            if view is None
            else "no counter snapshots yet (run: ibfab counters collect)"
            if health is None
            else f"health over {duration(health.now - health.since)} ending at snapshot {health.snapshot_id}"
        )
        return Overview(
            state,
            summary(view.discovery) if view is not None else {},
            {s: by_status.get(s, 0) for s in STATUS_ORDER},
            worst,
            tuple(alerts),
            note,
        )

    # -- details ------------------------------------------------------------------------------
    def node_detail(self, view: FabricView, guid: str, health: HealthView | None) -> NodeDetail:
        d, g = view.discovery, Guid(guid)
        node, c = d.fabric.nodes[g], d.classification.nodes[g]
        rows = with_health(view.links, health)
        ports = tuple(
            PortLine(port, view.name(peer.guid), peer.port, rows[view.row_of[lk.key]])
            for port, peer, lk in sorted(d.fabric.neighbours(g), key=lambda t: t[0])
        )
        hcas = d.classification.hosts.get(c.host or "", ()) if c.host else ()
        return NodeDetail(
            guid,
            c.name,
            node.kind.value,
            node.description,
            TIER_NAMES.get(c.tier) if c.tier is not None else None,
            c.rail,
            c.group,
            ports,
            tuple(a.message for a in d.anomalies if g in a.nodes),
            tuple(hcas),
        )

    def find_node(self, view: FabricView, text: str) -> str | None:
        """A node GUID by GUID, operator name or host name (its first HCA), else None."""
        cls = view.discovery.classification
        if Guid(text) in cls.nodes:
            return text
        for g, c in cls.nodes.items():
            if c.name == text:
                return g
        hcas = cls.hosts.get(text)
        return hcas[0] if hcas else None

    def counter_history(
        self,
        guid: str,
        counters: Sequence[str] = ("symbol_errors", "link_downed", "xmit_data"),
        since: float | None = None,
    ) -> list[CounterSeries]:
        """Per-port deltas of ``counters`` on node ``guid`` (xmit_data as Gb/s), oldest first."""
        from fabric.counters.deltas import compute_deltas

        with self.open() as store:
            frame = store.load_counters(since=since, guids=[guid])
        if frame.empty:
            return []
        deltas = compute_deltas(frame).sort_values(["port", "time"])
        out: list[CounterSeries] = []
        for port, part in deltas.groupby("port", sort=True):
            for name in counters:
                values = part[name].astype("float64").fillna(0.0)
                if name == "xmit_data":  # 4-byte words -> Gb/s over each interval
                    values = values * 32.0 / part["elapsed"].clip(lower=1e-9) / 1e9
                out.append(CounterSeries(int(str(port)), name, tuple(float(v) for v in values)))
        return out

    # -- sweeps (fabric.app.bandwidth) --------------------------------------------------------
    def sweeps_of(self, host: str | None = None, limit: int = 20) -> list[StoredSweep]:
        """The newest ``limit`` sweeps (only their pairs involving ``host`` if given)."""
        return service_probes.sweeps_of(self.db, host, limit)

    def sweep_service(self) -> ModuleType | Unavailable:
        """fabric.app.sweep when a sweep can start from here; else why not."""
        svc = optional_service("fabric.app.sweep", "probe sweeps", "prepare", "run_lab", "save", "show")
        if not isinstance(svc, Unavailable) and self.lab is None:
            return Unavailable(
                "starting a sweep", "open the TUI with --lab NAME (ssh sweeps: ibfab sweep run)"
            )
        return svc

    def run_sweep(self, progress: Callable[[SweepStep], None], pattern: str = "rail-pairs") -> int:
        """Plan and run a sweep on the lab (what ``ibfab sweep run --lab`` does); returns its id."""
        return service_probes.run_sweep(self.db, self.lab, progress, pattern)

    def sweep_report(self, sweep_id: int) -> str:
        """Slow and failed pairs and the ranked suspect links of a stored sweep (``ibfab sweep show``)."""
        return service_probes.sweep_report(self.db, sweep_id)

    def sweep_bandwidth(self, sweep_id: int | None = None) -> SweepBandwidth | None:
        """Measured share of line rate per cable in a sweep (the newest by default)."""
        return service_probes.sweep_bandwidth(self.db, sweep_id)

    # -- advice and isolation (fabric.app.recommend) --------------------------------------------
    def recommendations(self, view: FabricView, health: HealthView | None) -> list[Advice] | Unavailable:
        """``ibfab recommend`` over the stored topology and the current health report."""
        return service_advice.recommendations(self.db, self.lab, view, health)

    def isolation_plan(self, view: FabricView, advice: Advice) -> IsolationPlan:
        return service_advice.isolation_plan(self.db, view, advice)

    def apply_isolation(self, plan: IsolationPlan) -> list[AppliedChange]:
        """What ``ibfab isolate --apply --yes`` does after its plan (every port audited)."""
        return service_advice.apply_isolation(self.db, self.lab, plan)


def with_health(rows: Sequence[LinkRow], health: HealthView | None) -> tuple[LinkRow, ...]:
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


# -- helpers ------------------------------------------------------------------------------------
def _link_row(index: int, lk: Link, d: Discovery) -> LinkRow:
    cls = d.classification.nodes
    ca, cb = cls[lk.a.guid], cls[lk.b.guid]
    # The lower tier first: an operator reads a cable from the host up.
    lo, hi, lo_port, hi_port = (
        (ca, cb, lk.a.port, lk.b.port) if (ca.tier or 0) <= (cb.tier or 0) else (cb, ca, lk.b.port, lk.a.port)
    )
    tiers = f"{_tier(lo.tier, lo.role)}-{_tier(hi.tier, hi.role)}"
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


def _tier(tier: int | None, role: Role) -> str:
    if tier is None:
        return "switch" if role is Role.SWITCH else "hca"
    return TIER_NAMES.get(tier, f"tier{tier}")


def _worst_first(r: LinkRow) -> tuple[int, int]:
    return (STATUS_ORDER[r.status], r.score if r.score is not None else 101)
