"""The lanes of stored forwarding tables: the SL2VL tables and the SM's path records given with
``ibfab routes --save`` (``--sl2vl``, ``--path-records``, or read live with ``--lanes``), kept in
``route_lanes`` beside the tables of the same topology snapshot, so that ``routes check
--snapshot``, the TUI and the exporter judge credit loops per VL as the live check did.

One blob per snapshot, as the tables are: the arrays of :class:`topology.sl2vl.Sl2Vl` and
:class:`topology.sl2vl.PathSls` (fixed little-endian types, one after the other) zlib'd with a
CRC-32, what they came from and how many rows of each as JSON beside it. Bounded: arrays over
:data:`MAX_LANE_BYTES` are refused before anything is written (a 2,048-HCA fabric's every
switch-to-switch table and 522,240 path records are 17 MB; 1.8 million records, the most a
saved ``saquery -p`` file of 1 GiB holds, 16 MB).
"""

from __future__ import annotations

import json
import zlib
from typing import TYPE_CHECKING, Any

import numpy as np

from topology.errors import StoreError

if TYPE_CHECKING:
    from topology.credit_loops_vl import Lanes

MAX_LANE_BYTES = 256 << 20  # the arrays, before compression
LANES_VERSION = 1

# (name, dtype, values per row) in the order they are written: SL2VL rows, then path records
_TABLE_COLUMNS = (("lid", "<i4", 1), ("in_port", "<i2", 1), ("out_port", "<i2", 1), ("vls", "u1", 16))
_PATH_COLUMNS = (("slid", "<i4", 1), ("dlid", "<i4", 1), ("sl", "u1", 1))


def _row_bytes(columns: tuple[tuple[str, str, int], ...]) -> int:
    return sum(np.dtype(t).itemsize * n for _, t, n in columns)


def lanes_bytes(lanes: Lanes) -> int:
    """The size of the arrays :func:`encode_lanes` writes, before compression."""
    rows = 0 if lanes.tables is None else len(lanes.tables.lid) * _row_bytes(_TABLE_COLUMNS)
    paths = 0 if lanes.paths is None else len(lanes.paths.slid) * _row_bytes(_PATH_COLUMNS)
    return rows + paths


def check_lanes_size(lanes: Lanes, where: str) -> None:
    """A StoreError (one line) when ``lanes`` are too large to store: said before anything is written."""
    size = lanes_bytes(lanes)
    if size > MAX_LANE_BYTES:
        raise StoreError(
            f"{where}: the lanes (SL2VL tables and path records) are {size >> 20} MiB as arrays, more "
            f"than the {MAX_LANE_BYTES >> 20} MiB stored with tables; store the tables without them"
        )


def encode_lanes(lanes: Lanes, where: str) -> tuple[str, bytes]:
    """(meta JSON, zlib'd arrays) of ``lanes``."""
    check_lanes_size(lanes, where)
    meta: dict[str, Any] = {"version": LANES_VERSION, "sl2vl": None, "paths": None}
    parts: list[bytes] = []
    t = lanes.tables
    if t is not None:
        meta["sl2vl"] = {
            "source": t.source,
            "format": t.format,
            "rows": len(t.lid),
            "switch_lids": sorted(t.switch_lids),
            "hca_lids": sorted(t.hca_lids),
        }
        parts += [
            np.ascontiguousarray(getattr(t, name), dtype).tobytes() for name, dtype, _ in _TABLE_COLUMNS
        ]
    p = lanes.paths
    if p is not None:
        meta["paths"] = {"source": p.source, "records": int(p.records), "rows": len(p.slid)}
        parts += [np.ascontiguousarray(getattr(p, name), dtype).tobytes() for name, dtype, _ in _PATH_COLUMNS]
    return json.dumps(meta), zlib.compress(b"".join(parts), 1)


def decode_lanes(meta_text: str, data: bytes, where: str) -> Lanes:
    """The lanes :func:`encode_lanes` wrote; ValueError, KeyError... when they do not read back."""
    from topology.credit_loops_vl import Lanes
    from topology.sl2vl import PathSls, Sl2Vl

    meta = json.loads(meta_text)
    if not isinstance(meta, dict):  # a damaged meta can still be JSON
        raise ValueError(f"lanes described by a JSON {type(meta).__name__}, not an object")
    if meta.get("version") != LANES_VERSION:
        raise ValueError(f"lanes of version {meta.get('version')!r}, not {LANES_VERSION}")
    raw = zlib.decompress(data)
    at = 0

    def take(columns: tuple[tuple[str, str, int], ...], rows: int) -> dict[str, np.ndarray[Any, Any]]:
        nonlocal at
        out = {}
        for name, dtype, width in columns:
            size = np.dtype(dtype).itemsize * rows * width
            if at + size > len(raw):
                raise ValueError(f"{name} cut short ({len(raw) - at} of {size} bytes)")
            a = np.frombuffer(raw, dtype, rows * width, at)
            # back to the parser's native types (what the per-VL check indexes with)
            native = {"<i4": np.int32, "<i2": np.int16, "u1": np.uint8}[dtype]
            out[name] = (a.reshape(rows, width) if width > 1 else a).astype(native)
            at += size
        return out

    tables = None
    if meta["sl2vl"] is not None:
        m = meta["sl2vl"]
        c = take(_TABLE_COLUMNS, int(m["rows"]))
        tables = Sl2Vl(
            str(m["source"]),
            str(m["format"]),
            c["lid"],
            c["in_port"],
            c["out_port"],
            c["vls"],
            frozenset(int(x) for x in m["switch_lids"]),
            frozenset(int(x) for x in m["hca_lids"]),
        )
    paths = None
    if meta["paths"] is not None:
        m = meta["paths"]
        c = take(_PATH_COLUMNS, int(m["rows"]))
        paths = PathSls(str(m["source"]), c["slid"], c["dlid"], c["sl"], int(m["records"]))
    if at != len(raw):
        raise ValueError(f"{len(raw) - at} bytes beyond the arrays")
    # the per-VL check indexes by VL and SL: a value out of range read back is damage, not a lane
    if tables is not None and len(tables.vls) and int(tables.vls.max()) > 15:
        raise ValueError(f"a VL of {int(tables.vls.max())} (above 15) in the SL2VL tables")
    if paths is not None and len(paths.sl) and int(paths.sl.max()) > 15:
        raise ValueError(f"an SL of {int(paths.sl.max())} (above 15) in the path records")
    return Lanes(tables, paths)
