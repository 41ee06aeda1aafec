"""The sweep planner's oracle: the plan made probe by probe (the circle method's rounds walked
pair by pair, probes sorted by comparing endpoints, coverage and bound counted one probe at a
time, routes by the dict walk of tests/oracles/routes.py). :func:`probes.plan.plan_sweep` makes
the same plan with arrays (tests/probes/test_plan_fast.py).

The patterns' own rules (rail-pairs' layers, leaf-pairs, a custom file, resolving rounds) are
shared with the planner: what is checked here is how the plan is made, not which pairs a
pattern asks for."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import probes.plan as planner
from probes.pairs import Endpoint, Probe
from probes.plan import Coverage, RoundCoverage, SweepPlan
from probes.plan_coverage import leaf_spine_cables
from tests.oracles.routes import all_paths
from topology.classify import Classification
from topology.lft import Lfts
from topology.model import Fabric, Guid, Link
from topology.route_pairs import PairRoutes, bind_tables
from topology.routes import ForwardingTables, RouteError, UpDown
from topology.wiring import links_below_peers


def plan_sweep_oracle(
    fabric: Fabric,
    cls: Classification,
    pattern: str,
    routes: ForwardingTables | Lfts | None = None,
    *,
    per_host: bool = False,
    pairs_text: str | None = None,
    pairs_source: str = "<pairs>",
    max_extra_layers: int = 8,
    include_service: bool = False,
) -> SweepPlan:
    eps = planner.probe_ends(fabric, cls, pattern, include_service)
    updown = UpDown(fabric, cls)
    if pattern == "pairwise":
        made = planner.PatternPairs(pairwise_pairs(eps, per_host), False, [], (0, ""))
        # the circle method gives every endpoint one probe per round: the hints are the rounds
        probes = [Probe(client, server, hint) for hint, client, server in made.hinted]
    else:
        # the patterns' rules are shared (rail-pairs adds layers by the planner's coverage)
        router = PairRoutes(bind_tables(fabric, routes)) if routes is not None else None
        made = planner.pattern_pairs(
            fabric, cls, pattern, eps, updown, router, per_host, pairs_text, pairs_source, max_extra_layers
        )
        probes = planner.schedule(made.hinted, per_host, made.fixed)
    probes.sort(key=lambda p: (p.round, p.client, p.server))
    coverage, paths = coverage_of(fabric, cls, updown, probes, routes, eps)
    bound, reason = bound_of(probes, per_host)
    if made.coverage_bound[0] and made.coverage_bound[0] >= bound:
        bound, reason = made.coverage_bound
    rounds = max((p.round for p in probes), default=-1) + 1
    design = {d.link.key: d.gbps for d in links_below_peers(fabric, cls)}
    return SweepPlan(
        pattern, tuple(probes), rounds, bound, reason, per_host, coverage, tuple(made.notes), paths, design
    )


def circle(items: Sequence[object]) -> list[list[tuple[object, object]]]:
    """Round-robin tournament (circle method): n-1 rounds of n/2 pairs; ``None`` is the bye."""
    people: list[object] = list(items)
    if len(people) % 2:
        people.append(None)
    n = len(people)
    rounds = []
    for _ in range(n - 1):
        rounds.append([(people[i], people[n - 1 - i]) for i in range(n // 2)])
        people = [people[0], people[-1], *people[1:-1]]
    return rounds


def pairwise_pairs(eps: Sequence[Endpoint], per_host: bool) -> list[tuple[int, Endpoint, Endpoint]]:
    """Every host pair once, round by round: the second host's HCAs, each from the first host's
    HCA on its rail (the last of that rail)."""
    hosts: dict[str, list[Endpoint]] = defaultdict(list)
    for ep in eps:
        hosts[ep.host].append(ep)
    rails = sorted({ep.rail for ep in eps})
    rail_index = {rail: i for i, rail in enumerate(rails)}
    by_rail = {host: {ep.rail: ep for ep in mine} for host, mine in hosts.items()}
    hinted: list[tuple[int, Endpoint, Endpoint]] = []
    for r, matching in enumerate(circle(sorted(hosts))):
        for a, b in matching:
            if a is None or b is None:
                continue
            assert isinstance(a, str) and isinstance(b, str)
            if r % 2:
                a, b = b, a
            mine = by_rail[a]
            for ep in hosts[b]:
                if ep.rail in mine:
                    hint = r * len(rails) + rail_index[ep.rail] if per_host else r
                    hinted.append((hint, mine[ep.rail], ep))
    return hinted


def coverage_of(
    fabric: Fabric,
    cls: Classification,
    updown: UpDown,
    probes: Sequence[Probe],
    routes: ForwardingTables | Lfts | None,
    eps: Sequence[Endpoint],
) -> tuple[Coverage, dict[tuple[Guid, Guid], tuple[Link, ...]]]:
    cables = leaf_spine_cables(cls, fabric)
    paths: dict[tuple[Guid, Guid], tuple[Link, ...]] = {}
    unroutable: list[str] = []
    per_round: dict[int, set[Link]] = defaultdict(set)
    rails_by_round: dict[int, set[int]] = defaultdict(set)
    count_by_round: dict[int, int] = defaultdict(int)
    ends: dict[Guid, int] = defaultdict(int)
    if routes is not None:
        tables = routes.to_mapping() if isinstance(routes, Lfts) else routes  # the dict walk's form
        found = all_paths(fabric, tables, [(p.client.guid, p.server.guid) for p in probes])
        for key, got in found.items():
            if isinstance(got, RouteError):
                unroutable.append(f"{key[0]} -> {key[1]}: {got}")
            else:
                paths[key] = tuple(got)
    for p in probes:
        r, client, server = p.round, p.client, p.server
        count_by_round[r] += 1
        rails_by_round[r].add(client.rail)
        a, b = client.leaf, server.leaf
        assert a is not None and b is not None
        ends[a] += 1
        ends[b] += 1
        if routes is not None:
            per_round[r].update(paths.get((client.guid, server.guid), ()))
        else:
            per_round[r].update(updown.uplinks(a, b) + updown.uplinks(b, a))
    covered = set().union(*per_round.values()) & cables if per_round else set()
    short = tuple(
        sorted(
            leaf
            for leaf in cls.leaves()
            if ends.get(leaf, 0) < cls.uplinks.get(leaf, 0)
            and any(lk.a.guid == leaf or lk.b.guid == leaf for lk in cables)
        )
    )
    coverage = Coverage(
        from_routes=routes is not None,
        cables_total=len(cables),
        cables_covered=len(covered),
        uncovered=tuple(sorted(cables - covered, key=lambda lk: lk.key)),
        rails_total=tuple(sorted({ep.rail for ep in eps})),
        rails_covered=tuple(sorted(set().union(*rails_by_round.values()))) if rails_by_round else (),
        per_round=tuple(
            RoundCoverage(r, count_by_round[r], len(per_round[r] & cables), tuple(sorted(rails_by_round[r])))
            for r in sorted(count_by_round)
        ),
        short_leaves=short,
        unroutable=tuple(unroutable),
    )
    return coverage, paths


def bound_of(probes: Sequence[Probe], per_host: bool) -> tuple[int, str]:
    """The most probes one HCA (host) is in; of those with the most, the first met."""
    degree: dict[str, int] = defaultdict(int)
    for p in probes:
        for end in (p.client, p.server):
            degree[end.host if per_host else end.guid] += 1
    if not degree:
        return 0, "no probes"
    most_key, most = max(degree.items(), key=lambda kv: kv[1])
    name = most_key
    if not per_host:
        name = next(end.label for p in probes for end in (p.client, p.server) if end.guid == most_key)
    what = "host" if per_host else "HCA"
    return most, f"max probes per {what} ({most}, {name}): one per round"
