"""Plan a rail-pairs sweep on a 2,048-node x 8-rail SuperPOD (superpod-64su, 16,384 HCAs).

The fabric comes from the generator as real ibnetdiscover text, parsed and classified first (timed
apart); the target is the planning itself: under 1 s, with rounds within 1 of the lower bound and
every leaf-spine cable possibly crossed. Prints time, rounds, bound, coverage and peak memory.
"""

from __future__ import annotations

import resource
import sys
import time

from probes.plan import plan_sweep
from topology.classify import classify
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover

BUDGET_SECONDS = 1.0


def main() -> int:
    t0 = time.perf_counter()
    text = to_ibnetdiscover(generate("superpod-64su"))
    fabric = parse_ibnetdiscover(text.splitlines(), "superpod-64su")
    cls = classify(fabric)
    prep = time.perf_counter() - t0
    hosts = len(cls.hosts)
    best = float("inf")
    plan = None
    for _ in range(3):
        t1 = time.perf_counter()
        plan = plan_sweep(fabric, cls, "rail-pairs")
        best = min(best, time.perf_counter() - t1)
    assert plan is not None
    per_host = plan_sweep(fabric, cls, "rail-pairs", per_host=True)
    cov = plan.coverage
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"fabric: {hosts} hosts, {len(fabric.hcas())} HCAs, {len(fabric.links)} links (generate+parse+classify {prep:.2f} s)"
    )
    print(f"rail-pairs plan: {best:.3f} s (best of 3), {len(plan.probes)} probes")
    print(f"rounds {plan.rounds}, lower bound {plan.lower_bound} ({plan.bound_reason})")
    print(f"per-host rounds {per_host.rounds}, lower bound {per_host.lower_bound}")
    print(
        f"leaf-spine cables possibly crossed {cov.cables_covered}/{cov.cables_total}, rails {len(cov.rails_covered)}/{len(cov.rails_total)}"
    )
    print(f"peak memory {peak_mib:.0f} MiB (ru_maxrss)")
    ok = (
        best < BUDGET_SECONDS
        and plan.rounds <= plan.lower_bound + 1
        and per_host.rounds <= per_host.lower_bound + 1
        and cov.cables_covered == cov.cables_total
    )
    if not ok:
        print("FAILED: over budget, too many rounds, or cables left uncrossed", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
