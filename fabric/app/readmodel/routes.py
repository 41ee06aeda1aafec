"""The TUI's routes: the forwarding tables stored with the topology on screen, judged, and each
cable's share of the hosts' all-to-all routes.

Judging is ``ibfab routes check --snapshot ID``'s (:func:`fabric.app.routes.check_routes_of`),
with the cables health flags taken from the health on screen (the TUI's window, so the map, the
alerts and the routes tell one story) instead of a second assessment of the store. What the SM
runs is asked only where the session's driver knows a log that is there (a lab's OpenSM).

It takes seconds of numpy and Python on a 16,384-HCA fabric (3.9 s there), and in a thread of
the UI's process it held the GIL so that keypresses waited 1.6-2.6 s. So it runs in a child
process (:mod:`fabric.app.readmodel.routes_process`, as health does), once per what a verdict
rests on (the topology, the stored tables' stamp, the flagged and the isolated cables, the SM's
log): :meth:`RoutesCache.judge` (from a worker thread: it waits for the child) keeps the verdict
and the UI reads it without waiting (:meth:`RoutesCache.known`). What crosses the process
boundary is :class:`JudgedRoutes`: the report's records without the walk behind them (which
holds the whole fabric). The words are :mod:`fabric.present.routes_tui`'s.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from fabric.app.health.window import HealthWindow
from fabric.app.readmodel.views import FabricView
from fabric.app.routes.check import FLAGGED, RoutesCheck, isolated_cables
from fabric.app.session import Session, StoreAccess
from fabric.app.source import SourceKind
from topology.anomaly import Severity
from topology.credit_loops import CreditLoops
from topology.errors import IbfabError
from topology.model import Guid, LinkKey
from topology.route_balance import ChannelLoad, DirectionBalance
from topology.route_engine import EngineLook
from topology.route_findings import RouteFinding

ERROR_LEVEL = (Severity.CRITICAL, Severity.ERROR)  # a route finding at these is an alert


@dataclass(frozen=True, slots=True)
class WayLoad:
    """The hosts' all-to-all routes one way over a cable: out of ``switch`` port ``port``."""

    switch: Guid
    port: int
    direction: str  # "leaf -> spine", as the balance table groups it
    routes: int
    mean: float  # the mean routes per cable of its direction (and rail) group

    @property
    def load(self) -> float:
        """Routes over the group's mean: 1.0 is an average cable of its tier and direction."""
        return self.routes / self.mean if self.mean > 0 else 0.0


@dataclass(frozen=True, slots=True)
class CableLoad:
    """A switch-to-switch cable's share of the routes, each way it carries them."""

    ways: tuple[WayLoad, ...]

    @property
    def hottest(self) -> WayLoad:
        return max(self.ways, key=lambda w: (w.load, w.routes))

    @property
    def load(self) -> float:
        return self.hottest.load


@dataclass(frozen=True, eq=False)
class RouteLoads:
    """The hosts' all-to-all routes on every switch-to-switch cable each way (a channel per way)
    as arrays: a few hundred KB across the process boundary where objects were 100,000 (0.4 s of
    the UI's GIL to unpickle on a 16,384-HCA fabric)."""

    cables: tuple[LinkKey, ...]
    switches: tuple[Guid, ...]
    direction_names: tuple[str, ...]
    cable: np.ndarray[Any, Any]  # per channel: index into cables
    switch: np.ndarray[Any, Any]  # per channel: the switch it leaves (index into switches)
    port: np.ndarray[Any, Any]  # ... out of this port
    direction: np.ndarray[Any, Any]  # index into direction_names
    routes: np.ndarray[Any, Any]
    mean: np.ndarray[Any, Any]  # the mean routes per cable of its direction (and rail) group

    def way(self, i: int) -> WayLoad:
        return WayLoad(
            self.switches[int(self.switch[i])],
            int(self.port[i]),
            self.direction_names[int(self.direction[i])],
            int(self.routes[i]),
            float(self.mean[i]),
        )


