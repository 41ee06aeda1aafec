"""What each probe should measure, and which measured pairs are slow. Pure.

A pair is judged against its own route under the sharing of the round it ran in, never against
an absolute bar or the best pair of the whole sweep:

* **route rate**: every link of the probe's route gives its *design* rate (its peers' width x
  speed when it trains below them, :func:`topology.wiring.links_below_peers`; its own otherwise)
  divided by the number of probes of the same round that cross it in the same direction; the
  route rate (:attr:`PairResult.expected_gbps`) is the smallest of those shares. Contention the
  pattern itself causes is so expected, not a fault. Equal shares are what max-min fairness
  gives a flow at least on its bottleneck, so a healthy pair measures no less.
* **efficiency**: what ``ib_write_bw`` reaches of a route's rate on this fabric, read from the
  sweep itself: the 90th percentile over the first pass of ``measured / route rate``, each
  capped at 1 (a pair cannot beat its line rate; a pair that ran beside a slow one may beat its
  equal share). A high percentile, not the maximum, so one lucky pair cannot raise the bar.
* **slow**: a pair that failed, or measured below :data:`SLOW_RATIO` (93 %, ClusterKit's bar) of
  ``efficiency x route rate``. A slow pair is stored with ``ok`` false and the numbers in its
  error; without a route only its own cable's rate is known and it is judged against that.

>>> round(route_share([200.0, 200.0, 200.0], [1, 2, 1]), 1)
100.0
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from probes.pairs import PairResult, Probe
from topology.model import Guid, Link, LinkKey

SLOW_RATIO = 0.93  # ClusterKit: below 93 % of what the pair should reach is bad
EFFICIENCY_QUANTILE = 0.9

Paths = Mapping[tuple[Guid, Guid], Sequence[Link]]
DesignRates = Mapping[LinkKey, float]  # links whose design rate differs from their trained rate
# (link, GUID the data leaves from)
Crossing = tuple[LinkKey, Guid]


@dataclass(frozen=True, slots=True)
class RouteRate:
    """The rate a probe's route should give in its round, and the link that limits it."""

    gbps: float
    bottleneck: Link
    design_gbps: float  # the bottleneck's design rate
    sharing: int  # probes of the round crossing the bottleneck in this direction


def crossings(path: Sequence[Link], src: Guid) -> list[Crossing]:
    """(link key, GUID the data leaves from) for every hop of ``path`` starting at ``src``."""
    out: list[Crossing] = []
    here = src
    for lk in path:
        out.append((lk.key, here))
        here = lk.other(here).guid
    return out


def round_sharing(probes: Sequence[Probe], paths: Paths) -> Counter[Crossing]:
    """How many probes of one round cross each link in each direction."""
    n: Counter[Crossing] = Counter()
    for p in probes:
        path = paths.get((p.client.guid, p.server.guid))
        if path:
            n.update(crossings(path, p.client.guid))
    return n


def route_share(design: Sequence[float], sharing: Sequence[int]) -> float:
    """The smallest equal share along a route: min of design rate / probes sharing the link."""
    return min(d / max(1, n) for d, n in zip(design, sharing, strict=True))


def design_rate(lk: Link, design: DesignRates) -> float:
    """The rate ``lk`` should give: its peers' when it trains below them, else its own."""
    return design.get(lk.key, lk.gbps)


def route_rates(
    probes: Sequence[Probe], paths: Paths, design: DesignRates
) -> dict[tuple[Guid, Guid], RouteRate]:
    """The route rate of every routed probe of one round (probes without a route are absent)."""
    sharing = round_sharing(probes, paths)
    out: dict[tuple[Guid, Guid], RouteRate] = {}
    for p in probes:
        key = (p.client.guid, p.server.guid)
        path = paths.get(key)
        if not path:
            continue
        best: RouteRate | None = None
        for lk, crossing in zip(path, crossings(path, p.client.guid), strict=True):
            rate = design_rate(lk, design)
            if rate <= 0:
                continue  # speed unknown: it cannot be the expected bottleneck
            n = sharing[crossing]
            share = rate / max(1, n)
            if best is None or share < best.gbps:
                best = RouteRate(share, lk, rate, n)
        if best is not None:
            out[key] = best
    return out


def efficiency(results: Sequence[PairResult]) -> float | None:
    """What the pairs reach of their route rate (see the module docstring); None if no pair ran."""
    ratios = sorted(
        min(1.0, r.gbps / r.expected_gbps) for r in results if r.ok and r.gbps is not None and r.expected_gbps
    )
    if not ratios:
        return None
    return ratios[min(len(ratios) - 1, math.ceil(EFFICIENCY_QUANTILE * len(ratios)) - 1)]


def with_route(r: PairResult, rate: RouteRate | None) -> PairResult:
    """``r`` with its route rate (or its own line rate when it has no route)."""
    expected = rate.gbps if rate is not None else r.line_rate_gbps
    return replace(r, expected_gbps=round(expected, 3) if expected else None)


def judge(
    results: Sequence[PairResult],
    eff: float | None,
    rates: Mapping[tuple[Guid, Guid, int], RouteRate] | None = None,
    describe: Callable[[Link], str] = str,
) -> list[PairResult]:
    """``results`` with every slow pair turned into a failure that says why (see the module docstring).

    ``rates`` (by client, server, attempt) names the bottleneck in the reason when given.
    """
    out: list[PairResult] = []
    for r in results:
        if not r.ok or r.gbps is None or not r.expected_gbps or eff is None:
            out.append(r)
            continue
        bar = SLOW_RATIO * eff * r.expected_gbps
        if r.gbps >= bar:
            out.append(r)
            continue
        rate = (rates or {}).get((r.client.guid, r.server.guid, r.attempt))
        if rate is None:
            where = f"its cable's {r.expected_gbps:g} Gb/s (no route known)"
        else:
            shared = f" shared by {rate.sharing} probes" if rate.sharing > 1 else ""
            where = (
                f"the {r.expected_gbps:g} Gb/s its route should give ({describe(rate.bottleneck)} "
                f"{rate.design_gbps:g} Gb/s{shared})"
            )
        error = (
            f"slow: {r.gbps:g} Gb/s, under {SLOW_RATIO:.0%} of {eff:.0%} (the sweep's efficiency) of {where}"
        )
        out.append(replace(r, ok=False, error=error))
    return out


def is_slow(r: PairResult) -> bool:
    """Measured, but judged slow (a failure without a number is not 'slow': it failed)."""
    return not r.ok and r.gbps is not None
