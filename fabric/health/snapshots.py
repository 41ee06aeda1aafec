"""Counter snapshots as health reads them: (snapshot id, port set, values), one per collection.

The store decodes its blocks into this form (:meth:`Store.load_counter_blocks`); a counter table
from elsewhere (Prometheus' answers) is cut into it by :func:`frame_snapshots`; a window whose
ports' samples are not in time order across snapshot ids (a collection imported after newer
ones, two collectors at once) is put in order by :func:`in_time_order`. So health has one way to
sum counters (:class:`fabric.health.columns.ColumnSums`), whatever their source.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import numpy as np
import pandas as pd

from fabric.core.fields import COUNTER_NAMES, FRAME_KEY_COLUMNS
from fabric.store.blocks import INT_COLUMNS, NULLABLE, ROW, TIME_SCALE, PortSet, Values, from_rows, to_rows
from topology.errors import UsageError

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from fabric.store.records import PortCounterRow

# The snapshot id, or (a snapshot :func:`in_time_order` regrouped) each port's own snapshot id.
SnapshotIds: TypeAlias = "int | NDArray[np.int64]"
Snapshot: TypeAlias = "tuple[int | NDArray[np.int64], PortSet, Values]"


def frame_snapshots(frame: pd.DataFrame) -> Iterator[Snapshot]:
    """The snapshots of a counter table (:data:`fabric.core.fields.FRAME_COLUMNS`), by id; a table
    missing a key column, a row without a GUID or port, or a port twice in one snapshot is a
    UsageError."""
    missing = [c for c in FRAME_KEY_COLUMNS if c not in frame.columns]
    if missing:
        raise UsageError(f"counter table is missing columns: {', '.join(missing)}")
    if frame["guid"].isna().any() or frame["port"].isna().any():
        bad = int(np.flatnonzero((frame["guid"].isna() | frame["port"].isna()).to_numpy())[0])
        raise UsageError(f"counter table row {bad} has no guid or port")
    for snapshot_id, part in frame.groupby("snapshot", sort=True):
        yield int(cast(int, snapshot_id)), *_block(part, f"counter table snapshot {snapshot_id}")


def _block(part: pd.DataFrame, where: str) -> tuple[PortSet, Values]:
    """One snapshot's rows as a port set and its values (ports in GUID, then port order)."""
    n = len(part)
    guids = part["guid"].astype(str).to_numpy(dtype=object)
    peer_column = part["peer_guid"]
    peer_known = peer_column.notna().to_numpy(dtype=bool)
    peers = peer_column.to_numpy(dtype=object)
    names = sorted(set(guids.tolist()) | {str(p) for p in peers[peer_known].tolist()})
    index = pd.Index(names, dtype=object)
    guid = np.asarray(index.get_indexer(pd.Index(guids, dtype=object)), dtype=np.int64)
    port = _ints(part, "port")[0]
    order = np.lexsort((port, guid))
    guid, port = guid[order], port[order]
    same = (guid[1:] == guid[:-1]) & (port[1:] == port[:-1])
    if same.any():
        i = int(np.flatnonzero(same)[0])
        raise UsageError(f"{where}: port {names[guid[i]]} {port[i]} appears twice")
    matrix = np.zeros((len(INT_COLUMNS), n), dtype=np.uint64)
    na = np.zeros((len(NULLABLE), n), dtype=bool)
    t = part["time"].to_numpy(dtype=np.float64)
    scaled = t * TIME_SCALE
    exact = bool(np.all(np.abs(scaled) < 2.0**62)) and bool(np.all(np.trunc(scaled) == scaled))
    matrix[ROW["time"]] = (scaled.astype(np.int64) if exact else t.view(np.int64)).view(np.uint64)
    reachable = part["reachable"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    matrix[ROW["reachable"]] = reachable.astype(np.uint64)
    peer = np.full(n, -1, dtype=np.int64)
    peer[peer_known] = index.get_indexer(pd.Index(peers[peer_known].astype(str), dtype=object))
    matrix[ROW["peer"]] = peer.view(np.uint64)
    for name in ("lid", "peer_port", *COUNTER_NAMES):
        values, known = _ints(part, name)
        matrix[ROW[name]] = np.where(known, values, 0).view(np.uint64)
        na[NULLABLE.index(name)] = ~known
    matrix, na = matrix[:, order], na[:, order]
    return PortSet(tuple(names), guid, port), Values(tuple(matrix), tuple(na), {}, exact)


def _ints(frame: pd.DataFrame, name: str) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """(values as int64, mask of known values); a missing column is all unknown."""
    if name not in frame.columns:
        return np.zeros(len(frame), dtype=np.int64), np.zeros(len(frame), dtype=bool)
    column = frame[name]
    try:
        ints = column if isinstance(column.dtype, pd.Int64Dtype) else column.astype("Int64")
    except (TypeError, ValueError) as exc:
        raise UsageError(f"counter table column {name!r} is not integer: {exc}") from exc
    known = ints.notna().to_numpy(dtype=bool)
    values = np.asarray(ints.to_numpy(dtype=np.int64, na_value=0), dtype=np.int64)
    if bool(np.any(values[known] < 0)):
        raise UsageError(f"counter table column {name!r} holds a negative value")
    return values, known


def in_time_order(snapshots: Iterable[Snapshot]) -> list[Snapshot]:
    """The same samples regrouped so that each port's readings come in time order: the k-th
    snapshot returned holds each port's k-th reading (readings with counters first, by time, ties
    in snapshot order; then the unreachable ones, which health skips), each with its own snapshot
    id. The whole window is held at once (the rare case: collections imported out of order)."""
    readings: dict[tuple[str, int], list[tuple[bool, float, int, int, PortCounterRow]]] = defaultdict(list)
    seq = 0
    for snapshot_id, ports, values in snapshots:
        ids = np.broadcast_to(np.asarray(snapshot_id, dtype=np.int64), (len(ports),)).tolist()
        for sid, row in zip(ids, to_rows(ports, values), strict=True):
            read = row.reachable and bool(row.counters)
            readings[(row.guid, row.port)].append((not read, row.time if read else 0.0, seq, sid, row))
            seq += 1
    layers: list[list[tuple[int, PortCounterRow]]] = []
    for key in sorted(readings):
        for k, (*_, sid, row) in enumerate(sorted(readings[key], key=_reading_order)):
            if k == len(layers):
                layers.append([])
            layers[k].append((sid, row))
    out: list[Snapshot] = []
    for k, layer in enumerate(layers):  # rows by (GUID, port): the order from_rows gives its ports
        ports, values = from_rows([row for _, row in layer], f"readings in time order, layer {k}")
        out.append((np.array([sid for sid, _ in layer], dtype=np.int64), ports, values))
    return out


def _reading_order(reading: tuple[bool, float, int, int, Any]) -> tuple[bool, float, int]:
    unread, time, seq = reading[0], reading[1], reading[2]
    return unread, time, seq
