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

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from probes.pairs import Endpoint, PairResult, Probe, parse_pair_file, rail_key
from topology.bulk import gc_paused
from topology.classify import Classification, Role
from topology.errors import UsageError
from topology.model import Fabric, Guid, Link, LinkKey
from topology.routes import ForwardingTables, RouteError, UpDown, all_paths
from topology.wiring import links_below_peers

PATTERNS = ("rail-pairs", "pairwise", "leaf-pairs", "custom")

__all__ = [
    "PATTERNS",
    "Coverage",
    "Endpoint",
    "PairResult",
    "Probe",
    "RetestPlan",
    "RoundCoverage",
    "SweepPlan",
    "endpoints",
    "plan_sweep",
    "retest_plan",
]


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


# -- the patterns -------------------------------------------------------------------------------
def _circle(items: Sequence[Any]) -> list[list[tuple[Any, Any]]]:
    """Round-robin tournament (circle method): n-1 rounds of n/2 pairs; ``None`` is the bye."""
    people: list[Any] = list(items)
    if len(people) % 2:
        people.append(None)
    n = len(people)
    rounds = []
    for _ in range(n - 1):
        rounds.append([(people[i], people[n - 1 - i]) for i in range(n // 2)])
        people = [people[0], people[-1], *people[1:-1]]
    return rounds


def _zip(
    clients: Sequence[Endpoint], servers: Sequence[Endpoint], shift: int
) -> list[tuple[Endpoint, Endpoint]]:
    if not clients or not servers:
        return []
    k = min(len(clients), len(servers))
    return [(clients[i], servers[(i + shift) % len(servers)]) for i in range(k)]


def _rail_layer(
    leaves: Sequence[Guid], by_leaf: Mapping[Guid, Sequence[Endpoint]], layer: int
) -> list[tuple[Endpoint, Endpoint]]:
    """One layer of rail-pairs for one rail: every HCA of the rail in at most one probe."""
    if len(leaves) == 1:
        hcas = by_leaf[leaves[0]]
        half = len(hcas) // 2
        return _zip(hcas[:half], hcas[half : 2 * half], layer)
    schedule = _circle(leaves)
    matching = schedule[layer % len(schedule)]
    flip = (layer // len(schedule)) % 2 == 1
    pairs = [(a, b) for a, b in matching if a is not None and b is not None]
    bye = next((a if b is None else b for a, b in matching if a is None or b is None), None)
    out: list[tuple[Endpoint, Endpoint]] = []
    if bye is not None and pairs:
        a, b = pairs.pop()
        ha, hb, hc = by_leaf[a], by_leaf[b], by_leaf[bye]
        sa, sb, sc = (len(x) - len(x) // 2 for x in (ha, hb, hc))
        out += _zip(ha[:sa], hb[:sb], layer) + _zip(hb[sb:], hc[:sc], layer) + _zip(hc[sc:], ha[sa:], layer)
    for a, b in pairs:
        if flip:
            a, b = b, a
        out += _zip(by_leaf[a], by_leaf[b], layer)
    return out


def _rail_groups(eps: Sequence[Endpoint]) -> dict[int, dict[Guid, list[Endpoint]]]:
    groups: dict[int, dict[Guid, list[Endpoint]]] = defaultdict(lambda: defaultdict(list))
    for ep in eps:
        assert ep.leaf is not None
        groups[ep.rail][ep.leaf].append(ep)
    return groups


def _coverage_layers(fabric: Fabric, cls: Classification, eps: Sequence[Endpoint]) -> tuple[int, Guid | None]:
    per_leaf: dict[Guid, int] = defaultdict(int)
    for ep in eps:
        assert ep.leaf is not None
        per_leaf[ep.leaf] += 1
    worst, worst_leaf = 1, None
    for leaf, n in per_leaf.items():
        need = math.ceil(_uplink_count(fabric, cls, leaf) / n)
        if need > worst:
            worst, worst_leaf = need, leaf
    return worst, worst_leaf


def _uplink_count(fabric: Fabric, cls: Classification, leaf: Guid) -> int:
    return cls.uplinks.get(leaf, 0)


# -- scheduling ---------------------------------------------------------------------------------
def schedule(
    pairs: Iterable[tuple[int, Endpoint, Endpoint]], per_host: bool, fixed: bool = False
) -> list[Probe]:
    """Give each pair the round it hints at if both ends are free there, else the first free one."""
    busy: dict[object, set[int]] = defaultdict(set)
    out = []
    for hint, client, server in pairs:
        mine, theirs = (
            (busy[client.host], busy[server.host]) if per_host else (busy[client.guid], busy[server.guid])
        )
        if hint in mine or hint in theirs:  # no union of the two: 380,000 pairs of 600-round sets
            if fixed:
                raise UsageError(f"round {hint + 1}: {client.label} or {server.label} is in two probes")
            hint = 0
            while hint in mine or hint in theirs:
                hint += 1
        mine.add(hint)
        theirs.add(hint)
        out.append(Probe(client, server, hint))
    return out


# -- entry point --------------------------------------------------------------------------------
def plan_sweep(
    fabric: Fabric,
    cls: Classification,
    pattern: str,
    routes: ForwardingTables | None = None,
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


@dataclass(frozen=True)
class PatternPairs:
    """A non-pairwise pattern's pairs, each with the round it hints at (rounds are resolved by
    :func:`schedule`), and what the pattern adds to the plan."""

    hinted: list[tuple[int, Endpoint, Endpoint]]
    fixed: bool  # a custom file numbered every pair's round: a clash is an error, not moved
    notes: list[str]
    coverage_bound: tuple[int, str]  # (0, "") or rail-pairs' rounds for the worst leaf's uplinks


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
    routes: ForwardingTables | None,
    per_host: bool,
    pairs_text: str | None,
    pairs_source: str,
    max_extra_layers: int,
    include_service: bool,
) -> SweepPlan:
    eps = probe_ends(fabric, cls, pattern, include_service)
    updown = UpDown(fabric, cls)
    columns: _Columns | None = None
    if pattern == "pairwise":
        probes, columns = _pairwise(eps, per_host)  # in their final order already
        made = PatternPairs([], False, [], (0, ""))
    else:
        made = pattern_pairs(
            fabric, cls, pattern, eps, updown, routes, per_host, pairs_text, pairs_source, max_extra_layers
        )
        probes = schedule(made.hinted, per_host, made.fixed)
        # Endpoint order ranked once by GUID: comparing and hashing the dataclasses cost seconds
        rank = _ranks(eps)
        probes.sort(key=lambda p: (p.round, rank[p.client.guid], rank[p.server.guid]))
    paths: dict[tuple[Guid, Guid], tuple[Link, ...]] = {}
    if columns is not None and routes is None:
        coverage = _coverage_columns(fabric, cls, updown, columns, eps)
        bound, reason = _bound_columns(columns, per_host)
    else:
        coverage, paths = _coverage_by_round(fabric, cls, updown, probes, routes, eps)
        bound, reason = _bound_counted(probes, per_host)
    if made.coverage_bound[0] and made.coverage_bound[0] >= bound:
        bound, reason = made.coverage_bound
    rounds = probes[-1].round + 1 if probes else 0  # sorted by round
    design = {d.link.key: d.gbps for d in links_below_peers(fabric, cls)}
    return SweepPlan(
        pattern, tuple(probes), rounds, bound, reason, per_host, coverage, tuple(made.notes), paths, design
    )


def _ranks(eps: Sequence[Endpoint]) -> dict[Guid, int]:
    """Each endpoint's place in endpoint order, by GUID (endpoints() makes one per GUID)."""
    rank = {ep.guid: i for i, ep in enumerate(sorted(eps))}
    if len(rank) != len(eps):  # pragma: no cover - a programming error, not an input
        raise AssertionError("two probe endpoints share a GUID")
    return rank


def pattern_pairs(
    fabric: Fabric,
    cls: Classification,
    pattern: str,
    eps: Sequence[Endpoint],
    updown: UpDown,
    routes: ForwardingTables | None,
    per_host: bool,
    pairs_text: str | None,
    pairs_source: str,
    max_extra_layers: int,
) -> PatternPairs:
    """The pairs of ``rail-pairs``, ``leaf-pairs`` or ``custom`` (the module docstring's rules)."""
    notes: list[str] = []
    fixed = False
    coverage_bound = (0, "")
    hinted: list[tuple[int, Endpoint, Endpoint]] = []
    if pattern == "rail-pairs":
        groups = _rail_groups(eps)
        layers, worst_leaf = _coverage_layers(fabric, cls, eps)
        if worst_leaf is not None:
            coverage_bound = (
                layers,
                f"leaf {cls.nodes[worst_leaf].name} needs {layers} rounds for its uplinks",
            )
        for rail, by_leaf in sorted(groups.items()):
            if len(by_leaf) == 1:
                notes.append(f"rail {rail} has one leaf: its pairs cannot reach a spine")
        rails = sorted(groups)

        def layer_pairs(layer: int) -> list[tuple[int, Endpoint, Endpoint]]:
            out = []
            for ri, rail in enumerate(rails):
                by_leaf = groups[rail]
                leaves = sorted(by_leaf, key=lambda g: cls.nodes[g].name)
                hint = layer * len(rails) + ri if per_host else layer
                out += [(hint, a, b) for a, b in _rail_layer(leaves, by_leaf, layer)]
            return out

        for layer in range(layers):
            hinted += layer_pairs(layer)
        if routes is not None:
            extra = 0
            while extra < max_extra_layers:
                planned = schedule(hinted, per_host)
                if not _coverage_by_round(fabric, cls, updown, planned, routes, eps)[0].uncovered:
                    break
                hinted += layer_pairs(layers + extra)
                extra += 1
            if extra:
                notes.append(f"{extra} layer(s) added so that the routes cross every leaf-spine cable")
    elif pattern == "leaf-pairs":
        on_leaf: dict[Guid, list[Endpoint]] = defaultdict(list)
        for ep in eps:
            assert ep.leaf is not None
            on_leaf[ep.leaf].append(ep)
        all_leaves = sorted(on_leaf, key=lambda g: cls.nodes[g].name)
        spare = 1 if per_host else min(len(v) for v in on_leaf.values())
        for k, matching in enumerate(_circle(all_leaves)):
            for i, (a, b) in enumerate(matching):
                if a is None or b is None:
                    continue
                pick = k % spare if not per_host else (k + i) % len(on_leaf[a])
                client = on_leaf[a][pick % len(on_leaf[a])]
                others = on_leaf[b][pick % len(on_leaf[b]) :] + on_leaf[b][: pick % len(on_leaf[b])]
                server = next((ep for ep in others if ep.host != client.host), others[0])
                hinted.append((k // spare if not per_host else k, client, server))
    elif pattern == "custom":
        if pairs_text is None:
            raise UsageError("custom sweep: give a pair file")
        listed = parse_pair_file(pairs_text, pairs_source, eps)
        fixed = all(r is not None for r, _, _ in listed)
        hinted = [(r if r is not None else 0, a, b) for r, a, b in listed]
    else:  # pragma: no cover - pairwise is made by _pairwise
        raise AssertionError(pattern)
    return PatternPairs(hinted, fixed, notes, coverage_bound)


def _leaf_spine_cables(cls: Classification, fabric: Fabric) -> set[Link]:
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


def _rounds_coverage(
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


# -- pairwise, bound and coverage: few Python steps per probe ------------------------------------
@dataclass(frozen=True)
class _Columns:
    """The pairwise probes as arrays, in plan order: round, client and server (ranks in ``ordered``)."""

    round: Any  # NDArray[np.int64]
    client: Any
    server: Any
    ordered: list[Endpoint]


def _pairwise(eps: Sequence[Endpoint], per_host: bool) -> tuple[list[Probe], _Columns]:
    """Every host pair once, by the circle method over the sorted hosts (n-1 rounds of n/2 pairs,
    a bye for an odd count; the pair's ends swap on odd rounds): each HCA of the second host is
    probed from the first host's HCA on its rail (its last, should it have two there), in round
    ``r`` (per host: ``r`` x rails + the rail's index). Made by whole arrays, in the plan's final
    order (round, then client and server in endpoint order): the rounds are index arithmetic."""
    import numpy as np

    ordered = sorted(eps)
    rank = _ranks(eps)
    names = sorted({ep.host for ep in eps})
    host_index = {host: i for i, host in enumerate(names)}
    rails = sorted({ep.rail for ep in eps})
    rail_index = {rail: i for i, rail in enumerate(rails)}
    size, n_rails = len(eps), len(rails)
    # the client side: endpoint rank by (host, rail), the last of a rail; row n: the bye
    at = np.full((len(names) + 1, n_rails), -1, dtype=np.int64)
    # the server side: each host's endpoints in order (rank, rail index), padded with -1
    slots: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for ep in eps:
        h, ri = host_index[ep.host], rail_index[ep.rail]
        at[h, ri] = rank[ep.guid]
        slots[h].append((rank[ep.guid], ri))
    width = max(len(v) for v in slots.values())
    server_rank = np.full((len(names) + 1, width), -1, dtype=np.int64)
    server_rail = np.zeros((len(names) + 1, width), dtype=np.int64)
    for h, mine in slots.items():
        server_rank[h, : len(mine)] = [r for r, _ in mine]
        server_rail[h, : len(mine)] = [ri for _, ri in mine]
    # _circle over the sorted hosts: position 0 stays, the others turn one step a round
    people = len(names) + len(names) % 2  # the bye is index len(names) when the count is odd
    turns = people - 1
    half = np.arange(people // 2)
    r = np.arange(turns)[:, None]

    def seat(j: Any) -> Any:
        return np.where(j == 0, 0, (j - 1 - r) % turns + 1)

    first, second = seat(half[None, :]), seat(people - 1 - half[None, :])
    odd = r % 2 == 1
    client_host, server_host = np.where(odd, second, first), np.where(odd, first, second)
    rail = server_rail[server_host]  # (rounds, pairs, slots)
    servers = server_rank[server_host]
    clients = at[client_host[:, :, None], rail]
    both = (clients >= 0) & (servers >= 0)
    rounds = np.broadcast_to(r[:, :, None], both.shape)[both]
    rail, client, server = rail[both], clients[both], servers[both]
    hint = rounds * n_rails + rail if per_host else rounds
    key = (hint * size + client) * size + server  # unique: (client, server) is one probe a round
    order = np.argsort(key, kind="stable")
    hint, client, server = hint[order], client[order], server[order]
    pick = ordered.__getitem__
    probes = list(map(Probe, map(pick, client.tolist()), map(pick, server.tolist()), hint.tolist()))
    return probes, _Columns(hint, client, server, ordered)


def _bound_columns(columns: _Columns, per_host: bool) -> tuple[int, str]:
    """The lower bound of the pairwise columns: the most probes one HCA (host) is in, degrees by
    ``bincount``; of the ends with the most, the one met first (client, then server, probe by
    probe), as :func:`_bound_counted` finds it."""
    import numpy as np

    eps = columns.ordered
    if not len(columns.round):
        return 0, "no probes"
    ends = np.empty(2 * len(columns.round), dtype=np.int64)
    ends[0::2], ends[1::2] = columns.client, columns.server
    names: list[str] = []
    if per_host:
        names = sorted({ep.host for ep in eps})
        host_of = {host: i for i, host in enumerate(names)}
        ends = np.array([host_of[ep.host] for ep in eps], dtype=np.int64)[ends]
    keys, first = np.unique(ends, return_index=True)
    degree = np.bincount(ends)[keys]
    most = int(degree.max())
    winner = int(keys[np.flatnonzero(degree == most)[np.argmin(first[degree == most])]])
    what = "host" if per_host else "HCA"
    name = names[winner] if per_host else eps[winner].label
    return most, f"max probes per {what} ({most}, {name}): one per round"


def _coverage_columns(
    fabric: Fabric, cls: Classification, updown: UpDown, columns: _Columns, eps: Sequence[Endpoint]
) -> Coverage:
    """The coverage (without routes) of the pairwise columns, as :func:`_coverage_by_round`
    counts it: rounds, rails, leaf ends and leaf pairs by ``unique``/``bincount``; a round's
    cables as the OR of its leaf pairs' bit masks."""
    import numpy as np

    cables = _leaf_spine_cables(cls, fabric)
    ordered = columns.ordered
    leaves = sorted({ep.leaf for ep in ordered if ep.leaf is not None})
    assert all(ep.leaf is not None for ep in ordered)
    leaf_index = {leaf: i for i, leaf in enumerate(leaves)}
    leaf_of = np.array([leaf_index[ep.leaf] for ep in ordered], dtype=np.int64)  # type: ignore[index]
    rails = sorted({ep.rail for ep in ordered})
    rail_of = np.array([rails.index(ep.rail) for ep in ordered], dtype=np.int64)
    rnd, client, server = columns.round, columns.client, columns.server
    rounds, counts = np.unique(rnd, return_counts=True)
    n_leaves, n_rails = len(leaves), len(rails)
    rail_keys = np.unique(rnd * n_rails + rail_of[client])
    rails_by_round: dict[int, list[int]] = defaultdict(list)
    for key in rail_keys.tolist():
        rails_by_round[key // n_rails].append(rails[key % n_rails])
    a_leaf, b_leaf = leaf_of[client], leaf_of[server]
    ends = np.bincount(a_leaf, minlength=n_leaves) + np.bincount(b_leaf, minlength=n_leaves)
    bit: dict[Link, int] = {}
    masks: dict[tuple[int, int], int] = {}
    crossed: dict[int, int] = defaultdict(int)
    for key in np.unique((rnd * n_leaves + a_leaf) * n_leaves + b_leaf).tolist():
        pair = (key // n_leaves % n_leaves, key % n_leaves)
        mask = masks.get(pair)
        if mask is None:
            a, b = leaves[pair[0]], leaves[pair[1]]
            mask = 0
            for lk in updown.uplinks(a, b) + updown.uplinks(b, a):
                mask |= 1 << bit.setdefault(lk, len(bit))
            masks[pair] = mask
        crossed[key // (n_leaves * n_leaves)] |= mask
    of_cables = 0
    for lk in cables:
        if lk in bit:
            of_cables |= 1 << bit[lk]
    everything = 0
    for mask in crossed.values():
        everything |= mask
    covered = {lk for lk, i in bit.items() if lk in cables and everything >> i & 1}
    end_count = dict(zip(leaves, ends.tolist(), strict=True))
    short = short_leaves(cls, cables, end_count)
    rails_total = tuple(sorted({ep.rail for ep in eps}))
    rails_covered = tuple(sorted({rail for got in rails_by_round.values() for rail in got}))
    return Coverage(
        from_routes=False,
        cables_total=len(cables),
        cables_covered=len(covered),
        uncovered=tuple(sorted(cables - covered, key=lambda lk: lk.key)),
        rails_total=rails_total,
        rails_covered=rails_covered,
        per_round=tuple(
            RoundCoverage(r, n, (crossed[r] & of_cables).bit_count(), tuple(sorted(rails_by_round[r])))
            for r, n in zip(rounds.tolist(), counts.tolist(), strict=True)
        ),
        short_leaves=short,
        unroutable=(),
    )


def _bound_counted(probes: Sequence[Probe], per_host: bool) -> tuple[int, str]:
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


def _coverage_by_round(
    fabric: Fabric,
    cls: Classification,
    updown: UpDown,
    probes: Sequence[Probe],
    routes: ForwardingTables | None,
    eps: Sequence[Endpoint],
) -> tuple[Coverage, dict[tuple[Guid, Guid], tuple[Link, ...]]]:
    """What the probes cross, per round and in all: from the routes when given, else every
    leaf-spine cable on a shortest up/down path between the two ends' leaves; probes are taken a
    round at a time (any order; the plan's is by round), sets and counts built by C-level
    iteration over the round's ends instead of a few dict steps per probe."""
    from collections import Counter
    from itertools import groupby
    from operator import attrgetter

    cables = _leaf_spine_cables(cls, fabric)
    paths: dict[tuple[Guid, Guid], tuple[Link, ...]] = {}
    unroutable: list[str] = []
    if routes is not None:
        found = all_paths(fabric, routes, [(p.client.guid, p.server.guid) for p in probes])
        for key, got in found.items():
            if isinstance(got, RouteError):
                unroutable.append(f"{key[0]} -> {key[1]}: {got}")
            else:
                paths[key] = tuple(got)
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
        if routes is not None:
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
    cov = _rounds_coverage(
        cls,
        cables,
        routes is not None,
        per_round,
        rails_by_round,
        count_by_round,
        ends,
        rails_total,
        unroutable,
    )
    return cov, paths


# -- re-test of outliers (ClusterKit) -----------------------------------------------------------
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