class RowLoads:
    """:class:`RouteLoads` by the view's cable rows (LinkRow.index): the hottest way's load of
    each for the map, a cable's ways for its description."""

    def __init__(self, loads: RouteLoads, view: FabricView) -> None:
        self.loads = loads
        row_of = np.array([view.row_of.get(k, -1) for k in loads.cables], np.int64)
        rows = row_of[loads.cable] if len(loads.cable) else np.zeros(0, np.int64)
        load = np.divide(loads.routes, loads.mean, out=np.zeros(len(rows)), where=loads.mean > 0)
        self.hottest = np.full(len(view.links), -1.0)
        keep = rows >= 0
        np.maximum.at(self.hottest, rows[keep], load[keep])
        self._order = np.argsort(rows, kind="stable")
        self._rows = rows[self._order]

    def load_of(self, row: int) -> float | None:
        """The cable's busier way over its group's mean; None: no way of it counted (not a
        switch-to-switch cable)."""
        value = float(self.hottest[row]) if 0 <= row < len(self.hottest) else -1.0
        return None if value < 0 else value

    def cable(self, row: int) -> CableLoad | None:
        lo, hi = np.searchsorted(self._rows, row, "left"), np.searchsorted(self._rows, row, "right")
        if lo == hi:
            return None
        return CableLoad(tuple(self.loads.way(int(i)) for i in self._order[lo:hi]))


@dataclass(frozen=True)
class JudgedRoutes:
    """What the TUI shows of a judgement (:class:`fabric.app.routes.RoutesCheck`): the report's
    records without its walk, each cable's load by its key."""

    tables: str  # where the stored tables were read from (their own source)
    format: str
    summary: Mapping[str, Any]
    findings: tuple[RouteFinding, ...]
    pattern: str
    hosts: int
    directions: tuple[DirectionBalance, ...]
    hottest: tuple[ChannelLoad, ...]
    credit: CreditLoops
    engine: EngineLook
    health: str  # where the health flags came from
    isolations: int
    loads: RouteLoads


def judged_of(check: RoutesCheck) -> JudgedRoutes:
    r = check.report
    b = r.balance
    return JudgedRoutes(
        check.tables.lfts.source,
        r.format,
        dict(r.summary),
        r.findings,
        b.pattern,
        b.hosts,
        b.directions,
        b.hottest,
        r.credit,
        r.engine,
        check.health,
        check.isolations,
        cable_loads(check),
    )


def cable_loads(check: RoutesCheck) -> RouteLoads:
    """Each switch-to-switch cable's routes each way with its direction group's mean."""
    bal = check.report.balance
    bound = bal.walk.bound
    keys: dict[LinkKey, int] = {}
    cable = np.full(len(bal.src), -1, np.int64)
    for i in range(len(bal.src)):
        lk = bound.links.get((int(bal.src[i]), int(bal.port[i])))
        if lk is not None:
            cable[i] = keys.setdefault(lk.key, len(keys))
    keep = cable >= 0
    return RouteLoads(
        tuple(keys),
        tuple(bound.switches),
        bal.direction_names,
        cable[keep],
        np.asarray(bal.src)[keep].astype(np.int32),
        np.asarray(bal.port)[keep].astype(np.int16),
        np.asarray(bal.direction)[keep].astype(np.int16),
        np.asarray(bal.routes)[keep].astype(np.int64),
        np.asarray(bal.mean)[keep].astype(np.float64),
    )


@dataclass(frozen=True)
class RoutesVerdict:
    """The tables stored with topology ``topology_id``, judged; ``judged`` None: none are stored
    (or, with ``error``, they could not be read or judged)."""

    topology_id: int
    judged: JudgedRoutes | None
    loads: RowLoads | None = None  # by LinkRow index (None: no tables judged)
    names: Mapping[str, str] = field(default_factory=dict)  # GUID -> the operator's name for it
    error: str = ""
    lab: str | None = None  # the session's lab: its tables can be read and stored from here
    db: str | None = None  # the store's path when it is not the user's default one
    key: tuple[object, ...] = ()  # what the verdict rests on (RoutesCache compares it)
    warnings: tuple[str, ...] = ()  # what the store warned of while the child read it

    @property
    def findings(self) -> tuple[RouteFinding, ...]:
        return self.judged.findings if self.judged is not None else ()

    @property
    def errors(self) -> tuple[RouteFinding, ...]:
        """The error-level findings (credit loops, black holes...), worst first."""
        return tuple(f for f in self.findings if f.severity in ERROR_LEVEL)


