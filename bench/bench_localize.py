"""Benchmark: how often a sweep points at the one planted cable, and how quiet it is when clean.

For each lab fabric shape (brought up once for its discovery and OpenSM's routes, then taken
down) and each sweep pattern, ``--faults`` random single faults on cables the plan crosses (1x
or 2x width, one speed lower, or a port dropping 10-90 % of what arrives: tests/localize_faults)
are swept on the lab-simulated backend, and the clean fabric once. Printed per shape/pattern
and in all:

* **top-1**: the planted cable is the first suspect and alone (target 95 %+ of the faults the
  sweep sees, i.e. that slow at least one pair); *tie*: it is in a tie no follow-up could split;
  *unseen*: no pair was slow (the pattern's own contention hides a cable that is not the
  bottleneck: discovery and ``ibfab health`` still flag a cable below its peers);
* **suspects on clean fabrics** (target 0) and wrong suspects beside the planted one;
* the **baseline in the same run**: the judgement before issue 14 on the same first-pass
  measurements: slow = under 93 % of the best pair of the sweep, links ranked by slow / all
  crossing pairs, the first counted right when it is the planted cable and scores above the
  second; clean fabrics counted by the links it would list (any link a slow pair crosses);
* wall time and peak memory (ru_maxrss) of this process, baseline memory before the first lab.

    .venv/bin/python bench/bench_localize.py [--faults 40] [--seed 14] [--shapes rail-small,...]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from probes.pairs import PairResult
from tests.localize_faults import Fault, Shape, random_fault, shape, sweep, verdict
from topology.model import Guid, Link

SHAPES = ("rail-small", "fattree-small", "rail-3tier", "superpod-1su")
PATTERNS = ("rail-pairs", "pairwise", "leaf-pairs")
TARGET_TOP1 = 0.95


def _mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def baseline_rank(
    results: Sequence[PairResult], paths: dict[tuple[Guid, Guid], Sequence[Link]]
) -> list[tuple[float, Link]]:
    """The judgement before issue 14 (see the module docstring), on the first pass only."""
    first = [r for r in results if r.attempt == 0]
    best = max((r.gbps for r in first if r.gbps is not None), default=0.0)
    slow: dict[Link, int] = defaultdict(int)
    total: dict[Link, int] = defaultdict(int)
    for r in first:
        bad = r.gbps is None or r.gbps < 0.93 * best
        for lk in paths.get(r.key, ()):
            total[lk] += 1
            slow[lk] += bad
    ranked = [(slow[lk] / total[lk], lk) for lk in total if slow[lk]]
    return sorted(ranked, key=lambda x: (-x[0], x[1].key))


def _baseline_top1(ranked: list[tuple[float, Link]], fault: Fault) -> bool:
    if not ranked or ranked[0][1].key != fault.link.key:
        return False
    return len(ranked) == 1 or ranked[1][0] < ranked[0][0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--faults", type=int, default=40, help="random faults per shape and pattern")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    base_mib = _mib()
    labs = tempfile.mkdtemp(prefix="ibfab-bench-localize-")
    os.environ["IBFAB_LAB_DIR"] = labs  # each lab is down again once its routes are read
    try:
        return _run(args.faults, args.shapes.split(","), rng, base_mib)
    finally:
        shutil.rmtree(labs, ignore_errors=True)


def _run(faults: int, shapes: Sequence[str], rng: random.Random, base_mib: float) -> int:
    start = time.perf_counter()
    totals: Counter[str] = Counter()
    print(
        f"{'shape':<14}{'pattern':<11}{'faults':>7}{'seen':>6}{'top-1':>7}{'tie':>5}{'miss':>6}"
        f"{'wrong':>7}{'clean':>7}{'base top-1':>11}{'base clean':>11}{'s':>6}"
    )
    for spec in shapes:
        s: Shape = shape(spec, "bench-localize")
        for pattern in PATTERNS:
            t0 = time.perf_counter()
            clean = sweep(s, pattern, None)
            base_clean = len(baseline_rank(clean.results, dict(clean.paths)))
            c: Counter[str] = Counter()
            for _ in range(faults):
                fault = random_fault(rng, s, pattern)
                o = sweep(s, pattern, fault)
                c["faults"] += 1
                if all(r.ok for r in o.results):  # no pair was ever slow: the fault is hidden
                    c["unseen"] += 1
                    c["wrong"] += len(o.suspects)
                    continue
                c["seen"] += 1
                if _baseline_top1(baseline_rank(o.results, dict(o.paths)), fault):
                    c["base_top1"] += 1
                v = verdict(o, fault)
                c[v] += 1
                c["wrong"] += sum(
                    1 for x in o.suspects if x.link.key != fault.link.key and x.group != o.suspects[0].group
                )
            c["clean"] = len(clean.suspects)
            c["base_clean"] = base_clean
            totals.update(c)
            print(
                f"{spec:<14}{pattern:<11}{c['faults']:>7}{c['seen']:>6}{c['top1']:>7}{c['tie']:>5}{c['miss']:>6}"
                f"{c['wrong']:>7}{c['clean']:>7}{c['base_top1']:>11}{base_clean:>11}{time.perf_counter() - t0:>6.1f}"
            )
    seen = max(1, totals["seen"])
    top1 = totals["top1"] / seen
    base = totals["base_top1"] / seen
    print()
    print(f"faults {totals['faults']}, seen by the sweep {totals['seen']}, unseen {totals['unseen']}")
    print(
        f"top-1 {top1:.1%} of the faults seen (target {TARGET_TOP1:.0%}); in a tie no probe split "
        f"{totals['tie'] / seen:.1%}; missed {totals['miss'] / seen:.1%}; wrong suspects {totals['wrong']}"
    )
    print(f"suspects on clean fabrics: {totals['clean']} (target 0)")
    print(
        f"baseline (93% of the best pair, slow/all ranking): top-1 {base:.1%} of the same faults, "
        f"{totals['base_clean']} links listed on clean fabrics"
    )
    print(
        f"wall {time.perf_counter() - start:.1f} s; memory baseline {base_mib:.0f} MiB, peak {_mib():.0f} MiB (ru_maxrss)"
    )
    ok = top1 >= TARGET_TOP1 and totals["clean"] == 0 and totals["wrong"] == 0
    if not ok:
        print("FAILED: top-1 under target, or suspects on clean fabrics, or wrong suspects", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
