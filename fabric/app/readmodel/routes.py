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

from fabric.app.health.window import HealthWindow
from fabric.app.readmodel.route_loads import JudgedRoutes, RowLoads
from fabric.app.readmodel.views import FabricView
from fabric.app.routes.check import FLAGGED, isolated_cables
from fabric.app.session import Session, StoreAccess
from fabric.app.source import SourceKind
from topology.anomaly import Severity
from topology.errors import IbfabError
from topology.model import LinkKey
from topology.route_findings import RouteFinding

ERROR_LEVEL = (Severity.CRITICAL, Severity.ERROR)  # a route finding at these is an alert


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
