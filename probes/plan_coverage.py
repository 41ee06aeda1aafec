"""What a sweep plan's probes cross: the leaf-spine cables and rails per round and in all, the
leaves too short of probe ends for their uplinks, and the lower bound on rounds. Pure.

With routes, what a probe crosses is its route through the tables (:class:`topology.route_pairs.PairRoutes`,
the one route walk over the tables bound as arrays); without, every leaf-spine cable on a shortest
up/down path between the two ends' leaves is *possibly* crossed (:class:`topology.routes.UpDown`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from probes.pairs import Endpoint, Probe
from topology.classify import Classification, Role
from topology.model import Fabric, Guid, Link
from topology.routes import RouteError, UpDown

if TYPE_CHECKING:
    from topology.route_pairs import PairRoutes


@dataclass(frozen=True, slots=True)
class RoundCoverage:
    round: int
    probes: int
    cables: int  # leaf-spine cables crossed in this round
    rails: tuple[int, ...]


@dataclass(frozen=True)
class Coverage:
    from_routes: bool  # False: "possibly crossed" on some shortest up/down path
    cables_total: int
    cables_covered: int
    uncovered: tuple[Link, ...]
    rails_total: tuple[int, ...]
    rails_covered: tuple[int, ...]
    per_round: tuple[RoundCoverage, ...]
    short_leaves: tuple[Guid, ...]  # fewer probe ends than uplink cables: cannot cross them all
    unroutable: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.uncovered and set(self.rails_covered) == set(self.rails_total)


def leaf_spine_cables(cls: Classification, fabric: Fabric) -> set[Link]:
    tiers = {g: c.tier for g, c in cls.nodes.items() if c.role is Role.SWITCH}
    return {lk for lk in fabric.links if {tiers.get(lk.a.guid), tiers.get(lk.b.guid)} == {1, 2}}


def short_leaves(
    cls: Classification, cables: set[Link], ends: Mapping[Guid, int] | Mapping[Guid | None, int]
) -> tuple[Guid, ...]:
    """Leaves with fewer probe ends (``ends``: per leaf) than uplinks: they cannot cross them all."""
    return tuple(
        sorted(
            leaf
            for leaf in cls.leaves()
            if ends.get(leaf, 0) < cls.uplinks.get(leaf, 0)
            and any(lk.a.guid == leaf or lk.b.guid == leaf for lk in cables)
        )
    )


def rounds_coverage(
    cls: Classification,
    cables: set[Link],
    from_routes: bool,
    per_round: Mapping[int, set[Link]],
    rails_by_round: Mapping[int, set[int]],
    count_by_round: Mapping[int, int],
    ends: Mapping[Guid, int] | Mapping[Guid | None, int],
    rails_total: tuple[int, ...],
    unroutable: Sequence[str],
) -> Coverage:
    """The coverage of a plan from what its probes crossed per round."""
    covered: set[Link] = set().union(*per_round.values()) & cables if per_round else set()
    short = short_leaves(cls, cables, ends)
    rails_covered = tuple(sorted(set().union(*rails_by_round.values()))) if rails_by_round else ()
    return Coverage(
        from_routes=from_routes,
        cables_total=len(cables),
        cables_covered=len(covered),
        uncovered=tuple(sorted(cables - covered, key=lambda lk: lk.key)),
        rails_total=rails_total,
        rails_covered=rails_covered,
        per_round=tuple(
            RoundCoverage(r, count_by_round[r], len(per_round[r] & cables), tuple(sorted(rails_by_round[r])))
            for r in sorted(count_by_round)
        ),
        short_leaves=short,
        unroutable=tuple(unroutable),
    )


def bound_counted(probes: Sequence[Probe], per_host: bool) -> tuple[int, str]:
    """The lower bound: the most probes one HCA (or host) is in, a round holding one of them; of
    the ends with the most, the one met first (client, then server, probe by probe)."""
    from collections import Counter
    from itertools import chain
    from operator import attrgetter

    ends = attrgetter("client.host", "server.host") if per_host else attrgetter("client.guid", "server.guid")
    degree = Counter(chain.from_iterable(map(ends, probes)))
    if not degree:
        return 0, "no probes"
    most_key, most = max(degree.items(), key=lambda kv: kv[1])
    name = most_key
    if not per_host:
        name = next(end.label for p in probes for end in (p.client, p.server) if end.guid == most_key)
    what = "host" if per_host else "HCA"
    return most, f"max probes per {what} ({most}, {name}): one per round"


def coverage_by_round(
    fabric: Fabric,
    cls: Classification,
    updown: UpDown,
    probes: Sequence[Probe],
    router: PairRoutes | None,
    eps: Sequence[Endpoint],
) -> tuple[Coverage, dict[tuple[Guid, Guid], tuple[Link, ...]]]:
    """What the probes cross, per round and in all: from the routes when given, else every
    leaf-spine cable on a shortest up/down path between the two ends' leaves; probes are taken a
    round at a time (any order; the plan's is by round), sets and counts built by C-level
    iteration over the round's ends instead of a few dict steps per probe."""
    from collections import Counter
    from itertools import groupby
    from operator import attrgetter

    cables = leaf_spine_cables(cls, fabric)
    paths: dict[tuple[Guid, Guid], tuple[Link, ...]] = {}
    unroutable: list[str] = []
    if router is not None:
        found = router([(p.client.guid, p.server.guid) for p in probes])
        for key, got in found.items():
            if isinstance(got, RouteError):
                unroutable.append(f"{key[0]} -> {key[1]}: {got}")
            else:
                paths[key] = got
    clients, servers = attrgetter("client"), attrgetter("server")
    leaf, rail, guid = attrgetter("leaf"), attrgetter("rail"), attrgetter("guid")
    per_round: dict[int, set[Link]] = {}
    rails_by_round: dict[int, set[int]] = {}
    count_by_round: dict[int, int] = {}
    ends: Counter[Guid | None] = Counter()
    leaf_pair_cache: dict[tuple[Guid, Guid], list[Link]] = {}
    for r, group in groupby(probes, attrgetter("round")):
        mine = list(group)
        client_eps, server_eps = list(map(clients, mine)), list(map(servers, mine))
        count_by_round[r] = count_by_round.get(r, 0) + len(mine)
        rails_by_round.setdefault(r, set()).update(map(rail, client_eps))
        a_leaves, b_leaves = list(map(leaf, client_eps)), list(map(leaf, server_eps))
        ends.update(a_leaves)
        ends.update(b_leaves)
        crossed = per_round.setdefault(r, set())
        if router is not None:
            for key in zip(map(guid, client_eps), map(guid, server_eps), strict=True):
                crossed.update(paths.get(key, ()))
        else:
            for key in set(zip(a_leaves, b_leaves, strict=True)):
                if key not in leaf_pair_cache:
                    assert key[0] is not None and key[1] is not None
                    leaf_pair_cache[key] = updown.uplinks(key[0], key[1]) + updown.uplinks(key[1], key[0])
                crossed.update(leaf_pair_cache[key])
    assert None not in ends
    rails_total = tuple(sorted({ep.rail for ep in eps}))
    cov = rounds_coverage(
        cls,
        cables,
        router is not None,
        per_round,
        rails_by_round,
        count_by_round,
        ends,
        rails_total,
        unroutable,
    )
    return cov, paths
