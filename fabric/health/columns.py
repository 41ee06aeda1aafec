"""Per-port sums straight from decoded counter snapshots: how health sums counters.

:class:`ColumnSums` gives the :class:`~fabric.health.ports.PortTable` of the counter deltas of the
snapshots fed to it, without building a counter table or a delta table. A decoded block is already
one array per column in a fixed port order, so each snapshot is a few numpy operations over
(counters x ports) matrices against one carried row per port: no text GUIDs, no factorising, no
sort. The rules are those of :mod:`fabric.counters.deltas` (unreachable samples skipped, a
counter's own last reading, resets, saturation, re-cabling starting a new baseline), applied in
snapshot order; the oracle in tests/oracles/health.py applies them to the counter table row by
row, and the tests hold the two equal.

It needs each port's usable samples in time order in the order they are fed (always so for
collections a minute apart); when they are not, :meth:`ColumnSums.add` raises
:class:`~fabric.counters.deltas.OutOfOrder` and the caller feeds
:func:`fabric.health.snapshots.in_time_order` of the window instead. Sums are exact integers.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd

from fabric.core.fields import COUNTER_NAMES, max_value
from fabric.counters.deltas import SATURABLE, OutOfOrder
from fabric.health.ports import FINDING_COUNTERS, SCORED, PortTable
from fabric.store.blocks import NULLABLE, ROW, PortSet, Values

if TYPE_CHECKING:
    from numpy.typing import NDArray

_C = len(COUNTER_NAMES)
_FIRST = ROW[COUNTER_NAMES[0]]
_NA_FIRST = NULLABLE.index(COUNTER_NAMES[0])
_CLAMP = np.uint64((1 << 63) - 1)  # the counter table's Int64 shows larger values as this
_SCORED_AT = np.array([COUNTER_NAMES.index(name) for name in SCORED])
_FINDING_AT = np.array([SCORED.index(name) for name in FINDING_COUNTERS])
_SATURABLE_SCORED = tuple(name for name in SCORED if name in SATURABLE)
_TOPS = np.array([[max_value(name)] for name in _SATURABLE_SCORED], dtype=np.int64)
_SAT_AT = np.array([SCORED.index(name) for name in _SATURABLE_SCORED])
_DOWNED, _RECOVERY = SCORED.index("link_downed"), SCORED.index("link_error_recovery")
_SYMBOL = SCORED.index("symbol_errors")
_PORT_BITS = 32
_T = TypeVar("_T", bound=np.generic)


class _Layout:
    """A port set's ports in the stream's numbering (the union of every port set seen)."""

    __slots__ = ("at", "peer", "sel")

    def __init__(self, at: NDArray[np.int64], peer: NDArray[np.int64]) -> None:
        self.at = at  # stream number of each port of the set
        self.peer = peer  # the stream's GUID number of each name of the set, then -1 (no peer)
        start = int(at[0]) if at.size else 0
        in_order = bool(np.array_equal(at, np.arange(start, start + at.size)))
        # what selects these ports in the stream's arrays: a slice when they are in order
        self.sel: slice | NDArray[np.int64] = slice(start, start + at.size) if in_order else at


class ColumnSums:
    """The per-port sums of the counter deltas of decoded snapshots, fed in id order.

    Also counts what the report gives beside the table: the first sample's time, the snapshots
    and the samples (rows) inside the window [since, now].
    """

    def __init__(self, *, since: float | None, now: float, short_s: float, long_s: float) -> None:
        self._since, self._now = since, now
        self._short_from, self._long_from = now - short_s, now - long_s
        self.first = math.inf
        self.snapshots: set[int] = set()
        self.samples = 0
        self._layouts: dict[int, _Layout] = {}  # by id() of the PortSet, which is kept below
        self._kept: list[PortSet] = []
        self._guid_number: dict[str, int] = {}
        self._guid_names: list[str] = []
        self._port_index: pd.Index[Any] = pd.Index(np.zeros(0, dtype=np.int64))
        self._keys: list[NDArray[np.int64]] = []  # guid number << 32 | port, per stream number
        self._size = 0
        # carried per port: its last usable sample, each counter's last reading since the port's
        # last re-cabling, the last known peer GUID, LID and peer port
        self._seen: NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._last_time: NDArray[np.float64] = np.zeros(0)
        self._last: NDArray[np.int64] = np.zeros((_C, 0), dtype=np.int64)
        self._last_ok: NDArray[np.bool_] = np.zeros((_C, 0), dtype=bool)
        self._ident: NDArray[np.int64] = np.zeros((3, 0), dtype=np.int64)
        self._ident_ok: NDArray[np.bool_] = np.zeros((3, 0), dtype=bool)
        # the sums, per stream number
        self._order: list[NDArray[np.int64]] = []  # stream numbers by their first delta row
        self._has_row: NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._rows: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._seconds: NDArray[np.float64] = np.zeros(0)
        self._sums: NDArray[np.int64] = np.zeros((len(SCORED), 0), dtype=np.int64)
        self._symbol_short: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._symbol_long: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._saturated: NDArray[np.bool_] = np.zeros((len(_SATURABLE_SCORED), 0), dtype=bool)
        self._reset: NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._link_changes: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._first_finding: NDArray[np.float64] = np.zeros(0)
        self._last_finding: NDArray[np.float64] = np.zeros(0)
        self._flaps: list[
            tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]
        ] = []

    def add(self, snapshot_id: int | NDArray[np.int64], ports: PortSet, values: Values) -> None:
        """Add one decoded snapshot (snapshots in id order; ``snapshot_id`` per port for a
        snapshot regrouped by :func:`~fabric.health.snapshots.in_time_order`); raises OutOfOrder
        if a port's sample is earlier than its previous one."""
        if not len(ports):
            return
        layout = self._layout(ports)
        time = values.times()
        self.first = min(self.first, float(time.min()))
        inside = time <= self._now
        if self._since is not None:
            inside &= time >= self._since
        count = int(np.count_nonzero(inside))
        if not count:
            return
        self.samples += count
        if isinstance(snapshot_id, np.ndarray):
            self.snapshots.update(np.unique(snapshot_id[inside]).tolist())
        else:
            self.snapshots.add(int(snapshot_id))

        # Whole port set wide, masked: a few ports unreachable must not cost a gather of the rest.
        rows = values.rows
        found = ~np.stack(values.missing[_NA_FIRST : _NA_FIRST + _C])  # (counters, ports)
        usable = inside & (rows[ROW["reachable"]] != 0) & found.any(axis=0)
        counts = np.stack(rows[_FIRST : _FIRST + _C])
        np.minimum(counts, _CLAMP, out=counts)
        cur: NDArray[np.int64] = counts.view(np.int64)
        peer = layout.peer[rows[ROW["peer"]].view(np.int64)]
        idents = np.stack((peer, rows[ROW["lid"]].view(np.int64), rows[ROW["peer_port"]].view(np.int64)))
        known = np.stack((peer >= 0, ~values.na("lid"), ~values.na("peer_port")))
        at = layout.at
        sel = layout.sel  # the same ports as `at`: a slice (views, no copies) when they are in order

        seen = self._seen[sel].copy()  # a view when sel is a slice, and _start writes to it
        if not seen.all():
            first = np.flatnonzero(usable & ~seen)
            if first.size:
                self._start(
                    at[first], cur[:, first], found[:, first], idents[:, first], known[:, first], time[first]
                )
        had = usable & seen
        if not had.any():
            return
        prev_time = self._last_time[sel]
        if bool(np.any(had & (time < prev_time))):  # a tie is in order: the table's sort is stable
            raise OutOfOrder("counter samples are not in time order across snapshots")
        known &= had
        ident, ident_ok = self._ident[:, sel], self._ident_ok[:, sel]
        changed: NDArray[np.bool_] = np.any(known & ident_ok & (idents != ident), axis=0)
        found &= had
        last, last_ok = self._last[:, sel], self._last_ok[:, sel]
        has_prev = found & last_ok
        if changed.any():
            has_prev &= ~changed
        delta = cur - last
        down = has_prev & (delta < 0)
        reset: NDArray[np.bool_] = np.any(down, axis=0)
        scored = delta[_SCORED_AT]
        scored_prev = has_prev[_SCORED_AT]
        if reset.any():
            scored = np.where(down[_SCORED_AT], cur[_SCORED_AT], scored)
        scored *= scored_prev
        self._sum(layout, had, time, prev_time, cur, scored, scored_prev, reset, changed)
        # carry: readings since the last re-cabling, idents last known, this sample's time
        new_ok = np.where(changed, found, last_ok | found)
        np.copyto(last, cur, where=found)
        np.copyto(ident, idents, where=known)
        ident_ok |= known
        new_time = np.where(had, time, prev_time)
        if isinstance(sel, slice):
            self._last_ok[:, sel] = new_ok
            self._last_time[sel] = new_time
        else:  # fancy indexing gave copies: put them back
            self._last_ok[:, sel], self._last[:, sel] = new_ok, last
            self._ident[:, sel], self._ident_ok[:, sel] = ident, ident_ok
            self._last_time[sel] = new_time

    def _sum(
        self,
        layout: _Layout,
        had: NDArray[np.bool_],
        time: NDArray[np.float64],
        prev_time: NDArray[np.float64],
        cur: NDArray[np.int64],
        scored: NDArray[np.int64],
        scored_prev: NDArray[np.bool_],
        reset: NDArray[np.bool_],
        changed: NDArray[np.bool_],
    ) -> None:
        """One snapshot's delta rows (the ports ``had``, in port set order) into the sums; the
        other ports' entries add nothing."""
        sel, at = layout.sel, layout.at
        fresh = had & ~self._has_row[sel]
        if fresh.any():
            self._order.append(at[fresh])
            self._has_row[at[fresh]] = True
        self._rows[sel] += had
        self._seconds[sel] += np.where(had & ~changed, time - prev_time, 0.0)
        self._sums[:, sel] += scored
        symbol = scored[_SYMBOL]
        if symbol.any():
            self._symbol_short[sel] += np.where(prev_time >= self._short_from, symbol, 0)
            self._symbol_long[sel] += np.where(prev_time >= self._long_from, symbol, 0)
        saturated = scored_prev[_SAT_AT] & (cur[_SCORED_AT[_SAT_AT]] == _TOPS)
        if saturated.any():
            self._saturated[:, sel] |= saturated
        if reset.any():
            self._reset[sel] |= reset
        if changed.any():
            self._link_changes[sel] += changed
        finding = np.flatnonzero((scored[_FINDING_AT] > 0).any(axis=0))
        if finding.size:
            where = at[finding]
            self._first_finding[where] = np.fmin(self._first_finding[where], time[finding])
            self._last_finding[where] = np.fmax(self._last_finding[where], time[finding])
        flap = np.flatnonzero((scored[_DOWNED] > 0) | (scored[_RECOVERY] > 0))
        if flap.size:
            self._flaps.append((at[flap], prev_time[flap], time[flap], scored[[_DOWNED, _RECOVERY]][:, flap]))

    def _start(
        self,
        at: NDArray[np.int64],
        cur: NDArray[np.int64],
        found: NDArray[np.bool_],
        idents: NDArray[np.int64],
        known: NDArray[np.bool_],
        time: NDArray[np.float64],
    ) -> None:
        """Ports' first usable samples: the baseline, no delta row."""
        self._seen[at] = True
        self._last_time[at] = time
        self._last[:, at] = np.where(found, cur, 0)
        self._last_ok[:, at] = found
        self._ident[:, at] = np.where(known, idents, 0)
        self._ident_ok[:, at] = known

    def table(self) -> PortTable:
        """The per-port sums, ports in the order of their first delta row (as the counter table's
        deltas have them: the oracle's order)."""
        order = np.concatenate(self._order) if self._order else np.zeros(0, dtype=np.int64)
        keys = np.concatenate(self._keys)[order] if self._keys else np.zeros(0, dtype=np.int64)
        names = np.asarray(self._guid_names, dtype=object)
        n = order.size
        if self._flaps:
            at = np.concatenate([f[0] for f in self._flaps])
            key = np.concatenate(self._keys)[at]
            counts = np.concatenate([f[3] for f in self._flaps], axis=1)
            flap_rows = pd.DataFrame(
                {
                    "guid": names[key >> _PORT_BITS],
                    "port": key & ((1 << _PORT_BITS) - 1),
                    "prev_time": np.concatenate([f[1] for f in self._flaps]),
                    "time": np.concatenate([f[2] for f in self._flaps]),
                    "link_downed": counts[0],
                    "link_error_recovery": counts[1],
                }
            )
        else:
            empty = np.zeros(0, dtype=np.int64)
            flap_rows = pd.DataFrame(
                {
                    "guid": np.zeros(0, dtype=object),
                    "port": empty,
                    "prev_time": np.zeros(0),
                    "time": np.zeros(0),
                    "link_downed": empty,
                    "link_error_recovery": empty,
                }
            )
        saturated = self._saturated[:, order]
        return PortTable(
            guids=names[keys >> _PORT_BITS] if n else np.zeros(0, dtype=object),
            ports=keys & ((1 << _PORT_BITS) - 1),
            samples=self._rows[order],
            seconds=self._seconds[order],
            sums={name: self._sums[k, order] for k, name in enumerate(SCORED)},
            symbol_short=self._symbol_short[order],
            symbol_long=self._symbol_long[order],
            saturated={name: saturated[k] for k, name in enumerate(_SATURABLE_SCORED) if saturated[k].any()},
            reset=self._reset[order],
            link_changes=self._link_changes[order],
            first_finding=self._first_finding[order],
            last_finding=self._last_finding[order],
            flap_rows=flap_rows,
        )

    # -- numbering ------------------------------------------------------------------------------------
    def _layout(self, ports: PortSet) -> _Layout:
        layout = self._layouts.get(id(ports))
        if layout is not None:
            return layout
        guid_of = self._guid_number
        numbers = np.empty(len(ports.names) + 1, dtype=np.int64)
        for i, name in enumerate(ports.names):
            number = guid_of.get(name)
            if number is None:
                number = guid_of[name] = len(self._guid_names)
                self._guid_names.append(name)
            numbers[i] = number
        numbers[-1] = -1
        keys = (numbers[ports.guid] << _PORT_BITS) | ports.port
        at = self._port_index.get_indexer(pd.Index(keys)) if self._size else np.full(keys.size, -1)
        new = at < 0
        if new.any():  # a port set's ports are unique (the store refuses a port twice)
            at[new] = np.arange(self._size, self._size + int(np.count_nonzero(new)))
            self._grow(keys[new])
            self._port_index = pd.Index(np.concatenate(self._keys))
        layout = _Layout(at, numbers)
        self._layouts[id(ports)] = layout
        self._kept.append(ports)  # keeps id(ports) from being reused
        return layout

    def _grow(self, keys: NDArray[np.int64]) -> None:
        k = keys.size
        self._keys.append(keys)
        self._size += k

        def more(a: NDArray[_T], fill: object = 0) -> NDArray[_T]:
            extra = np.full((*a.shape[:-1], k), fill, dtype=a.dtype)
            out: NDArray[_T] = np.concatenate((a, extra), axis=-1)
            return out

        self._seen = more(self._seen, False)
        self._last_time = more(self._last_time)
        self._last = more(self._last)
        self._last_ok = more(self._last_ok, False)
        self._ident = more(self._ident)
        self._ident_ok = more(self._ident_ok, False)
        self._has_row = more(self._has_row, False)
        self._rows = more(self._rows)
        self._seconds = more(self._seconds)
        self._sums = more(self._sums)
        self._symbol_short = more(self._symbol_short)
        self._symbol_long = more(self._symbol_long)
        self._saturated = more(self._saturated, False)
        self._reset = more(self._reset, False)
        self._link_changes = more(self._link_changes)
        self._first_finding = more(self._first_finding, np.nan)
        self._last_finding = more(self._last_finding, np.nan)
