"""Sweep planning: which HCA pairs to probe, in which rounds, and what the rounds cover. Pure.

Patterns (``plan_sweep(fabric, cls, pattern)``):

* ``rail-pairs``: HCA *r* of a host talks to HCA *r* of a host on another leaf of the same rail
  (rail-matched), so the traffic climbs to the spines. Per rail the leaves are paired by the circle
  method (a leftover leaf joins one pair as a triangle, each leaf split in halves), hosts of the two
  leaves one to one, so every HCA is in one probe per *layer*. A layer gives each leaf as many
  probe ends as it has HCAs; the plan has ``ceil(uplinks / HCAs)`` layers for the worst leaf, the
  fewest with which all its uplinks can be crossed. With routes, layers (new partner leaves,
  reversed direction) are added while some leaf-spine cable stays uncrossed.
* ``pairwise``: every host pair once, circle method (n-1 rounds of n/2 host pairs, a bye for odd
  n; SuperBench's ``pair-wise``, ClusterKit's default), all rails of a host pair at once.
* ``leaf-pairs``: one HCA pair for every pair of leaves (circle method over leaves; leaf rounds
  packed into one probe round while the leaves have HCAs to spare).
* ``custom``: pairs from a file, ``[ROUND] CLIENT SERVER`` per line, an end being ``HOST`` (all
  rail-matched HCA pairs of the two hosts) or ``HOST:DEVICE`` (ClusterKit's ``-f`` file is
  ``<round> <node1> <node2>``).

Rounds: no HCA is in two probes of one round; with ``per_host=True`` no host is either. The lower
bound is the largest number of probes one HCA (or host) takes part in (a round holds one of them),
and for ``rail-pairs`` also ``ceil(uplinks / HCAs)`` of the worst leaf (a probe crosses one uplink
of each end's leaf). Coverage: the leaf-spine cables and rails crossed, per round and in all; from
the routes when given, else every cable on a shortest up/down path of a probe is counted as
*possibly* crossed (and leaves with fewer probe ends than uplinks are listed as short).

The plan also keeps the design rate of every cable that trains below its peers
(``design_gbps``): a pair is judged against what its route *should* give (:mod:`probes.expect`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from probes.pairs import Endpoint, PairResult, Probe, rail_key
from probes.plan_coverage import Coverage, RoundCoverage, bound_counted, coverage_by_round
from probes.plan_pairwise import Columns, bound_columns, coverage_columns, pairwise_probes, ranks
from probes.plan_patterns import PatternPairs, pattern_pairs, schedule
from probes.plan_retest import RetestPlan, outliers, retest_plan
from topology.bulk import gc_paused
from topology.classify import Classification, Role
from topology.errors import UsageError
from topology.model import Fabric, Guid, Link, LinkKey
from topology.routes import UpDown
from topology.wiring import links_below_peers

if TYPE_CHECKING:
    from topology.route_pairs import RouteTables

PATTERNS = ("rail-pairs", "pairwise", "leaf-pairs", "custom")

__all__ = [
    "PATTERNS",
    "Coverage",
    "Endpoint",
    "PairResult",
    "PatternPairs",
    "Probe",
    "RetestPlan",
    "RoundCoverage",
    "SweepPlan",
    "endpoints",
    "outliers",
    "pattern_pairs",
    "plan_sweep",
    "probe_ends",
    "retest_plan",
    "schedule",
]


@dataclass(frozen=True)
class SweepPlan:
    pattern: str
    probes: tuple[Probe, ...]
    rounds: int
    lower_bound: int
    bound_reason: str
    per_host: bool
    coverage: Coverage
    notes: tuple[str, ...] = ()
    paths: Mapping[tuple[Guid, Guid], tuple[Link, ...]] = field(default_factory=dict)
    # cables trained below their peers -> the rate their peers give (what they should give)
    design_gbps: Mapping[LinkKey, float] = field(default_factory=dict)

    def round_probes(self, index: int) -> list[Probe]:
        return [p for p in self.probes if p.round == index]

    def path_of(self, probe: Probe) -> tuple[Link, ...] | None:
        return self.paths.get((probe.client.guid, probe.server.guid))

    def to_dict(self, names: Mapping[Guid, str] | None = None) -> dict[str, Any]:
        names = names or {}

        def link(lk: Link) -> str:
            a, b = names.get(lk.a.guid, lk.a.guid), names.get(lk.b.guid, lk.b.guid)
            return f"{a}/{lk.a.port} - {b}/{lk.b.port}"

        cov = self.coverage
        return {
            "pattern": self.pattern,
            "rounds": self.rounds,
            "lower_bound": self.lower_bound,
            "bound_reason": self.bound_reason,
            "per_host": self.per_host,
            "probes": [
                {"round": p.round, "client": p.client.label, "server": p.server.label} for p in self.probes
            ],
            "coverage": {
                "from_routes": cov.from_routes,
                "cables_total": cov.cables_total,
                "cables_covered": cov.cables_covered,
                "uncovered": [link(lk) for lk in cov.uncovered],
                "rails_total": list(cov.rails_total),
                "rails_covered": list(cov.rails_covered),
                "short_leaves": [names.get(g, g) for g in cov.short_leaves],
                "unroutable": list(cov.unroutable),
                "per_round": [
                    {"round": r.round, "probes": r.probes, "cables": r.cables, "rails": list(r.rails)}
                    for r in cov.per_round
                ],
            },
            "notes": list(self.notes),
        }


def endpoints(fabric: Fabric, cls: Classification, include_service: bool = False) -> list[Endpoint]:
    """Every HCA of a compute host (and of a service host, with ``include_service``) cabled to a
    leaf, as a probe end (sorted by host, then device). Service hosts (login, storage, UFM:
    topology.hostroles) are no probe ends unless asked for: their adapters would set the bound."""
    out = []
    roles = _PROBED_WITH_SERVICE if include_service else _PROBED
    for guid, c in cls.nodes.items():
        if c.role in roles and c.host and c.adapter and c.leaf is not None:
            out.append(Endpoint(c.host, c.adapter, guid, c.leaf, rail_key(cls, guid)))
    return sorted(out)


_PROBED = frozenset({Role.COMPUTE})
_PROBED_WITH_SERVICE = frozenset({Role.COMPUTE, Role.SERVICE})


# -- entry point --------------------------------------------------------------------------------
def plan_sweep(
    fabric: Fabric,
    cls: Classification,
    pattern: str,
    routes: RouteTables | None = None,
    *,
    per_host: bool = False,
    pairs_text: str | None = None,
    pairs_source: str = "<pairs>",
    max_extra_layers: int = 8,
    include_service: bool = False,
) -> SweepPlan:
    """Plan a sweep (see the module docstring); UsageError for an unknown pattern or no hosts.

    Pairwise probes are made in their final order by whole arrays, coverage and bound counted by
    column or a round at a time, with the cyclic garbage collector paused
    (:func:`topology.bulk.gc_paused`). The plain reading of these rules, probe by probe, is the
    oracle the tests hold this against (tests/oracles/plan.py): the same plan.

    ``include_service``: service hosts are probe ends too (a ``custom`` pair file may name them
    in any case: it names its hosts)."""
    with gc_paused():
        return _plan_sweep(
            fabric,
            cls,
            pattern,
            routes,
            per_host,
            pairs_text,
            pairs_source,
            max_extra_layers,
            include_service,
        )


def probe_ends(fabric: Fabric, cls: Classification, pattern: str, include_service: bool) -> list[Endpoint]:
    """The endpoints a ``pattern`` plan pairs; UsageError for an unknown pattern or too few."""
    if pattern not in PATTERNS:
        raise UsageError(f"sweep pattern {pattern!r}: use one of {', '.join(PATTERNS)}")
    eps = endpoints(fabric, cls, include_service or pattern == "custom")
    if len(eps) < 2:
        raise UsageError(f"{fabric.source or 'fabric'}: fewer than two named host HCAs to pair")
    return eps


def _plan_sweep(
    fabric: Fabric,
    cls: Classification,
    pattern: str,
    routes: RouteTables | None,
    per_host: bool,
    pairs_text: str | None,
    pairs_source: str,
    max_extra_layers: int,
    include_service: bool,
) -> SweepPlan:
    eps = probe_ends(fabric, cls, pattern, include_service)
    updown = UpDown(fabric, cls)
    # the tables bound as arrays once; every route the plan asks for is walked over them
    router = None
    if routes is not None:
        from topology.route_pairs import PairRoutes, bind_tables  # numpy, for plans with routes only

        router = PairRoutes(bind_tables(fabric, routes))
    columns: Columns | None = None
    if pattern == "pairwise":
        probes, columns = pairwise_probes(eps, per_host)  # in their final order already
        made = PatternPairs([], False, [], (0, ""))
    else:
        made = pattern_pairs(
            fabric, cls, pattern, eps, updown, router, per_host, pairs_text, pairs_source, max_extra_layers
        )
        probes = schedule(made.hinted, per_host, made.fixed)
        # Endpoint order ranked once by GUID: comparing and hashing the dataclasses cost seconds
        rank = ranks(eps)
        probes.sort(key=lambda p: (p.round, rank[p.client.guid], rank[p.server.guid]))
    paths: dict[tuple[Guid, Guid], tuple[Link, ...]] = {}
    if columns is not None and router is None:
        coverage = coverage_columns(fabric, cls, updown, columns, eps)
        bound, reason = bound_columns(columns, per_host)
    else:
        coverage, paths = coverage_by_round(fabric, cls, updown, probes, router, eps)
        bound, reason = bound_counted(probes, per_host)
    if made.coverage_bound[0] and made.coverage_bound[0] >= bound:
        bound, reason = made.coverage_bound
    rounds = probes[-1].round + 1 if probes else 0  # sorted by round
    design = {d.link.key: d.gbps for d in links_below_peers(fabric, cls)}
    return SweepPlan(
        pattern, tuple(probes), rounds, bound, reason, per_host, coverage, tuple(made.notes), paths, design
    )
