"""Benchmark: reading a large cable plan (``topology check --plan``): time and peak memory.

The plan is UFM's five-column form with a Speed column, hosts spelled as NodeDescriptions
(``node0000042 mlx5_3``) cabled to leaf switch ports, the way a site's host plan reads:
1,500,000 cables, about 92 MB. Each pass runs in a new process (peak memory is the child's
``ru_maxrss``), best of 3, taking turns:

* baseline: read the file and count its lines (what any reader of the plan must do);
* rows: the rows the plan parses to, held at once (each cable's ends as ``PlanEnd`` objects):
  the memory a plan of this size costs whatever the reader (its "parsed rows");
* plan: ``read_cable_plan`` (parse, fold both listings of a cable, find conflicts).

Target: the plan's peak within the rows' peak plus a bounded reader (not a multiple of the
file), under 1 GiB, and time linear in the rows.

Figures (shared 2-core machine, 2026-11-28, 1,500,000 cables, 90 MB; each with its baselines
from the same run):

| reader | plan wall | plan peak | rows pass (same run) |
|---|---|---|---|
| before: the file, its lines and its CSV rows held at once | 78.0 s | 4,653 MiB | 12.1 s, 762 MiB |
| after: a row at a time (``read_cable_plan``) | 32.6 s | 822 MiB | 18.5 s, 762 MiB |

Run: .venv/bin/python bench/bench_cableplan.py [ROWS]
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROWS = 1_500_000
REPEAT = 3


def write_plan(path: Path, rows: int) -> None:
    with path.open("w") as out:
        out.write("#StartDevice,StartPort,EndDevice,EndPort,LinkType,Speed\n")
        for i in range(rows):
            host, hca = divmod(i, 8)
            leaf, port = divmod(i, 64)
            out.write(f"node{host:07d},node{host:07d} mlx5_{hca},leaf{leaf:05d},Port {port + 1},Data,4xNDR\n")


def baseline(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for _ in fh)


def rows(path: Path) -> int:
    from topology.cableplan import PlanEnd, PlanPort, PortForm

    held = []
    with path.open() as fh:
        next(fh)
        for line in fh:
            a, ap, b, bp, _, _ = line.rstrip("\n").split(",")
            adapter = ap.split()[1]
            held.append(
                (
                    PlanEnd(a, PlanPort(PortForm.ADAPTER, None, adapter=adapter)),
                    PlanEnd(b, PlanPort(PortForm.SWITCH, int(bp.split()[1]))),
                )
            )
    return len(held)


def plan(path: Path) -> int:
    from topology.cableplan import read_cable_plan

    return len(read_cable_plan(path).cables)


PASSES = {"baseline": baseline, "rows": rows, "plan": plan}


def fresh(name: str, path: Path) -> tuple[float, float, int]:
    out = subprocess.run(
        [sys.executable, __file__, "--one", name, str(path)], check=True, capture_output=True, text=True
    )
    wall, peak, count = out.stdout.split()
    return float(wall), float(peak), int(count)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else ROWS
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.csv"
        write_plan(path, n)
        size = path.stat().st_size
        best: dict[str, tuple[float, float, int]] = {}
        for _ in range(REPEAT):
            for name in PASSES:
                wall, peak, count = fresh(name, path)
                old = best.get(name)
                best[name] = (min(wall, old[0]) if old else wall, min(peak, old[1]) if old else peak, count)
    print(f"plan: {n} cables, {size / 1e6:.0f} MB")
    for name, (wall, peak, count) in best.items():
        print(f"{name:9} wall {wall:6.2f} s   peak {peak:7.0f} MiB   ({count} rows)")


def one(name: str, path: str) -> None:
    start = time.perf_counter()
    count = PASSES[name](Path(path))
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{wall:.3f} {peak:.0f} {count}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        one(sys.argv[2], sys.argv[3])
    else:
        main()
