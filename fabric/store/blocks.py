"""Counter snapshots as columnar blocks: one compressed blob per snapshot, most of them deltas.

A snapshot of a 16,384-HCA fabric is 50,000 ports x 25 values. Stored one SQLite row per port
(schema version 1) it took 6.9 MiB; as a block it takes under 1 MiB (README, "The store"). How:

* The ports a snapshot read (their GUIDs, numbers, and every GUID named as a peer) are a
  :class:`PortSet`, stored once and shared by every snapshot that read the same ports.
* The values are a matrix of 22 unsigned 64-bit rows (:data:`INT_COLUMNS`) by port, in the port
  set's order (GUID, then port). A block holds each row as the difference from the same row of
  the previous snapshot of the same port set (modulo 2**64: exact for any value), zigzag-coded so
  that small changes either way are small numbers, cut to the bytes the largest one needs and
  split into byte planes (all lowest bytes, then all next bytes...), then deflated. Error
  counters that did not move cost nothing; a data counter costs the bytes of its increment.
* Every :data:`KEY_EVERY` snapshots (and whenever the port set changes or the previous block is
  unreadable) a key block holds the values themselves, so a damaged block costs at most the
  snapshots up to the next key block.
* Missing values (NULL) are a bit mask per nullable row, usually "exactly the unreachable
  ports" (one byte in the header); unreachable reasons are a small JSON map.

Times are kept exactly: as integers in units of 2**-22 s when that is exact (every epoch time of
2004-2038 as a double is), else as the double's bits.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from fabric.core.fields import COUNTER_NAMES
from topology.errors import StoreError

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from fabric.store.records import PortCounterRow

FORMAT = 1
# A key block every this many snapshots of one port set: the delta blocks in between are ~0.9 MiB
# at 50,048 ports against ~1.3 MiB for a key block, and a damaged block loses at most this many.
KEY_EVERY = 16
ZLIB_LEVEL = 1  # byte planes of increments are close to random: higher levels gain < 1 %

# The rows of a block's value matrix.
INT_COLUMNS: tuple[str, ...] = ("time", "reachable", "lid", "peer", "peer_port", *COUNTER_NAMES)
NULLABLE: tuple[str, ...] = ("lid", "peer_port", *COUNTER_NAMES)
ROW = {name: i for i, name in enumerate(INT_COLUMNS)}
_NULLABLE_ROWS = [ROW[name] for name in NULLABLE]
_FIRST_COUNTER = ROW[COUNTER_NAMES[0]]
TIME_SCALE = float(1 << 22)  # a double in [2**30, 2**31) has no bit finer than 2**-22
_NO_NA, _NA_WHERE_UNREACHABLE, _NA_MASK = 0, 1, 2
_HEAD = struct.Struct("<I")

_U1 = np.uint64(1)
_U63 = np.uint64(63)


def checksum(blob: bytes) -> int:
    """CRC-32 of a stored blob (checked on every read)."""
    return zlib.crc32(blob)


@dataclass(frozen=True, slots=True)
class PortSet:
    """The ports of a snapshot in block order (GUID, then port) and every GUID text it names."""

    names: tuple[str, ...]  # sorted; own GUIDs and peer GUIDs
    guid: NDArray[np.int64]  # index into names, per port
    port: NDArray[np.int64]
    _objects: list[Any] = field(default_factory=list, compare=False, repr=False)

    def __len__(self) -> int:
        return int(self.port.size)

    def encode(self) -> tuple[bytes, str]:
        """(zlib'd JSON, its digest): how a port set is stored and recognised."""
        text = json.dumps(
            {"names": list(self.names), "guid": self.guid.tolist(), "port": self.port.tolist()},
            separators=(",", ":"),
        ).encode("utf-8", "surrogatepass")
        return zlib.compress(text, 6), hashlib.sha256(text).hexdigest()

    @classmethod
    def decode(cls, blob: bytes) -> PortSet:
        data = json.loads(zlib.decompress(blob).decode("utf-8", "surrogatepass"))
        return cls(
            tuple(data["names"]),
            np.array(data["guid"], dtype=np.int64),
            np.array(data["port"], dtype=np.int64),
        )

    def name_objects(self) -> NDArray[np.object_]:
        """The names as an object array with None appended (index -1: no peer)."""
        if not self._objects:
            self._objects.append(np.array([*self.names, None], dtype=object))
        out: NDArray[np.object_] = self._objects[0]
        return out


@dataclass(frozen=True, slots=True)
class Values:
    """One snapshot's values in port set order."""

    rows: tuple[NDArray[np.uint64], ...]  # one per INT_COLUMNS entry, each of ports values
    missing: tuple[NDArray[np.bool_], ...]  # one per NULLABLE entry: True where NULL
    reasons: dict[int, str]  # port index -> why it was unreachable
    exact_time: bool  # time row in units of 2**-22 s (else the double's bits)

    @property
    def ports(self) -> int:
        return int(self.rows[0].size)

    def times(self) -> NDArray[np.float64]:
        row = self.rows[ROW["time"]]
        if self.exact_time:
            out: NDArray[np.float64] = row.view(np.int64).astype(np.float64) / TIME_SCALE
            return out
        return row.view(np.float64).copy()

    def row(self, name: str) -> NDArray[np.uint64]:
        return self.rows[ROW[name]]

    def signed(self, name: str) -> NDArray[np.int64]:
        return self.rows[ROW[name]].view(np.int64)

    def na(self, name: str) -> NDArray[np.bool_]:
        return self.missing[NULLABLE.index(name)]


# -- rows in -------------------------------------------------------------------------------------
def from_rows(rows: Sequence[Sequence[Any] | PortCounterRow], where: str) -> tuple[PortSet, Values]:
    """Rows (PORT_COUNTER_FIELDS tuples or PortCounterRow) as a port set and its values; a
    duplicate port or a value that is not an unsigned 64-bit integer is a StoreError."""
    from fabric.store.records import PortCounterRow

    tuples = [_tuple(r) if isinstance(r, PortCounterRow) else r for r in rows]
    n = len(tuples)
    cols: list[Sequence[Any]] = list(zip(*tuples, strict=True)) if n else [()] * (8 + len(COUNTER_NAMES))
    guids, ports_in, lids, peers, peer_ports, up, reasons_in, times = cols[:8]
    for i, g in enumerate(guids):
        if not isinstance(g, str):
            raise StoreError(f"{where}: row {i} has no GUID text ({g!r})")
    names = sorted(set(guids).union(p for p in peers if p is not None))
    index = {name: i for i, name in enumerate(names)}
    guid = np.fromiter((index[g] for g in guids), dtype=np.int64, count=n)
    port, no_port = _ints(ports_in, where, "port", guids, ports_in)
    if no_port.any():
        raise StoreError(f"{where}: {guids[int(np.flatnonzero(no_port)[0])]} has a row without a port number")
    order = np.lexsort((port, guid)) if n else np.zeros(0, dtype=np.int64)
    guid, port = guid[order], port[order]
    same = (guid[1:] == guid[:-1]) & (port[1:] == port[:-1])
    if same.any():
        i = int(np.flatnonzero(same)[0])
        raise StoreError(f"{where}: port {names[guid[i]]} {port[i]} appears twice in one snapshot")

    matrix = np.zeros((len(INT_COLUMNS), n), dtype=np.uint64)
    missing = np.zeros((len(NULLABLE), n), dtype=bool)
    t = np.array(times, dtype=np.float64)
    scaled = t * TIME_SCALE
    exact = bool(np.all(np.abs(scaled) < 2.0**62)) and bool(np.all(np.trunc(scaled) == scaled))
    matrix[ROW["time"]] = (scaled.astype(np.int64) if exact else t.view(np.int64)).view(np.uint64)
    matrix[ROW["reachable"]] = np.fromiter((bool(u) for u in up), dtype=np.uint64, count=n)
    peer = np.fromiter((-1 if p is None else index[p] for p in peers), dtype=np.int64, count=n)
    matrix[ROW["peer"]] = peer.view(np.uint64)
    for name, column in (("lid", lids), ("peer_port", peer_ports)):
        values, na = _ints(column, where, name, guids, ports_in)
        matrix[ROW[name]] = values.view(np.uint64)
        missing[NULLABLE.index(name)] = na
    for k, name in enumerate(COUNTER_NAMES):
        values_u, na = _counter(cols[8 + k], where, name, guids, ports_in)
        matrix[_FIRST_COUNTER + k] = values_u
        missing[NULLABLE.index(name)] = na
    matrix = matrix[:, order]
    missing = missing[:, order]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    reasons = {int(rank[i]): str(r) for i, r in enumerate(reasons_in) if r is not None}
    return PortSet(tuple(names), guid, port), Values(tuple(matrix), tuple(missing), reasons, exact)


def _tuple(row: PortCounterRow) -> tuple[Any, ...]:
    values = row.counters
    return (
        row.guid,
        row.port,
        row.lid,
        row.peer_guid,
        row.peer_port,
        row.reachable,
        row.unreachable_reason,
        row.time,
        *[values.get(name) for name in COUNTER_NAMES],
    )


def _ints(
    column: Sequence[Any], where: str, name: str, guids: Sequence[str], ports: Sequence[Any]
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    na = np.fromiter((v is None for v in column), dtype=bool, count=len(column))
    try:
        values = np.array([0 if v is None else v for v in column], dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        i = next(i for i, v in enumerate(column) if not _is_int(v, -(1 << 63), 1 << 63))
        raise StoreError(
            f"{where}: {name} {column[i]!r} of {guids[i]} port {ports[i]} is not a 64-bit integer"
        ) from None
    return values.reshape(len(column)), na


def _counter(
    column: Sequence[Any], where: str, name: str, guids: Sequence[str], ports: Sequence[Any]
) -> tuple[NDArray[np.uint64], NDArray[np.bool_]]:
    if None in column:
        na = np.fromiter((v is None for v in column), dtype=bool, count=len(column))
        filled = [0 if v is None else v for v in column]
    else:  # every port read this counter: the usual case
        na = np.zeros(len(column), dtype=bool)
        filled = list(column)
    try:
        values = np.array(filled, dtype=np.uint64).reshape(len(column))
        ok = set(map(type, filled)) <= {int}
    except (OverflowError, TypeError, ValueError):
        ok = False
    if not ok:
        bad = next((i for i, v in enumerate(filled) if not _is_int(v, 0, 1 << 64)), None)
        if bad is not None:
            value = filled[bad]
            problem = "negative counter value" if _is_int(value, None, 0) else "not an unsigned 64-bit value"
            raise StoreError(f"{where}: {problem}: {name} = {value!r} for {guids[bad]} port {ports[bad]}")
        values = np.array([int(v) for v in filled], dtype=np.uint64).reshape(len(column))  # numpy integers
    return values, na


def _is_int(v: Any, lo: int | None, hi: int) -> bool:
    if isinstance(v, bool) or not isinstance(v, int | np.integer):
        return False
    return bool((lo is None or v >= lo) and v < hi)


# -- blocks ----------------------------------------------------------------------------------------
def encode(values: Values, base: Values | None) -> bytes:
    """The block of ``values``: deltas against ``base`` (same port set, same time unit) or a key
    block when base is None."""
    if base is not None and base.exact_time != values.exact_time:
        base = None
    payload: list[bytes] = []
    widths: list[int] = []
    for r, row in enumerate(values.rows):
        if base is not None and base.rows[r] is row:
            widths.append(0)  # the same array: decoded on top of that base, never changed
            continue
        d = row if base is None else row - base.rows[r]  # uint64: wraps, so any value comes back exact
        signed = d.view(np.int64)
        z = ((signed << 1) ^ (signed >> 63)).view(np.uint64)
        w = (int(z.max()).bit_length() + 7) // 8 if z.size else 0
        widths.append(w)
        if w:
            payload.append(np.ascontiguousarray(z.view(np.uint8).reshape(-1, 8)[:, :w].T).tobytes())
    unreachable = values.row("reachable") == 0
    kinds: list[int] = []
    for r in range(len(NULLABLE)):
        na = values.missing[r]
        if not na.any():
            kinds.append(_NO_NA)
        elif np.array_equal(na, unreachable):
            kinds.append(_NA_WHERE_UNREACHABLE)
        else:
            kinds.append(_NA_MASK)
            payload.append(np.packbits(na).tobytes())
    reasons = json.dumps({str(k): v for k, v in values.reasons.items()}).encode("utf-8", "surrogatepass")
    payload.append(reasons)
    head = json.dumps(
        {
            "format": FORMAT,
            "ports": values.ports,
            "key": base is None,
            "time": "q22" if values.exact_time else "f64",
            "widths": widths,
            "na": kinds,
            "reasons": len(reasons),
        },
        separators=(",", ":"),
    ).encode()
    return zlib.compress(_HEAD.pack(len(head)) + head + b"".join(payload), ZLIB_LEVEL)


def is_key(blob: bytes) -> bool:
    return bool(_header(zlib.decompress(blob))[0]["key"])


def decode(blob: bytes, base: Values | None) -> Values:
    """The values of a block (``base``: the decoded values of the block it was made against)."""
    data = zlib.decompress(blob)
    head, at = _header(data)
    if head.get("format") != FORMAT:
        raise ValueError(f"unknown block format {head.get('format')!r}")
    n = int(head["ports"])
    if not head["key"] and (base is None or base.ports != n):
        raise ValueError("a delta block without its base")
    widths = head["widths"]
    if len(widths) != len(INT_COLUMNS) or len(head["na"]) != len(NULLABLE):
        raise ValueError("block header does not match the columns")
    view = memoryview(data)
    rows: list[NDArray[np.uint64]] = []
    zeros: NDArray[np.uint64] | None = None
    for r, w in enumerate(widths):
        if not w:  # unchanged: the base's own array (never written to), or all zero
            if base is not None and not head["key"]:
                rows.append(base.rows[r])
            else:
                zeros = np.zeros(n, dtype=np.uint64) if zeros is None else zeros
                rows.append(zeros)
            continue
        planes = np.frombuffer(view[at : at + w * n], dtype=np.uint8).reshape(w, n)
        at += w * n
        z = planes[0].astype(np.uint64)
        for k in range(1, w):
            z |= planes[k].astype(np.uint64) << np.uint64(8 * k)
        d = (z >> _U1) ^ (np.uint64(0) - (z & _U1))
        rows.append(d if head["key"] or base is None else d + base.rows[r])
    unreachable = rows[ROW["reachable"]] == 0
    none = np.zeros(n, dtype=bool)
    missing: list[NDArray[np.bool_]] = []
    for kind in head["na"]:
        if kind == _NA_WHERE_UNREACHABLE:
            missing.append(unreachable)
        elif kind == _NA_MASK:
            size = (n + 7) // 8
            bits = np.frombuffer(view[at : at + size], dtype=np.uint8)
            missing.append(np.unpackbits(bits, count=n).astype(bool))
            at += size
        else:
            missing.append(none)
    reasons_text = bytes(view[at : at + int(head["reasons"])]).decode("utf-8", "surrogatepass")
    if at + int(head["reasons"]) != len(data):
        raise ValueError("block length does not match its header")
    reasons = {int(k): v for k, v in json.loads(reasons_text).items()}
    return Values(tuple(rows), tuple(missing), reasons, head["time"] == "q22")


def _header(data: bytes) -> tuple[dict[str, Any], int]:
    (size,) = _HEAD.unpack_from(data, 0)
    end = _HEAD.size + size
    head: dict[str, Any] = json.loads(data[_HEAD.size : end])
    return head, end


# -- plain matrices (hourly aggregates) --------------------------------------------------------------
def pack_rows(rows: Sequence[NDArray[np.uint64]]) -> bytes:
    """Rows of unsigned 64-bit values of one length, as byte planes cut to each row's width."""
    n = int(rows[0].size) if rows else 0
    widths = [(int(r.max()).bit_length() + 7) // 8 if r.size else 0 for r in rows]
    planes = [
        np.ascontiguousarray(r.view(np.uint8).reshape(-1, 8)[:, :w].T).tobytes()
        for r, w in zip(rows, widths, strict=True)
        if w
    ]
    head = json.dumps({"format": FORMAT, "ports": n, "widths": widths}, separators=(",", ":")).encode()
    return zlib.compress(_HEAD.pack(len(head)) + head + b"".join(planes), ZLIB_LEVEL)


def unpack_rows(blob: bytes) -> list[NDArray[np.uint64]]:
    data = zlib.decompress(blob)
    head, at = _header(data)
    n = int(head["ports"])
    out = []
    for w in head["widths"]:
        row = np.zeros(n, dtype=np.uint64)
        for k in range(w):
            row |= np.frombuffer(data, dtype=np.uint8, count=n, offset=at + k * n).astype(
                np.uint64
            ) << np.uint64(8 * k)
        at += w * n
        out.append(row)
    if at != len(data):
        raise ValueError("block length does not match its header")
    return out


# -- rows out --------------------------------------------------------------------------------------
def to_rows(ports: PortSet, values: Values) -> list[PortCounterRow]:
    """The stored rows with exact values, in (GUID, port) order."""
    from fabric.store.records import PortCounterRow

    names = ports.name_objects()
    guid = names[ports.guid].tolist()
    peer = names[values.signed("peer")].tolist()
    port = ports.port.tolist()
    lid = _nullable(values.signed("lid"), values.na("lid"))
    peer_port = _nullable(values.signed("peer_port"), values.na("peer_port"))
    reachable = (values.row("reachable") != 0).tolist()
    times = values.times().tolist()
    counters = [_nullable(values.row(name), values.na(name)) for name in COUNTER_NAMES]
    return [
        PortCounterRow(
            time=times[i],
            guid=guid[i],
            port=port[i],
            lid=lid[i],
            peer_guid=peer[i],
            peer_port=peer_port[i],
            reachable=reachable[i],
            unreachable_reason=values.reasons.get(i),
            counters={
                name: col[i] for name, col in zip(COUNTER_NAMES, counters, strict=True) if col[i] is not None
            },
        )
        for i in range(len(ports))
    ]


def _nullable(values: NDArray[Any], na: NDArray[np.bool_]) -> list[Any]:
    out: list[Any] = values.tolist()
    for i in np.flatnonzero(na).tolist():
        out[i] = None
    return out
