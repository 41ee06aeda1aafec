"""The TUI's read model: store state, the classified fabric, health, details, sweeps and advice.

Nothing here parses, connects, scores or builds text: it opens the store (one :class:`Store` per
call, so any thread may call it) and hands what it reads to the use cases that own the logic
(:mod:`fabric.app.discovery.discover`, :mod:`fabric.app.health.window`, :mod:`fabric.app.sweeps.sweep`,
:mod:`fabric.app.sweeps.bandwidth`, :mod:`fabric.app.readmodel.advice`). What cannot be had right now is an
:class:`fabric.app.readmodel.views.Unavailable` saying why, never made-up data. The records it returns are
in :mod:`fabric.app.readmodel.views`; :mod:`fabric.present.overview` turns them into text.

Cheap calls (:meth:`FabricService.state`, :meth:`FabricService.latest_snapshot_id`) are a few
indexed SELECTs, so a UI can paint and poll with them; :meth:`FabricService.load_view` (topology +
classification) takes seconds on a 16,384-HCA fabric and belongs in a worker thread, and
:meth:`FabricService.health` (~20 s there) in another process (:meth:`FabricService.start_health`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from fabric.app.discovery.cables import CableDetail, CableInventory, cable_detail, stored_inventory
from fabric.app.discovery.discover import analyse, summary
from fabric.app.drains import drain as drains
from fabric.app.drains.drain import DrainPlan
from fabric.app.health.window import HEALTH_WINDOW_S, HealthProcess, HealthWindow, compute_health
from fabric.app.isolation.isolate import IsolationPlan
from fabric.app.readmodel import advice as tui_advice
from fabric.app.readmodel.advice import AdviceView
from fabric.app.readmodel.operations import Operations, PairHistory, operations, pair_histories
from fabric.app.readmodel.routes import RoutesCache, RoutesVerdict
from fabric.app.readmodel.views import (
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
from fabric.app.session import Session
from fabric.app.slurm import NodeMap, connect
from fabric.app.status.records import StatusReport
from fabric.app.sweeps import bandwidth
from fabric.app.sweeps.bandwidth import SweepBandwidth
from fabric.app.sweeps.sweep import ShownSweep, show
from fabric.health.status import Status
from fabric.store import Store, StoredSweep
from probes.slurm import Slurm
from topology.anomaly import Anomaly
from topology.chassis import board_chassis
from topology.errors import UsageError
from topology.model import Guid, PortRef


class FabricService:
    """Read-side use cases over the session's store. The session's source is the fabric sweeps
    run against (a lab) and changes are made on; its node map says which Slurm node each fabric
    host is (``--node-map``); its thresholds are the site's (``--thresholds``, as ``ibfab health``
    and ``ibfab recommend`` take them: the TUI's statuses and advice are theirs). ``slurm_env`` is
    added to the environment of the Slurm commands a drain runs (``SLURM_CONF``)."""

    def __init__(self, session: Session, *, slurm_env: Mapping[str, str] | None = None) -> None:
        self.session = session
        self.node_map = session.node_map or NodeMap()
        self.slurm_env = dict(slurm_env or {})
        self._routes = RoutesCache()

    def stored(self) -> Store | None:
        """The store to read, None when there is none yet: looking never creates one (as
        ``ibfab recommend`` and the other commands that only read)."""
        return self.session.store.read()

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
            return StoreState(str(self.session.store.path), None, 0, None, 0, None, 0)
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
        """Health (fabric.app.health.assess, nothing recorded) over the window ending at the newest counter
        snapshot, computed in this process; None when there are no snapshots or no topology."""
        return compute_health(self.session, window_s)

    def start_health(self, window_s: float = HEALTH_WINDOW_S) -> HealthProcess:
        """The same computation in a child process (``.result()`` waits, ``.cancel()`` stops it):
        what a UI calls, so its own threads keep the GIL."""
        return HealthProcess(self.session, window_s)

    def rows_with_health(self, view: FabricView, health: HealthWindow | None) -> tuple[LinkRow, ...]:
        return with_health(view.links, health)

    def overview(
        self,
        view: FabricView | None,
        health: HealthWindow | None,
        state: StoreState,
        rows: Sequence[LinkRow] | None = None,
        extra: Sequence[Alert] = (),
    ) -> Overview:
        """The overview; ``rows``: ``with_health(view.links, health)`` if the caller has it already;
        ``extra``: alerts from elsewhere (the stored routes')."""
        if rows is None or view is None or len(rows) != len(view.links):
            rows = with_health(view.links, health) if view is not None else ()
        by_status = Counter(r.status for r in rows)
        worst = tuple(sorted((r for r in rows if r.status not in ("ok", NO_DATA)), key=worst_first)[:10])
        return Overview(
            state,
            summary(view.discovery) if view is not None else {},
            {s: by_status.get(s, 0) for s in STATUSES},
            worst,
            self.alerts(view, rows, extra) if view is not None else (),
            view is not None,
            health,
        )

    def alerts(
        self, view: FabricView, rows: Sequence[LinkRow], extra: Sequence[Alert] = ()
    ) -> tuple[Alert, ...]:
        """Every discovery anomaly and every cable at watch or worse (and ``extra``: the stored
        routes' errors), worst first, then by kind."""
        out = [self._anomaly_alert(view, a) for a in view.discovery.anomalies]
        out += extra
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

    # -- routes (fabric.app.readmodel.routes) ---------------------------------------------------
    def routes(self, view: FabricView, health: HealthWindow | None) -> RoutesVerdict:
        """The tables stored with ``view``'s topology judged with the health on screen, in a child
        process; judged again only when what the verdict rests on changed (waits: a worker's call)."""
        return self._routes.judge(self.session, view, health)

    def routes_known(self, view: FabricView) -> RoutesVerdict | None:
        """The last verdict on ``view``'s topology, without waiting (None: not judged yet)."""
        return self._routes.known(view)

    def stop_routes(self) -> None:
        """Kill a judgement still running (the UI is closing); none starts after."""
        self._routes.cancel()

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

    # -- sweeps (fabric.app.sweeps.sweep, fabric.app.sweeps.bandwidth) ---------------------------------------
    def sweeps_of(self, host: str | None = None, limit: int = 20) -> list[StoredSweep]:
        """The newest ``limit`` sweeps (only their pairs involving ``host`` if given)."""
        return bandwidth.sweeps_of(self.session.store, host, limit)

    def store_name(self) -> str:
        """What the UI calls its store: the file's name, "default store" for the user's default."""
        from fabric.app.session import StoreAccess

        path = self.session.store.path
        return "default store" if path == StoreAccess.at().path else path.name

    def sweep_backend(self) -> str:
        """Where a sweep started here runs: the lab's simulated traffic, else nowhere."""
        return self.session.source.label if self.session.driver.simulated else "no --lab given"

    def sweep_unavailable(self) -> Unavailable | None:
        """Why a sweep cannot start from here (None: it can)."""
        if not self.session.driver.simulated:
            return Unavailable(
                "starting a sweep", "open the TUI with --lab NAME (ssh sweeps: ibfab sweep run)"
            )
        return None

    def show_sweep(self, sweep_id: int) -> ShownSweep:
        """A stored sweep with its suspects ranked (what ``ibfab sweep show`` reports)."""
        return show(sweep_id, self.session.store)

    def sweep_bandwidth(self, sweep_id: int | None = None) -> SweepBandwidth | None:
        """Measured share of line rate per cable in a sweep (the newest by default)."""
        return bandwidth.sweep_bandwidth(self.session.store, sweep_id)

    # -- advice and isolation (fabric.app.readmodel.advice) --------------------------------------
    def recommendations(self, view: FabricView, health: HealthWindow | None) -> list[Advice] | Unavailable:
        """``ibfab recommend`` over the stored topology and the current health report."""
        return tui_advice.recommendations(self.session, view, health)

    def advice(self, view: FabricView, health: HealthWindow | None) -> AdviceView | Unavailable:
        """The same advice, with what it holds back for want of the subnet manager (routing, AR,
        NCCL: the TUI asks the SM only on a simulated fabric) and why."""
        return tui_advice.advice_view(self.session, view, health)

    def status(self, view: FabricView, health: HealthWindow | None, now: float | None = None) -> StatusReport:
        """``ibfab status`` on the topology and health on screen: what is wrong, per cable and host,
        with every source's evidence and its action; ``now`` the clock a sweep's age is told by."""
        return tui_advice.status_view(self.session, view, health, now)

    def isolation_plan(self, view: FabricView, advice: Advice) -> IsolationPlan:
        return tui_advice.isolation_plan(self.session, view, advice)

    # -- operations: open changes, the audit log, runs (fabric.app.readmodel.operations, fabric.app.isolation.isolate) --
    def operations(self, audit_limit: int = 200, now: float | None = None) -> Operations:
        """Open isolations and drains with their age, the audit log (newest first), schedules and runs."""
        stored = self.stored()
        if stored is None:
            return Operations((), (), (), ())
        with stored as store:
            return operations(store, time.time() if now is None else now, audit_limit)

    # -- drains in Slurm (fabric.app.drains.drain, what ``ibfab drain`` runs) --------------------------
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

    def sweep_pairs(self, shown: ShownSweep) -> list[PairHistory]:
        """Each pair of a sweep once, with every attempt (re-tests) and the final verdict."""
        return pair_histories(shown)


def _lowest(view: FabricView, guids: Sequence[str]) -> str | None:
    """The node of the lowest tier (a miswired HCA before its leaf, a leaf short of uplinks before
    the spines it misses): what an anomaly is about first."""
    tiers = [(view.tier(g) if view.tier(g) is not None else 99, i, g) for i, g in enumerate(guids)]
    return min(tiers)[2] if tiers else None
