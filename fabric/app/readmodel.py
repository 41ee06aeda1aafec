"""The TUI's read model: store state, the classified fabric, health, details, sweeps and advice.

Nothing here parses, connects, scores or builds text: it opens the store (one :class:`Store` per
call, so any thread may call it) and hands what it reads to the use cases that own the logic
(:mod:`fabric.app.discover`, :mod:`fabric.app.health_window`, :mod:`fabric.app.sweep`,
:mod:`fabric.app.bandwidth`, :mod:`fabric.app.recommend`). What cannot be had right now is an
:class:`fabric.app.views.Unavailable` saying why, never made-up data. The records it returns are
in :mod:`fabric.app.views`; :mod:`fabric.present.overview` turns them into text.

Cheap calls (:meth:`FabricService.state`, :meth:`FabricService.latest_snapshot_id`) are a few
indexed SELECTs, so a UI can paint and poll with them; :meth:`FabricService.load_view` (topology +
classification) takes seconds on a 16,384-HCA fabric and belongs in a worker thread, and
:meth:`FabricService.health` (~20 s there) in another process (:meth:`FabricService.start_health`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from fabric.app import bandwidth, recommend
from fabric.app import drain as drains
from fabric.app import isolate as isolation
from fabric.app.bandwidth import SweepBandwidth
from fabric.app.cables import CableDetail, CableInventory, cable_detail, stored_inventory
from fabric.app.discover import analyse, summary
from fabric.app.drain import AppliedDrain, DrainPlan, ResumePlan
from fabric.app.health_window import HEALTH_WINDOW_S, HealthProcess, HealthWindow, compute_health
from fabric.app.isolate import AppliedChange, IsolationPlan, UndoPlan
from fabric.app.operations import Operations, PairHistory, operations, pair_histories
from fabric.app.recommend import AdviceView
from fabric.app.slurm import NodeMap, connect
from fabric.app.source import Source
from fabric.app.status.records import StatusReport
from fabric.app.sweep import ShownSweep, show
from fabric.app.views import (
    LINK_ALERT,
    LINK_HEALTH,
    NO_DATA,
    SEVERITIES,
    STATUSES,
    Advice,
    Alert,
    CounterSeries,
    FabricView,
    LinkRow,
    NodeDetail,
    Overview,
    PortLine,
    StoreState,
    Unavailable,
    link_row,
    with_health,
    worst_first,
)
from fabric.core.units import human_duration
from fabric.health.status import Status
from fabric.health.thresholds import HealthThresholds
from fabric.store import Store, StoredSweep, store_path
from probes.slurm import Slurm
from probes.sweep import SweepStep
from topology.chassis import board_chassis
from topology.errors import IbfabError, UsageError
from topology.model import Guid, PortRef
from topology.wiring import Anomaly


class FabricService:
    """Read-side use cases over one store. ``lab`` names the lab fabric sweeps run against;
    ``node_map`` says which Slurm node each fabric host is (``--node-map``), ``slurm_env`` is
    added to the environment of the Slurm commands a drain runs (``SLURM_CONF``) and
    ``thresholds`` is the site's health thresholds file (``--thresholds``, as ``ibfab health`` and
    ``ibfab recommend`` take it: the TUI's statuses and advice are theirs), read here once (a bad
    file is a UsageError before anything is shown)."""

    def __init__(
        self,
        db: str | Path | None = None,
        lab: str | None = None,
        *,
        node_map: NodeMap | None = None,
        slurm_env: Mapping[str, str] | None = None,
        thresholds: str | Path | None = None,
    ) -> None:
        self.db = Path(db) if db is not None else None
        self.thresholds_file = thresholds  # for the child process that computes health
        self.thresholds: HealthThresholds | None = None
        if thresholds is not None:
            from fabric.app.health import load_thresholds

            self.thresholds = load_thresholds(thresholds)
        self.lab = lab
        self.node_map = node_map or NodeMap()
        self.slurm_env = dict(slurm_env or {})

    def open(self) -> Store:
        """The store, created if it is not there yet: for what writes (an audited change)."""
        return Store.open(self.db)

    def stored(self) -> Store | None:
        """The store to read, None when there is none yet: looking never creates one (as
        ``ibfab recommend`` and the other commands that only read)."""
        return Store.existing(self.db)

    # -- cheap --------------------------------------------------------------------------------
    def latest_snapshot_id(self) -> tuple[int | None, int | None]:
        """(newest topology id, newest complete counter snapshot id): what a poller compares."""
        stored = self.stored()
        if stored is None:
            return (None, None)
        with stored as store:
            tops = store.list_topologies()
            snaps = store.list_counter_snapshots()
        return (tops[-1].id if tops else None, snaps[-1].id if snaps else None)

    def state(self) -> StoreState:
        stored = self.stored()
        if stored is None:
            return StoreState(str(store_path(self.db)), None, 0, None, 0, None, 0)
        with stored as store:
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
        """The latest topology, classified (None when the store has none or there is no store)."""
        found = self.stored()
        if found is None:
            return None
        with found as store:
            if not store.list_topologies():
                return None
            stored = store.load_topology("latest")
        d = analyse(stored.fabric, source=stored.summary.source)
        rows = tuple(link_row(i, lk, d) for i, lk in enumerate(stored.fabric.links))
        port_row = {end: r.index for r in rows for end in r.key}
        return FabricView(
            stored.summary,
            d,
            rows,
            MappingProxyType({r.key: r.index for r in rows}),
            MappingProxyType(port_row),
        )

    # -- health -------------------------------------------------------------------------------
    def health(self, window_s: float = HEALTH_WINDOW_S) -> HealthWindow | None:
        """Health (fabric.app.health, nothing recorded) over the window ending at the newest counter
        snapshot, computed in this process; None when there are no snapshots or no topology."""
        return compute_health(self.db, window_s, self.thresholds)

    def start_health(self, window_s: float = HEALTH_WINDOW_S) -> HealthProcess:
        """The same computation in a child process (``.result()`` waits, ``.cancel()`` stops it):
        what a UI calls, so its own threads keep the GIL."""
        return HealthProcess(self.db, window_s, self.thresholds_file)

    def rows_with_health(self, view: FabricView, health: HealthWindow | None) -> tuple[LinkRow, ...]:
        return with_health(view.links, health)

    def overview(
        self,
        view: FabricView | None,
        health: HealthWindow | None,
        state: StoreState,
        rows: Sequence[LinkRow] | None = None,
    ) -> Overview:
        """The overview; ``rows``: ``with_health(view.links, health)`` if the caller has it already."""
        if rows is None or view is None or len(rows) != len(view.links):
            rows = with_health(view.links, health) if view is not None else ()
        by_status = Counter(r.status for r in rows)
        worst = tuple(sorted((r for r in rows if r.status not in ("ok", NO_DATA)), key=worst_first)[:10])
        return Overview(
            state,
            summary(view.discovery) if view is not None else {},
            {s: by_status.get(s, 0) for s in STATUSES},
            worst,
            self.alerts(view, rows) if view is not None else (),
            view is not None,
            health,
        )

    def alerts(self, view: FabricView, rows: Sequence[LinkRow]) -> tuple[Alert, ...]:
        """Every discovery anomaly and every cable at watch or worse, worst first, then by kind."""
        out = [self._anomaly_alert(view, a) for a in view.discovery.anomalies]
        for r in rows:
            if isinstance(r.status, Status) and r.status in LINK_ALERT:
                out.append(
                    Alert(
                        LINK_ALERT[r.status],
                        LINK_HEALTH,
                        r.cable,
                        "; ".join(r.reasons) or f"score {r.score}",
                        link=r.key,
                        status=r.status,
                    )
                )
        rank = {s: i for i, s in enumerate(SEVERITIES)}
        out.sort(key=lambda a: (rank[a.severity], a.kind, a.element, a.message))
        return tuple(out)

    def _anomaly_alert(self, view: FabricView, a: Anomaly) -> Alert:
        # Both ends of one cable (a degraded link names its two ports) are one cable.
        rows = [view.port_row[(p.guid, p.port)] for p in a.ports if (p.guid, p.port) in view.port_row]
        cables = [view.links[i] for i in dict.fromkeys(rows)]
        if cables:
            element = ", ".join(r.cable for r in cables[:2]) + (" …" if len(cables) > 2 else "")
        else:
            names = [view.name(g) for g in a.nodes] or [f"{view.name(p.guid)}/{p.port}" for p in a.ports]
            element = ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
        return Alert(
            a.severity,
            a.kind,
            element,
            a.message,
            link=cables[0].key if len(cables) == 1 else None,
            guid=_lowest(view, [*a.nodes, *(p.guid for p in a.ports)]),
        )

    # -- details ------------------------------------------------------------------------------
    def node_detail(
        self,
        view: FabricView,
        guid: str,
        health: HealthWindow | None,
        rows: Sequence[LinkRow] | None = None,
    ) -> NodeDetail:
        """A node's ports and peers; ``rows``: ``with_health(view.links, health)`` if the caller
        has it already (50,000 rows are not rebuilt for one node)."""
        d, g = view.discovery, Guid(guid)
        node, c = d.fabric.nodes[g], d.classification.nodes[g]
        if rows is None or len(rows) != len(view.links):
            rows = with_health(view.links, health)
        ports = tuple(
            PortLine(port, view.name(peer.guid), peer.port, rows[view.row_of[lk.key]])
            for port, peer, lk in sorted(d.fabric.neighbours(g), key=lambda t: t[0])
        )
        cls = d.classification
        hcas = cls.hosts.get(c.host or "", ()) if c.host else ()
        sections = cls.sections
        host_role = cls.host_roles.get(c.host) if c.host else None
        role = "service leaf" if g in cls.service_leaves else c.role.value
        box = board_chassis(d.chassis).get(g)
        board = box.kind_of(g) if box is not None else None
        on = c.leaf if c.leaf is not None else g
        pods = cls.pods
        pod = next((p.index for p in pods if on in p.leaves), None) if len(pods) > 1 else None
        return NodeDetail(
            guid,
            c.name,
            node.kind.value,
            node.description,
            c.tier_name,
            sections[c.section].name if c.section < len(sections) else "compute",
            c.rail,
            c.group,
            ports,
            tuple(a.message for a in d.anomalies if g in a.nodes),
            tuple(hcas),
            c.host,
            role,
            f"{host_role.rule.value}: {host_role.reason}" if host_role is not None else "",
            (box.name or box.guid) if box is not None else None,
            board.value if board is not None else None,
            pod,
        )

    def cable_inventory(self) -> CableInventory | None:
        """The newest cable inventory kept in the store (an ibdiagnet run's), None without one."""
        stored = self.stored()
        if stored is None:
            return None
        with stored as store:
            return stored_inventory(store)

    def cable_detail(
        self, view: FabricView, guid: str, port: int, inventory: CableInventory | None = None
    ) -> CableDetail:
        """The cable at ``guid``/``port``: both ends, each end's module (vendor, part number,
        serial, length, type, temperature, per-lane power), FEC mode and node temperature.
        ``inventory`` defaults to :meth:`cable_inventory` (pass it to read the store once)."""
        inv = inventory if inventory is not None else self.cable_inventory()
        return cable_detail(view.discovery, PortRef(Guid(guid), port), inv)

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

        stored = self.stored()
        if stored is None:
            return []
        with stored as store:
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

    # -- sweeps (fabric.app.sweep, fabric.app.bandwidth) ---------------------------------------
    def sweeps_of(self, host: str | None = None, limit: int = 20) -> list[StoredSweep]:
        """The newest ``limit`` sweeps (only their pairs involving ``host`` if given)."""
        return bandwidth.sweeps_of(self.db, host, limit)

    def sweep_unavailable(self) -> Unavailable | None:
        """Why a sweep cannot start from here (None: it can)."""
        if self.lab is None:
            return Unavailable(
                "starting a sweep", "open the TUI with --lab NAME (ssh sweeps: ibfab sweep run)"
            )
        return None

    def run_sweep(self, progress: Callable[[SweepStep], None], pattern: str = "rail-pairs") -> int:
        """Plan and run a sweep on the lab (what ``ibfab sweep run --lab`` does); returns its id."""
        return bandwidth.run_sweep(self.db, self.lab, progress, pattern)

    def show_sweep(self, sweep_id: int) -> ShownSweep:
        """A stored sweep with its suspects ranked (what ``ibfab sweep show`` reports)."""
        return show(sweep_id, str(self.db) if self.db is not None else None)

    def sweep_bandwidth(self, sweep_id: int | None = None) -> SweepBandwidth | None:
        """Measured share of line rate per cable in a sweep (the newest by default)."""
        return bandwidth.sweep_bandwidth(self.db, sweep_id)

    # -- advice and isolation (fabric.app.recommend) --------------------------------------------
    def recommendations(self, view: FabricView, health: HealthWindow | None) -> list[Advice] | Unavailable:
        """``ibfab recommend`` over the stored topology and the current health report."""
        return recommend.recommendations(self.db, self.lab, view, health, self.thresholds)

    def advice(self, view: FabricView, health: HealthWindow | None) -> AdviceView | Unavailable:
        """The same advice, with what it holds back for want of the subnet manager (routing, AR,
        NCCL: the TUI asks the SM only on a lab) and why."""
        return recommend.advice_view(self.db, self.lab, view, health, self.thresholds)

    def status(self, view: FabricView, health: HealthWindow | None, now: float | None = None) -> StatusReport:
        """``ibfab status`` on the topology and health on screen: what is wrong, per cable and host,
        with every source's evidence and its action (stored routes are judged by the CLI only:
        that can take minutes on a large fabric); ``now`` the clock a sweep's age is told by."""
        from fabric.app.status import fabric_status
        from fabric.app.status.gather import GivenHealth

        given = None
        if health is not None:
            span = human_duration(health.now - health.since)
            given = GivenHealth(
                health.report, health.readings, f"the last {span} to snapshot {health.snapshot_id}"
            )
        db = None if self.db is None else str(self.db)
        if self.lab:
            try:  # the lab's SM tells whether routing is adaptive (an isolation's advice rests on it)
                return fabric_status(
                    view.discovery,
                    db=db,
                    live=Source("lab", self.lab),
                    thresholds=self.thresholds,
                    given=given,
                    judge_routes=False,
                    now=now,
                )
            except IbfabError:  # the lab is down (the store stays to be read): as without it
                pass
        return fabric_status(
            view.discovery, db=db, thresholds=self.thresholds, given=given, judge_routes=False, now=now
        )

    def isolation_plan(self, view: FabricView, advice: Advice) -> IsolationPlan:
        return recommend.isolation_plan(self.db, view, advice, self.lab)

    def apply_isolation(self, plan: IsolationPlan) -> list[AppliedChange]:
        """What ``ibfab isolate --apply --yes`` does after its plan (every port audited)."""
        return recommend.apply_isolation(self.db, self.lab, plan)

    # -- operations: open changes, the audit log, runs (fabric.app.operations, fabric.app.isolate) --
    def operations(self, audit_limit: int = 200, now: float | None = None) -> Operations:
        """Open isolations and drains with their age, the audit log (newest first), schedules and runs."""
        stored = self.stored()
        if stored is None:
            return Operations((), (), (), ())
        with stored as store:
            return operations(store, time.time() if now is None else now, audit_limit)

    def undo_plan(self, audit_id: int) -> UndoPlan:
        """What ``ibfab isolate --undo ID`` shows (it refuses an entry already undone)."""
        with self.open() as store:
            return isolation.plan_undo(store, audit_id, lab=self.lab)

    def apply_undo(self, plan: UndoPlan) -> AppliedChange:
        """What ``ibfab isolate --undo ID --apply`` does: refused inside the re-test window (the TUI
        never forces), audited either way."""
        with self.open() as store:
            return isolation.apply_undo(plan, store, lab=self.lab)

    # -- drains in Slurm (fabric.app.drain, what ``ibfab drain`` runs) --------------------------
    def slurm(self) -> Slurm:
        """A Slurm client whose controller has just answered (SlurmUnavailable otherwise)."""
        return connect(self.slurm_env)

    def drain_plan(self, advice: Advice) -> DrainPlan:
        """What ``ibfab drain recommended`` prints for this drain_node advice: the scontrol
        command and the node's state in Slurm now; changes nothing."""
        requests = drains.requests_from_actions([advice.action])
        if not requests:
            raise UsageError(f"{advice.kind} {advice.target}: not a drain")
        return drains.plan_drains(requests, self.slurm(), self.node_map)

    def apply_drains(self, plan: DrainPlan) -> list[AppliedDrain]:
        """What ``ibfab drain ... --apply --yes`` does after its plan (every node audited)."""
        slurm = self.slurm()
        with self.open() as store:
            return drains.apply_drains(plan, store, slurm)

    def resume_plan(self, audit_id: int) -> ResumePlan:
        """What ``ibfab drain undo ID`` shows (it refuses an entry already resumed, or a node
        someone else has resumed or drained again)."""
        slurm = self.slurm()
        with self.open() as store:
            return drains.plan_resume(store, audit_id, slurm)

    def apply_resume(self, plan: ResumePlan) -> AppliedDrain:
        """What ``ibfab drain undo ID --apply`` does: refused inside the re-test window or after a
        failed re-test (the TUI never forces), audited either way."""
        slurm = self.slurm()
        with self.open() as store:
            return drains.apply_resume(plan, store, slurm)

    def sweep_pairs(self, shown: ShownSweep) -> list[PairHistory]:
        """Each pair of a sweep once, with every attempt (re-tests) and the final verdict."""
        return pair_histories(shown)


def _lowest(view: FabricView, guids: Sequence[str]) -> str | None:
    """The node of the lowest tier (a miswired HCA before its leaf, a leaf short of uplinks before
    the spines it misses): what an anomaly is about first."""
    tiers = [(view.tier(g) if view.tier(g) is not None else 99, i, g) for i, g in enumerate(guids)]
    return min(tiers)[2] if tiers else None
