"""Counter deltas between consecutive samples of each port, with resets, saturation and re-cabling.

Input is the counter table (see :mod:`fabric.core.fields`): one row per (snapshot, port).
Output is one row per port and *reachable* sample that has an earlier reachable sample of the same
port; each counter column then holds how much that counter grew since its previous reading.

Rules (all vectorised: one sort of the port keys, then numpy over whole columns):

* Unreachable samples (``reachable`` False, or every counter NA) are skipped: they give no row and
  do not break the chain; the next reachable sample diffs against the last reachable one.
* A counter that is NA in one reachable sample diffs against its own last reading, so summing a
  counter's deltas over a window still counts every increment (its delta may then span more than
  that row's ``elapsed``).
* A counter that went down was reset (``perfquery -R``, a reboot): its delta is the new value, the
  count since the reset, never negative. The row is flagged ``reset`` and the delta is a lower bound.
* A counter at its maximum (``fields.max_value``) is sticky: the delta is a lower bound ("at
  least") and ``saturated_<name>`` is True. Those flag columns exist for every counter narrower
  than 64 bits (``SATURABLE``); 64-bit counters cannot saturate within decades and cannot even be
  held by the Int64 table, so they carry no flag.
* A port whose peer (``peer_guid``/``peer_port``) or ``lid`` differs from the last known value is
  on another link: its row has ``link_changed`` True and NA counters, and it is the new baseline.
  NA link identity means unknown and is never a change by itself.

Output columns (``DELTA_COLUMNS``): guid (categorical: one copy of each GUID string), port,
snapshot, time (this sample), prev_time (the previous reachable sample), elapsed (seconds
between them), lid, peer_guid, peer_port, reset, link_changed, one Int64 column per counter,
then the ``saturated_<name>`` columns (nullable boolean, never NA).
Rows keep the order of the input table (by the later sample of each pair); reading each column
in row order is part of what makes this fast. Sort the result if you need it by port.

Health sums the same rules column-wise from the store's blocks (:mod:`fabric.health.columns`);
this table is what the TUI's counter history shows, and the oracle the tests hold health's sums
against (tests/oracles/health.py).

>>> import pandas as pd
>>> rows = [dict(snapshot=s, time=t, guid="0x01", port=1, lid=1, peer_guid="0x02", peer_port=3,
...              reachable=True, symbol_errors=v) for s, t, v in [(1, 0.0, 5), (2, 60.0, 9), (3, 120.0, 2)]]
>>> d = compute_deltas(pd.DataFrame(rows))
>>> d[["elapsed", "symbol_errors", "reset"]].values.tolist()
[[60.0, 4, False], [60.0, 2, True]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from fabric.core.fields import COUNTER_NAMES, COUNTERS, FRAME_KEY_COLUMNS, max_value
from topology.errors import UsageError

if TYPE_CHECKING:
    from numpy.typing import NDArray

SATURABLE: tuple[str, ...] = tuple(name for name in COUNTER_NAMES if COUNTERS[name][0] < 64)
DELTA_KEY_COLUMNS: tuple[str, ...] = (
    "guid",
    "port",
    "snapshot",
    "time",
    "prev_time",
    "elapsed",
    "lid",
    "peer_guid",
    "peer_port",
    "reset",
    "link_changed",
)
DELTA_COLUMNS: tuple[str, ...] = (
    DELTA_KEY_COLUMNS + COUNTER_NAMES + tuple(f"saturated_{name}" for name in SATURABLE)
)


class OutOfOrder(UsageError):
    """A port's sample fed to health's sums is earlier than the one fed before it."""


def compute_deltas(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-port counter deltas between consecutive reachable samples (rules in the module doc)."""
    missing = [c for c in FRAME_KEY_COLUMNS if c not in frame.columns]
    if missing:
        raise UsageError(f"counter table is missing columns: {', '.join(missing)}")
    if frame["guid"].isna().any() or frame["port"].isna().any():
        bad = int(np.flatnonzero((frame["guid"].isna() | frame["port"].isna()).to_numpy())[0])
        raise UsageError(f"counter table row {bad} has no guid or port")

    n = len(frame)
    values: dict[str, NDArray[np.int64]] = {}
    valid: dict[str, NDArray[np.bool_]] = {}
    any_counter = np.zeros(n, dtype=bool)
    for name in COUNTER_NAMES:
        values[name], valid[name] = _int_column(frame, name)
        any_counter |= valid[name]
    reachable = frame["reachable"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    guid_column: Any = frame["guid"]
    port = _int_column(frame, "port")[0]
    time = frame["time"].to_numpy(dtype=np.float64)
    snapshot = frame["snapshot"].to_numpy()
    idents: tuple[tuple[NDArray[Any], NDArray[np.bool_]], ...] = (
        _text_column(frame, "peer_guid"),
        _int_column(frame, "peer_port"),
        _int_column(frame, "lid"),
    )
    sample_rows = np.flatnonzero(reachable & any_counter)

    guid_codes, guid_names = pd.factorize(guid_column, sort=True)

    # One sort by (port key, time) over the usable samples. Tables come in snapshot order, so a
    # stable sort on the port key alone usually leaves each port's samples in time order already;
    # the full two-key sort (several times slower) only runs when it does not.
    sample_key = guid_codes[sample_rows].astype(np.int64) * (int(port.max(initial=0)) + 1) + port[sample_rows]
    order = np.argsort(sample_key, kind="stable")
    key = sample_key[order]
    m = key.size
    first = np.ones(m, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    sorted_time = time[sample_rows[order]]
    if bool(np.any((sorted_time[1:] < sorted_time[:-1]) & ~first[1:])):
        order = np.lexsort((time[sample_rows], sample_key))  # same key order, so `first` holds
    rows = sample_rows[order]
    group_start = np.maximum.accumulate(np.where(first, np.arange(m), 0))

    link_changed = np.zeros(m, dtype=bool)
    for ident, known in idents:
        link_changed |= _differs_from_last_known(ident[rows], known[rows], first, group_start)
    link_changed &= ~first
    # Every sample that has an earlier one of the same port, put back in input row order (an O(n)
    # scatter, no sort) so that gathering each column below walks memory forwards.
    by_port = np.flatnonzero(~first)
    wanted = np.zeros(n, dtype=bool)
    wanted[rows[by_port]] = True
    taken = np.flatnonzero(wanted)
    slot = np.empty(n, dtype=np.int64)
    slot[rows[by_port]] = by_port
    out_at = slot[taken]  # position in the per-port order of each output row
    prev_taken = rows[out_at - 1]
    continuing = ~link_changed[out_at]  # the previous sample is a valid baseline
    segment_start: NDArray[np.int64] | None = None

    reset = np.zeros(out_at.size, dtype=bool)
    no_flags = np.zeros(out_at.size, dtype=bool)
    deltas: dict[str, pd.arrays.IntegerArray] = {}
    saturated: dict[str, pd.arrays.BooleanArray] = {}
    for name in COUNTER_NAMES:
        v = values[name]
        if valid[name][sample_rows].all():
            # the usual case: every sample has this counter, so diff against the previous one
            has_prev = continuing
            cur, prev_v = v[taken], v[prev_taken]
        else:
            if segment_start is None:
                at = np.arange(m)
                segment_start = np.maximum.accumulate(np.where(first | link_changed, at, 0))
            ok = valid[name][rows]
            prev = _last_before(ok)
            has_prev = (ok & (prev >= segment_start))[out_at]
            cur, prev_v = v[taken], v[rows[np.maximum(prev[out_at], 0)]]
        delta = cur - prev_v
        went_down = has_prev & (delta < 0)
        if went_down.any():
            reset |= went_down
            delta = np.where(went_down, cur, delta)
        deltas[name] = pd.arrays.IntegerArray(delta, ~has_prev)
        if name in SATURABLE:
            top = max_value(name)
            flags = has_prev & (cur == top) if v.max(initial=0) >= top else no_flags
            saturated[name] = pd.arrays.BooleanArray(flags, no_flags.copy())

    out: dict[str, object] = {}
    out["guid"] = pd.Categorical.from_codes(guid_codes[taken], categories=guid_names)
    out["port"] = port[taken]
    out["snapshot"] = snapshot[taken]
    out["time"] = time[taken]
    out["prev_time"] = time[prev_taken]
    out["elapsed"] = time[taken] - time[prev_taken]
    out["lid"] = frame["lid"].astype("Int64").array[taken]
    out["peer_guid"] = frame["peer_guid"].array[taken]
    out["peer_port"] = frame["peer_port"].astype("Int64").array[taken]
    out["reset"] = reset
    out["link_changed"] = link_changed[out_at]
    out.update(deltas)
    out.update({f"saturated_{name}": flags for name, flags in saturated.items()})
    return pd.DataFrame(out, columns=list(DELTA_COLUMNS), copy=False)


def _int_column(frame: pd.DataFrame, name: str) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """(values as int64 with NA as -1, mask of known values); a missing column is all NA."""
    if name not in frame.columns:
        return np.full(len(frame), -1, dtype=np.int64), np.zeros(len(frame), dtype=bool)
    column = frame[name]
    try:
        ints = column if isinstance(column.dtype, pd.Int64Dtype) else column.astype("Int64")
    except (TypeError, ValueError) as exc:
        raise UsageError(f"counter table column {name!r} is not integer: {exc}") from exc
    known = ints.notna().to_numpy(dtype=bool)
    values: NDArray[np.int64] = np.asarray(ints.to_numpy(dtype=np.int64, na_value=-1), dtype=np.int64)
    return values, known


def _last_before(known: NDArray[np.bool_]) -> NDArray[np.int64]:
    """For each position, the index of the last known position strictly before it (-1 if none)."""
    last = np.maximum.accumulate(np.where(known, np.arange(known.size), -1))
    before = np.empty(known.size, dtype=np.int64)
    if known.size:
        before[0] = -1
        before[1:] = last[:-1]
    return before


def _text_column(frame: pd.DataFrame, name: str) -> tuple[NDArray[np.object_], NDArray[np.bool_]]:
    """(values as an object array, mask of known values)."""
    if name not in frame.columns:
        return np.full(len(frame), None, dtype=object), np.zeros(len(frame), dtype=bool)
    column = frame[name]
    return column.to_numpy(dtype=object), column.notna().to_numpy(dtype=bool)


def _differs_from_last_known(
    ident: NDArray[Any],
    known: NDArray[np.bool_],
    first: NDArray[np.bool_],
    group_start: NDArray[np.int64],
) -> NDArray[np.bool_]:
    """True where a known value differs from the last known value earlier in the same port."""
    if known.all():
        changed = np.zeros(ident.size, dtype=bool)
        changed[1:] = ident[1:] != ident[:-1]
        return changed & ~first
    prev = _last_before(known)
    comparable = known & (prev >= group_start)
    differs: NDArray[np.bool_] = comparable & (ident != ident[np.maximum(prev, 0)])
    return differs
