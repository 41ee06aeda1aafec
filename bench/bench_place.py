"""Choose 1,024 nodes on a 64-unit rail-optimized fabric (superpod-64su, 2,048 hosts) in < 100 ms:
once with all 2,048 free, once with 1,536 scattered free (where naive placement loses).

The fabric is built outside the timed part (generate -> ibnetdiscover text -> parser -> classify).
Timed: ``host_sites`` (once per fabric, cacheable) and ``place`` itself. Printed: time, units,
leaves and spine crossings of the placement against the lower bound and against a naive
placement (the first N free hosts by name), and peak memory of the placement.
"""

from __future__ import annotations

import random
import time
import tracemalloc

from fabric.placement import evaluate, host_sites, place
from probes.inventory import host_sort_key
from topology.classify import Classification, classify
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Fabric

BUDGET_MS = 100.0
N = 1024


def main() -> int:
    t0 = time.perf_counter()
    fabric = parse_ibnetdiscover(to_ibnetdiscover(generate("superpod-64su")).splitlines(), "superpod-64su")
    cls = classify(fabric)
    print(
        f"fabric: {len(fabric.hcas())} HCAs, {len(cls.hosts)} hosts, {len(cls.groups)} units "
        f"(built in {time.perf_counter() - t0:.1f} s, not timed)"
    )
    worst = 0.0
    for label, free in (
        ("all 2,048 free", sorted(cls.hosts)),
        ("1,536 scattered free", random.Random(7).sample(sorted(cls.hosts), 1536)),
    ):
        print(f"\n== {label}")
        worst = max(worst, _scenario(fabric, cls, free))
    return 0 if worst < BUDGET_MS else 1


def _scenario(fabric: Fabric, cls: Classification, free: list[str]) -> float:
    best = best_cached = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        p = place(fabric, cls, N, free=free)  # host_sites included
        best = min(best, (time.perf_counter() - t) * 1e3)
    sites = host_sites(fabric, cls)
    for _ in range(5):
        t = time.perf_counter()
        place(fabric, cls, N, free=free, sites=sites)
        best_cached = min(best_cached, (time.perf_counter() - t) * 1e3)
    tracemalloc.start()
    place(fabric, cls, N, free=free)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    naive = evaluate(fabric, cls, sorted(free, key=host_sort_key)[:N], sites)
    spread = place(fabric, cls, N, free=free, sites=sites, policy="spread").cost
    c = p.cost
    print(
        f"place {N} of {len(free)}: {best:.1f} ms with host_sites, {best_cached:.1f} ms with sites cached"
        f" (best of 5; budget {BUDGET_MS:.0f} ms); peak {peak / 2**20:.1f} MiB"
    )
    print(f"{'':14}{'units':>7}{'leaves':>8}{'crossings':>11}")
    for name, u, lv, x in (
        ("lower bound", c.units_min, c.leaves_min, c.crossings_min),
        ("pack", c.units, c.leaves, c.crossings),
        ("naive (names)", naive.units, naive.leaves, naive.crossings),
        ("spread", spread.units, spread.leaves, spread.crossings),
    ):
        print(f"{name:14}{u:>7}{lv:>8}{x:>11}")
    return best


if __name__ == "__main__":
    raise SystemExit(main())
