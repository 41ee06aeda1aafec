"""Plan sweeps *with routes* on a 16,384-HCA SuperPOD (superpod-64su) and a 1,024-HCA one (superpod-4su).

    .venv/bin/python bench/bench_plan_routes.py [--spec superpod-64su] [--pairwise superpod-4su] [--mapping]

The tables are OpenSM-minhop ones (:func:`topology.generate_routes.minhop_tables`), held as arrays
(switch x LID); the planner binds them and walks its probe pairs' routes over them
(:mod:`topology.route_pairs`). Times, best of 3: the rail-pairs plan without routes (the
baseline, same run), with routes, and the pairwise plan with routes on the smaller fabric; with
the process's peak memory (ru_maxrss, which covers generation and the tables). The issue's rule:
under 1 GiB at 16,384 HCAs. ``--mapping`` gives the planner the tables as ``{switch: {LID: port}}``
dicts instead (what versions before the array walk took: run one with ``PYTHONPATH=<its checkout>``
for its figures).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

from probes.plan import SweepPlan, plan_sweep
from topology.classify import classify
from topology.generate import generate, to_ibnetdiscover
from topology.generate_routes import minhop_tables
from topology.ibnetdiscover import parse_ibnetdiscover

LIMIT_MIB = 1024


def best_of(n: int, run: Callable[[], SweepPlan]) -> tuple[float, SweepPlan]:
    best, plan = float("inf"), None
    for _ in range(n):
        t = time.perf_counter()
        plan = run()
        best = min(best, time.perf_counter() - t)
    assert plan is not None
    return best, plan


def fabric_and_tables(spec: str, mapping: bool) -> tuple[Any, Any, Any, str, float]:
    t0 = time.perf_counter()
    fabric = parse_ibnetdiscover(to_ibnetdiscover(generate(spec)).splitlines(), spec)
    cls = classify(fabric)
    lfts = minhop_tables(fabric)
    shape = f"{lfts.ports.shape[0]} switches x {lfts.ports.shape[1]} LIDs"
    return fabric, cls, lfts.to_mapping() if mapping else lfts, shape, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--spec", default="superpod-64su")
    ap.add_argument("--pairwise", default="superpod-4su")
    ap.add_argument("--mapping", action="store_true", help="tables as {switch: {LID: port}} dicts")
    args = ap.parse_args()
    fabric, cls, tables, shape, prep = fabric_and_tables(args.spec, args.mapping)
    form = "dicts" if args.mapping else "arrays"
    print(f"{args.spec}: {len(fabric.hcas())} HCAs, tables {shape} as {form} (prepared in {prep:.1f} s)")
    base, _ = best_of(3, lambda: plan_sweep(fabric, cls, "rail-pairs"))
    routed, plan = best_of(3, lambda: plan_sweep(fabric, cls, "rail-pairs", tables))
    cov = plan.coverage
    print(f"  rail-pairs, no routes (baseline) {base:6.2f} s")
    print(
        f"  rail-pairs, with routes          {routed:6.2f} s: {len(plan.probes)} probes, {plan.rounds} rounds, "
        f"cables crossed {cov.cables_covered}/{cov.cables_total}, unroutable {len(cov.unroutable)}"
    )
    fabric, cls, tables, shape, prep = fabric_and_tables(args.pairwise, args.mapping)
    took, plan = best_of(3, lambda: plan_sweep(fabric, cls, "pairwise", tables))
    print(f"{args.pairwise}: {len(fabric.hcas())} HCAs, tables {shape} (prepared in {prep:.1f} s)")
    print(
        f"  pairwise, with routes            {took:6.2f} s: {len(plan.probes)} probes, {plan.rounds} rounds"
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory {peak:.0f} MiB (ru_maxrss; limit {LIMIT_MIB} MiB)")
    return 0 if peak < LIMIT_MIB else 1


if __name__ == "__main__":
    sys.exit(main())
