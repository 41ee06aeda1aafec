"""The routes of chosen HCA pairs, from tables bound as arrays (:func:`topology.route_walk.bind`). Pure.

:func:`topology.route_walk.walk` follows every destination from every switch; a sweep plan (and
what localizes its suspects) needs only the routes of its probe pairs, hop by hop, as the cables
they cross. :class:`PairRoutes` follows those over the same bound tables (``table[s, d]``, the
far end of each switch port): all the pairs' routes a hop at a time as arrays, a switch-to-LID
suffix walked once however many pairs share it (a switch forwards by destination only).

A route that cannot be followed is a :class:`topology.routes.RouteError` naming the switch and
the LID: no table for a switch, no entry (a black hole), a port without a cable, a switch taking
the LID for itself, delivery to another node, or a loop (named at the switch it comes back to).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from topology.lft import NO_ROUTE, Lfts
from topology.model import Fabric, Guid, Link
from topology.route_walk import Bound, bind
from topology.routes import RouteError

Array = np.ndarray[Any, Any]
Route = tuple[Link, ...]
# forwarding tables in either form: arrays (what is read from a dump), or ``{switch: {LID: port}}``
RouteTables = Lfts | Mapping[Guid, Mapping[int, int]]
_MAX_HOPS = 64  # a route of more switch hops than this is taken for a loop
_BLOCK = 1 << 18  # (switch, destination) routes walked at once

# why a suffix stops (besides arriving)
_GOING, _ARRIVED, _NO_TABLE, _NO_ENTRY, _SELF, _NO_CABLE, _OTHER_NODE, _LOOP = range(8)


@dataclass(frozen=True, slots=True)
class _Start:
    """A pair whose route goes through the tables: the source's cable, then (its switch, the
    destination's column, the destination HCA)."""

    first: Link
    key: tuple[int, int, int]


def bind_tables(fabric: Fabric, tables: RouteTables) -> Bound:
    """:func:`topology.route_walk.bind` of tables in either form (``{switch: {LID: port}}`` is
    laid into arrays first)."""
    lfts = tables if isinstance(tables, Lfts) else Lfts.from_mapping(tables)
    return bind(fabric, lfts)


