"""The patterns' pairs: ``rail-pairs`` (layers of the circle method per rail), ``leaf-pairs``,
a ``custom`` file, and :func:`schedule`, which gives each pair its round. Pure. (``pairwise`` is
made by whole arrays: :mod:`probes.plan_pairwise`.) The rules are in :mod:`probes.plan`'s docstring."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probes.pairs import Endpoint, Probe, parse_pair_file
from probes.plan_coverage import coverage_by_round
from topology.classify import Classification
from topology.errors import UsageError
from topology.model import Fabric, Guid
from topology.routes import UpDown

if TYPE_CHECKING:
    from topology.route_pairs import PairRoutes


def circle(items: Sequence[Any]) -> list[list[tuple[Any, Any]]]:
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
    schedule = circle(leaves)
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


@dataclass(frozen=True)
class PatternPairs:
    """A non-pairwise pattern's pairs, each with the round it hints at (rounds are resolved by
    :func:`schedule`), and what the pattern adds to the plan."""

    hinted: list[tuple[int, Endpoint, Endpoint]]
    fixed: bool  # a custom file numbered every pair's round: a clash is an error, not moved
    notes: list[str]
    coverage_bound: tuple[int, str]  # (0, "") or rail-pairs' rounds for the worst leaf's uplinks


def pattern_pairs(
    fabric: Fabric,
    cls: Classification,
    pattern: str,
    eps: Sequence[Endpoint],
    updown: UpDown,
    router: PairRoutes | None,
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
        if router is not None:
            extra = 0
            while extra < max_extra_layers:
                planned = schedule(hinted, per_host)
                if not coverage_by_round(fabric, cls, updown, planned, router, eps)[0].uncovered:
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
        for k, matching in enumerate(circle(all_leaves)):
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
