"""Which layout for counter snapshots: bytes per snapshot and the time to write and read one.

    .venv/bin/python bench/bench_store_layout.py [--leaves 782] [--snapshots 8]

On bench_health's synthetic fabric (782 leaves: 50,048 ports; ~1 % of ports with errors; data
counters moving by up to 10**10 a minute, started at realistic values up to 2**50), compares for
the same snapshots:

* ``rows (v1)``: the version-1 layout, one SQLite row per port with its primary key (the baseline);
* ``blocks, all key``: the columnar block of every snapshot holding the values themselves;
* ``blocks, deltas (zlib 1)``: what the store writes: changes against the previous snapshot, a
  key block every KEY_EVERY (here: the first);
* ``blocks, deltas (zlib 6)`` and ``(lzma)``: the same payload compressed harder.

Prints bytes per snapshot (mean over the snapshots after the first), encode and decode time per
snapshot, and peak memory. Target: at most 1 MiB per snapshot.
"""

from __future__ import annotations

import argparse
import lzma
import resource
import sqlite3
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_health import leaf_spine, synthetic_frame

from fabric.core.fields import COUNTER_NAMES, FRAME_COLUMNS, PORT_COUNTER_FIELDS
from fabric.store import blocks
from fabric.store.schema import BASE_SCHEMA

TARGET_MIB = 1.0
_DATA = ("xmit_data", "rcv_data", "xmit_pkts", "rcv_pkts")


def snapshot_rows(leaves: int, snapshots: int) -> list[list[tuple[object, ...]]]:
    """bench_health's table as store rows, one list per snapshot; data counters offset by a
    per-port start value below 2**50 (counters that have run for months)."""
    frame = synthetic_frame(leaf_spine(leaves), snapshots)
    ports = len(frame) // snapshots
    start = np.random.default_rng(2).integers(0, 2**50, (len(_DATA), ports))
    out = []
    for s in range(snapshots):
        part = frame.iloc[s * ports : (s + 1) * ports]
        up = part["reachable"].to_numpy(dtype=bool)
        cols = [part[c].astype(object).where(part[c].notna(), None).tolist() for c in FRAME_COLUMNS[2:8]]
        counters = []
        for name in COUNTER_NAMES:
            values = part[name].to_numpy(dtype=np.int64)
            if name in _DATA:
                values = values + start[_DATA.index(name)]
            counters.append([int(v) if u else None for v, u in zip(values.tolist(), up, strict=True)])
        guid, port, lid, peer_guid, peer_port, reachable = cols
        out.append(
            [
                (g, p, ld, pg, pp, u, None if u else "timeout", t, *values)
                for g, p, ld, pg, pp, u, t, *values in zip(
                    guid,
                    port,
                    lid,
                    peer_guid,
                    peer_port,
                    reachable,
                    part["time"].tolist(),
                    *counters,
                    strict=True,
                )
            ]
        )
    return out


def rows_bytes(snapshots: list[list[tuple[object, ...]]]) -> tuple[float, float]:
    """(bytes per snapshot, seconds per insert) of the version-1 row layout."""
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(Path(tmp) / "rows.db")
        for statement in BASE_SCHEMA:
            db.execute(statement)
        marks = ", ".join("?" * (len(PORT_COUNTER_FIELDS) + 1))
        start = db.execute("PRAGMA page_count").fetchone()[0]
        t = time.perf_counter()
        for sid, rows in enumerate(snapshots, 1):
            db.execute("INSERT INTO counter_snapshots VALUES (?, 0, 'b', NULL, 0, 'complete')", (sid,))
            db.executemany(
                f"INSERT INTO port_counters VALUES ({marks})",
                [(sid, *[v - 2**64 if isinstance(v, int) and v >= 2**63 else v for v in r]) for r in rows],
            )
            db.commit()
        took = (time.perf_counter() - t) / len(snapshots)
        pages = db.execute("PRAGMA page_count").fetchone()[0] - start
        size = pages * db.execute("PRAGMA page_size").fetchone()[0]
        db.close()
    return size / len(snapshots), took


def recompress(blob: bytes, pack: Callable[[bytes], bytes]) -> int:
    return len(pack(zlib.decompress(blob)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--leaves", type=int, default=782)
    ap.add_argument("--snapshots", type=int, default=8)
    args = ap.parse_args()
    snaps = snapshot_rows(args.leaves, args.snapshots)
    print(f"{len(snaps[0]):,} ports x {len(snaps)} snapshots")
    decoded = [blocks.from_rows(rows, "bench")[1] for rows in snaps]

    per_rows, insert_s = rows_bytes(snaps)
    figures: dict[str, list[float]] = {}
    enc: dict[str, float] = {}
    dec: dict[str, float] = {}
    for label, deltas in (("blocks, all key", False), ("blocks, deltas (zlib 1)", True)):
        sizes: list[float] = []
        t_enc, t_dec = 0.0, 0.0
        base = None
        for values in decoded:
            t = time.perf_counter()
            blob = blocks.encode(values, base if deltas else None)
            t_enc += time.perf_counter() - t
            t = time.perf_counter()
            back = blocks.decode(blob, base if deltas else None)
            t_dec += time.perf_counter() - t
            assert all(np.array_equal(a, b) for a, b in zip(back.rows, values.rows, strict=True))
            sizes.append(len(blob))
            if deltas and base is not None:
                for extra, pack in (
                    ("blocks, deltas (zlib 6)", lambda b: zlib.compress(b, 6)),
                    ("blocks, deltas (lzma)", lambda b: lzma.compress(b, preset=1)),
                ):
                    t = time.perf_counter()
                    figures.setdefault(extra, []).append(recompress(blob, pack))
                    enc[extra] = enc.get(extra, 0.0) + time.perf_counter() - t
            base = values
        figures[label] = sizes
        enc[label] = t_enc / len(decoded)
        dec[label] = t_dec / len(decoded)
    for extra in ("blocks, deltas (zlib 6)", "blocks, deltas (lzma)"):
        enc[extra] = enc[extra] / len(figures[extra])

    print(f"  {'layout':<26} {'MiB/snapshot':>12} {'vs rows':>8} {'encode s':>9} {'decode s':>9}")
    print(f"  {'rows (v1, baseline)':<26} {per_rows / 2**20:12.2f} {1.0:8.2f} {insert_s:9.3f} {'':>9}")
    order = ("blocks, all key", "blocks, deltas (zlib 1)", "blocks, deltas (zlib 6)", "blocks, deltas (lzma)")
    for label in order:
        shown = figures[label]
        later = shown[1:] if label == "blocks, deltas (zlib 1)" else shown
        mean = sum(later) / len(later) / 2**20
        shown_dec = f"{dec[label]:9.3f}" if label in dec else f"{'':>9}"
        print(f"  {label:<26} {mean:12.2f} {mean * 2**20 / per_rows:8.2f} {enc[label]:9.3f} {shown_dec}")
    key = figures["blocks, deltas (zlib 1)"][0] / 2**20
    delta = sum(figures["blocks, deltas (zlib 1)"][1:]) / (len(snaps) - 1) / 2**20
    every = blocks.KEY_EVERY
    mean = (key + (every - 1) * delta) / every
    print(
        f"  the store's mix (a key block of {key:.2f} MiB every {every}, deltas of {delta:.2f} MiB): "
        f"{mean:.2f} MiB per snapshot (target {TARGET_MIB:g} MiB: {'met' if mean <= TARGET_MIB else 'MISSED'})"
    )
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