class PairRoutes:
    """The routes between HCA pairs over bound tables; every pair answered and every suffix
    walked is kept, so asking again for more pairs (a plan growing a layer at a time) walks only
    what is new."""

    def __init__(self, bound: Bound) -> None:
        self.bound = bound
        self.fabric = bound.fabric
        S = bound.nswitches
        self._hca = {g: i for i, g in enumerate(bound.hcas)}
        self._cable = np.empty(S * 256, dtype=object)  # (switch, port) -> its cable, None
        self._cabled = np.zeros(S * 256, bool)
        for (s, port), lk in bound.links.items():
            self._cable[s * 256 + port] = lk
            self._cabled[s * 256 + port] = True
        # (switch, destination column, destination HCA) -> the rest of the route from the switch
        self._suffix: dict[tuple[int, int, int], Route | RouteError] = {}
        self._done: dict[tuple[Guid, Guid], Route | RouteError] = {}  # every pair answered
        self._firsts: dict[Guid, tuple[Link, Guid] | None] = {}  # an HCA -> its cable, far end
        self._columns: dict[Guid, tuple[int | None, int | None]] = {}  # an HCA -> (column, index)

    def __call__(self, pairs: Iterable[tuple[Guid, Guid]]) -> dict[tuple[Guid, Guid], Route | RouteError]:
        """Each pair's cables in order from the source HCA to the destination HCA, or its
        RouteError."""
        out: dict[tuple[Guid, Guid], Route | RouteError] = {}
        starts: dict[tuple[Guid, Guid], tuple[Link, tuple[int, int, int]]] = {}
        done = self._done
        for key in pairs:
            got = done.get(key)
            if got is not None:
                out[key] = got
                continue
            if key in starts:
                continue
            first = self._start(*key)
            if isinstance(first, _Start):
                starts[key] = (first.first, first.key)
            else:
                out[key] = done[key] = first
        new = {k for _, k in starts.values() if k not in self._suffix}
        ordered = sorted(new)
        for i in range(0, len(ordered), _BLOCK):  # a block at a time: memory of a block's hops
            self._walk(ordered[i : i + _BLOCK])
        suffix = self._suffix
        for key, (link, k) in starts.items():
            tail = suffix[k]
            out[key] = done[key] = tail if isinstance(tail, RouteError) else (link, *tail)
        return out

    def route(self, src: Guid, dst: Guid) -> Route:
        """The cables from HCA ``src`` to HCA ``dst`` in order; RouteError when the tables do not
        get there."""
        got = self([(src, dst)])[(src, dst)]
        if isinstance(got, RouteError):
            raise got
        return got

    def _name(self, guid: Guid) -> str:
        node = self.fabric.nodes.get(guid)
        return f"{node.description} ({guid})" if node is not None else guid

    def _start(self, src: Guid, dst: Guid) -> _Start | Route | RouteError:
        """(the source's cable, its switch, the destination's column) of a pair that goes
        through the tables; else its whole answer (no switch between, or an error)."""
        fabric = self.fabric
        for g in (src, dst):
            if g not in fabric.nodes:
                return RouteError(f"no node {g} in the fabric")
        lid = fabric.nodes[dst].lid
        if lid is None:
            return RouteError(f"{self._name(dst)} has no LID: cannot route to it")
        if src == dst:
            return ()
        if src in self._firsts:
            first = self._firsts[src]
        else:
            cabled = fabric.neighbours(src)
            first = self._firsts[src] = (cabled[0][2], cabled[0][1].guid) if cabled else None
        if first is None:
            return RouteError(f"{self._name(src)} has no cable")
        link, far = first
        if far == dst:
            return (link,)
        s = self.bound.index.get(far)
        if s is None:
            return RouteError(f"LID {lid} delivered to {self._name(far)}, not to {self._name(dst)}")
        key = self._columns.get(dst)
        if key is None:
            key = self._columns[dst] = (self.bound.lid_column(lid), self._hca.get(dst))
        d, h = key
        if d is None or h is None:  # a LID the bound tables have no column for
            return RouteError(f"switch {self._name(far)} has no route to LID {lid} (black hole)")
        return _Start(link, (s, d, h))

    def _walk(self, keys: list[tuple[int, int, int]]) -> None:
        """Follow the routes from switch ``s`` to column ``d`` (for HCA ``h``) of every key
        ``(s, d, h)`` a hop at a time."""
        b = self.bound
        K = len(keys)
        start = np.fromiter((k[0] for k in keys), np.int64, K)
        col = np.fromiter((k[1] for k in keys), np.int64, K)
        dst_hca = np.fromiter((k[2] for k in keys), np.int64, K)
        here = start.copy()
        state = np.full(K, _GOING, np.int8)
        at = np.full(K, -1, np.int64)  # the switch (or, for _OTHER_NODE, the flat port) it stops at
        trace: list[Array] = []  # per hop: switch * 256 + port, -1 once stopped
        visited: list[Array] = []  # per hop: the switch the route was at
        for step in range(_MAX_HOPS + 2):
            going = np.flatnonzero(state == _GOING)
            if not len(going):
                break
            s = here[going]
            seen = np.zeros(len(going), bool)
            for v in visited:
                seen |= v[going] == s
            if step > _MAX_HOPS:
                seen[:] = True
            port = b.table[s, col[going]].astype(np.int64)
            flat = s * 256 + port  # the table is uint8: port 255 (no route) is a column too
            cabled = self._cabled[flat]
            far_s = b.far_switch.ravel()[flat]
            far_h = b.far_hca.ravel()[flat]
            why = np.full(len(going), _GOING, np.int8)
            # the order the checks are made in at a switch, the first that holds names the fault
            why[far_s < 0] = _OTHER_NODE
            why[(far_h >= 0) & (far_h == dst_hca[going])] = _ARRIVED
            why[~cabled] = _NO_CABLE
            why[port == 0] = _SELF
            why[port == NO_ROUTE] = _NO_ENTRY
            why[~b.has_table[s]] = _NO_TABLE
            why[seen] = _LOOP
            moving = (why == _GOING) | (why == _ARRIVED) | (why == _OTHER_NODE)
            row = np.full(K, -1, np.int64)
            row[going[moving]] = flat[moving]
            trace.append(row)
            mark = np.full(K, -1, np.int64)
            mark[going] = s
            visited.append(mark)
            state[going] = why
            at[going] = np.where(why == _OTHER_NODE, flat, s)
            here[going[why == _GOING]] = far_s[why == _GOING]
        self._store(keys, state, at, np.stack(trace, axis=1) if trace else np.zeros((K, 0), np.int64))

    def _store(self, keys: list[tuple[int, int, int]], state: Array, at: Array, trace: Array) -> None:
        fine = np.flatnonzero(state == _ARRIVED)
        length = (trace[fine] >= 0).sum(axis=1)
        for n in np.unique(length).tolist():
            rows = fine[length == n]
            cables = self._cable[trace[rows, :n]].tolist()
            for i, got in zip(rows.tolist(), cables, strict=True):
                self._suffix[keys[i]] = tuple(got)
        for i in np.flatnonzero(state != _ARRIVED).tolist():
            self._suffix[keys[i]] = self._error(int(state[i]), int(at[i]), keys[i])

    def _error(self, why: int, at: int, key: tuple[int, int, int]) -> RouteError:
        b = self.bound
        _, d, h = key
        lid = int(b.dest_lids[d])
        if why == _OTHER_NODE:
            s = at // 256
            far = self._cable[at].other(b.switches[s]).guid
            dst = b.hcas[h]
            return RouteError(f"LID {lid} delivered to {self._name(far)}, not to {self._name(dst)}")
        name = self._name(b.switches[at])
        if why == _LOOP:
            return RouteError(f"forwarding loop for LID {lid} at switch {name}")
        if why == _NO_TABLE:
            return RouteError(f"no forwarding table for switch {name}")
        if why == _NO_ENTRY:
            return RouteError(f"switch {name} has no route to LID {lid} (black hole)")
        if why == _SELF:
            return RouteError(f"switch {name} claims LID {lid} for itself")
        port = int(b.table[at, d])
        return RouteError(f"switch {name} sends LID {lid} to port {port}, which has no cable (black hole)")


def pair_routes(
    fabric: Fabric, tables: RouteTables, pairs: Iterable[tuple[Guid, Guid]]
) -> dict[tuple[Guid, Guid], Route | RouteError]:
    """The routes of ``pairs`` (source HCA, destination HCA) through ``tables``: each pair's
    cables in order, or the RouteError that stops it."""
    return PairRoutes(bind_tables(fabric, tables))(pairs)


def pair_route(fabric: Fabric, tables: RouteTables, src: Guid, dst: Guid) -> Route:
    """The cables from HCA ``src`` to HCA ``dst`` through ``tables``, in order; RouteError when
    broken (a loop, a black hole, another node)."""
    return PairRoutes(bind_tables(fabric, tables)).route(src, dst)
