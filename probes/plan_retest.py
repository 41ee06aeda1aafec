"""Re-tests of a sweep's outliers, ClusterKit's way: again at half the concurrency. Pure."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from probes.pairs import PairResult, Probe
from topology.model import Guid


@dataclass(frozen=True)
class RetestPlan:
    """Outliers of the last pass re-run with half the concurrency of the pass before."""

    probes: tuple[Probe, ...]
    concurrency: int  # probes at once in this pass
    outliers: tuple[PairResult, ...]


def outliers(results: Sequence[PairResult]) -> list[PairResult]:
    """Failed pairs and pairs judged slow against their route (:func:`probes.expect.judge`)."""
    return [r for r in results if not r.ok]


def retest_plan(results: Sequence[PairResult], concurrency: int) -> RetestPlan:
    """ClusterKit-style re-test: the outliers of ``results`` again, at most ``concurrency // 2`` at once.

    ``concurrency`` is how many probes ran at once in the pass that produced ``results``; halving
    it each pass tells a link that is slow by itself from one slowed by its neighbours. A pass
    with one probe at a time is the last: what is still slow then is slow on its own.
    """
    bad = outliers(results)
    limit = max(1, concurrency // 2)
    # Spread over rounds of at most ``limit`` probes, no HCA twice in a round.
    placed: list[Probe] = []
    load: dict[int, int] = defaultdict(int)
    used: dict[int, set[Guid]] = defaultdict(set)
    for res in sorted(bad, key=lambda r: (r.client, r.server)):
        r = 0
        while load[r] >= limit or res.client.guid in used[r] or res.server.guid in used[r]:
            r += 1
        load[r] += 1
        used[r] |= {res.client.guid, res.server.guid}
        placed.append(Probe(res.client, res.server, r))
    return RetestPlan(tuple(placed), limit, tuple(bad))