def health_flags_on_screen(health: HealthWindow | None) -> dict[LinkKey, str]:
    """The cables the health on screen rates warn or critical, with that status."""
    if health is None:
        return {}
    return {k: lh.status.value for k, lh in health.by_key.items() if lh.status.value in FLAGGED}


class RoutesCache:
    """The last verdict, judged again only when what it rests on changed. Any thread may call
    :meth:`judge` (one judgement at a time: a second caller for the same tables waits and gets
    the first's verdict); :meth:`known` never waits; :meth:`cancel` stops a judgement running."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: RoutesVerdict | None = None
        self._job: Any = None  # the RoutesProcess running, if any
        self.closed = False

    def known(self, view: FabricView) -> RoutesVerdict | None:
        """The last verdict on ``view``'s topology (None: not judged yet)."""
        found = self._known
        return found if found is not None and found.topology_id == view.topology.id else None

    def judge(self, session: Session, view: FabricView, health: HealthWindow | None) -> RoutesVerdict:
        from fabric.app.readmodel.routes_process import RoutesJob, RoutesProcess

        flagged = health_flags_on_screen(health)
        with self._lock:
            sid = view.topology.id
            try:
                stamp, isolated = _stamp(session, sid), isolated_cables(session, view.discovery)
            except IbfabError as exc:
                return self._keep(_verdict(session, view, None, error=exc.one_line()))
            log = _sm_log(session)
            key = (sid, stamp, frozenset(flagged.items()), frozenset(isolated[0]), isolated[1], log)
            known = self._known
            if known is not None and known.key == key:
                return known
            if stamp is None:
                return self._keep(_verdict(session, view, None, key=key))
            if health is None:
                where = "no health on screen yet (no counters): no cable flagged"
            else:
                where = f"the health on screen: {len(flagged)} cable(s) flagged {' or '.join(FLAGGED)}"
            job = RoutesProcess(
                RoutesJob(str(session.store.path), sid, flagged, where, isolated, log[0] if log else None)
            )
            self._job = job
            if self.closed:
                job.cancel()
            try:
                judged = job.result()
            except IbfabError as exc:
                return self._keep(_verdict(session, view, None, error=exc.one_line(), warnings=job.warnings))
            finally:
                self._job = None
            if judged is None:  # removed between the stamp and the read
                return self._keep(_verdict(session, view, None, warnings=job.warnings))
            return self._keep(_verdict(session, view, judged, key=key, warnings=job.warnings))

    def cancel(self) -> None:
        """Stop a judgement running (the UI is closing); none starts after."""
        self.closed = True
        job = self._job
        if job is not None:
            job.cancel()

    def _keep(self, verdict: RoutesVerdict) -> RoutesVerdict:
        self._known = verdict
        return verdict


def _stamp(session: Session, sid: int) -> tuple[float, int] | None:
    stored = session.store.read()
    if stored is None:
        return None
    with stored as store:
        return store.routes_stamp(sid)


def _sm_log(session: Session) -> tuple[str, float] | None:
    """The SM's log where the driver knows one that is there (a lab's OpenSM), with its time:
    a lab that is down has none, and what the SM runs stays unknown rather than an error."""
    log = session.driver.sm_log()
    if log is None:
        return None
    try:
        return (log, Path(log).stat().st_mtime)
    except OSError:
        return None


def _verdict(
    session: Session,
    view: FabricView,
    judged: JudgedRoutes | None,
    *,
    error: str = "",
    key: tuple[object, ...] = (),
    warnings: tuple[str, ...] = (),
) -> RoutesVerdict:
    src = session.source
    lab = src.target if src.kind is SourceKind.LAB else None
    path = session.store.path
    db = None if path == StoreAccess.at().path else str(path)
    loads = None
    names: dict[str, str] = {}
    if judged is not None:
        loads = RowLoads(judged.loads, view)
        names = {g: c.name for g, c in view.discovery.classification.nodes.items()}
    return RoutesVerdict(
        view.topology.id,
        judged,
        loads,
        MappingProxyType(names),
        error,
        lab,
        db,
        key,
        warnings,
    )
