"""The TUI's judged routes as they cross from the judging child process to the UI: a
:class:`fabric.app.routes.RoutesCheck`'s records without the walk behind it (which holds the whole
fabric), and each cable's load by its key (:func:`judged_of`). Apart from
:mod:`fabric.app.readmodel.routes` (the cache) and :mod:`fabric.app.readmodel.routes_process` (the
child), which both use them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fabric.app.readmodel.views import FabricView
from fabric.app.routes.check import RoutesCheck
from topology.credit_loops import CreditLoops
from topology.model import Guid, LinkKey
from topology.route_balance import ChannelLoad, DirectionBalance
from topology.route_engine import EngineLook
from topology.route_findings import RouteFinding


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
