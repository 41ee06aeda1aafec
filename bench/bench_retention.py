"""Retention at 16,384-HCA scale: what a month of 5-minute collections weighs, and how long
compaction holds the store's write lock.

    .venv/bin/python bench/bench_retention.py [--leaves 782] [--hours 3] [--keep DIR]

Builds a store of bench_health's synthetic fabric (782 leaves: 50,048 ports; data counters moving
by up to 10**10 per interval from realistic start values) with a snapshot every 5 minutes for
``--hours`` hours, each with a raw ibqueryerrors text of the fabric's size (bench_store_ingest's
generator: ~9 MB), then:

* compacts with raw snapshots kept 1 h (the hours before become hourly points): seconds per hour
  compacted, i.e. the longest a collector waits for the write lock;
* ``ibfab store info``'s projection for 30 days at this rate under the default policy (7 days of
  raw snapshots, 90 of hourly points, 1 of raw tool output), beside the baseline: the version-1
  row layout keeping everything (its bytes per snapshot measured on one snapshot in this run).

Target (issue 19): the 30-day projection fits in a few GB. Peak memory is printed.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_health
from bench_store_ingest import fabric_nodes, ibqueryerrors_text
from bench_store_layout import snapshot_rows

from fabric.store import RawCapture, Retention, Store

EVERY_S = 300.0
TARGET_GB = 5.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--leaves", type=int, default=782)
    ap.add_argument("--hours", type=int, default=3)
    ap.add_argument("--keep", metavar="DIR", help="build the store here and keep it")
    args = ap.parse_args()
    bench_health.EVERY_S = EVERY_S  # the synthetic table's interval: 5 minutes
    n = args.hours * 12 + 1
    t = time.perf_counter()
    snaps = snapshot_rows(args.leaves, n)
    hcas = args.leaves * bench_health.HCAS_PER_LEAF
    text = ibqueryerrors_text(fabric_nodes(hcas), random.Random(1))
    print(f"{len(snaps[0]):,} ports x {n} snapshots every 5 min; raw text {len(text) / 1e6:.1f} MB each")
    where = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ibfab-bench-retention-"))
    where.mkdir(parents=True, exist_ok=True)
    db = where / "retention.db"
    db.unlink(missing_ok=True)
    now = bench_health.T0 + (n - 1) * EVERY_S + 1
    try:
        with Store.open(db) as store:
            for s, rows in enumerate(snaps):
                taken = bench_health.T0 + s * EVERY_S
                raw = RawCapture(
                    "counters", "ibqueryerrors", text, taken, "bench", ("ibqueryerrors",), "bench"
                )
                store.save_counter_snapshot(taken, "bench", None, rows, [raw])
        print(f"built in {time.perf_counter() - t:.0f} s: {db.stat().st_size / 2**20:.0f} MiB")
        with Store.open(db) as store:
            t = time.perf_counter()
            longest = 0.0
            hours = 0
            while True:  # one hour per call: the time each holds the write lock
                h0 = time.perf_counter()
                step = store.compact(Retention(raw_s=3600.0), now=now, budget_s=0.0)
                if step.hours:
                    longest = max(longest, time.perf_counter() - h0)
                    hours += step.hours
                if step.done:
                    break
            took = time.perf_counter() - t
            info = store.info(now=now, horizon_s=30 * 86400.0)
        print(
            f"compaction: {hours} hours into hourly points in {took:.2f} s; the longest hour held the "
            f"write lock {longest:.2f} s"
        )
        print(
            f"rate: {info.snapshots_per_day:.0f} snapshots a day; a raw snapshot {info.raw.bytes / info.raw.count / 2**20:.2f} MiB"
            f" + raw output {(info.bytes_per_snapshot - info.raw.bytes / info.raw.count) / 2**20:.2f} MiB;"
            f" an hourly point {info.hourly.bytes / max(1, info.hourly.count) / 2**20:.2f} MiB"
        )
        gb = info.projected_horizon_bytes / 1e9
        print(
            f"projected (default policy): {gb:.1f} GB after 30 days, "
            f"{info.projected_steady_bytes / 1e9:.1f} GB once every span is full "
            f"(target a few GB, {TARGET_GB:g}: {'met' if gb <= TARGET_GB else 'MISSED'})"
        )
        frame = bench_health.synthetic_frame(bench_health.leaf_spine(args.leaves), 1)
        rows_per_snapshot = bench_health.row_layout_bytes(frame)
        baseline = rows_per_snapshot * info.snapshots_per_day * 30
        captures = (info.bytes_per_snapshot - info.raw.bytes / info.raw.count) * info.snapshots_per_day * 30
        print(
            f"baseline: the version-1 rows keeping everything: {baseline / 1e9:.0f} GB after 30 days "
            f"({rows_per_snapshot / 2**20:.1f} MiB a snapshot), {(baseline + captures) / 1e9:.0f} GB with the raw output"
        )
    finally:
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
