"""The compute fabric and its side groups: which switches belong to which, and their tiers.

A management, storage or service group is often attached to a compute fabric: its own leaves
and spines, cabled to a few of the compute fabric's spines or cores. Counting tiers over the
whole fabric would put it under the compute tiers (a 3-tier fabric with "tier 5" switches) or
compare its leaves with 200 compute leaves. So the fabric is split first:

* **pods**: leaves (switches with hosts) joined with the switches they are cabled to directly,
  one tier up (and with other leaves they are cabled to);
* **cores**: the switches above the pods. A pod is part of the compute fabric when it reaches
  at least half as many cores as the best-connected pod, with more than a third as many cables
  and more than half as many per switch cabled to a core (compute spines carry many core
  cables each; a side group's spines one or two); with no cores at all (two tiers), the pod
  with the most host HCAs is. Every other pod cabled to them is a **side group**; a pod cabled
  to nothing else is a piece of a partial capture (a ``-p`` excerpt), part of the compute
  fabric. Cores belong to the section whose switches below them have most cables to them.
* **tiers** are then counted within each section from its own leaves (1 leaf, 2 spine, 3 core).
  A core joins pods; a switch over one pod only, or above the cores (a spare chained to a core,
  a group whose hosts are all gone), lies on no path between two leaves and is *hostless*: no
  tier, rather than "tier 5".

Limits: a side group whose own leaves are cabled straight to compute spines (no spines of its
own) is one pod with the compute fabric, and is judged with it.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from topology.model import Guid

COMPUTE, SIDE = "compute", "side"
_COMPUTE_TIERS = {0: "hca", 1: "leaf", 2: "spine", 3: "core"}
HOSTLESS = "hostless"


@dataclass(frozen=True)
class Section:
    """The compute fabric (index 0) or one side group, with its sizes."""

    index: int
    kind: str  # compute | side
    name: str  # "compute", "side group 1"
    switches: tuple[Guid, ...]
    leaves: int
    hosts: int
    hcas: int
    depth: int  # the deepest tier of its design: 1 one leaf, 2 leaf-spine, 3 with cores


def tier_name(kind: str, tier: int | None) -> str:
    """``leaf``/``spine``/``core`` in the compute fabric, ``side leaf``... in a side group,
    ``hostless`` for a switch no leaf of its section sits under."""
    if tier is None:
        return HOSTLESS
    name = _COMPUTE_TIERS.get(tier, f"tier{tier}")
    return name if kind == COMPUTE or tier == 0 else f"side {name}"


def split_sections(
    switch_far: Mapping[Guid, list[Guid]],
    tiers: Mapping[Guid, int],
    hcas_on: Mapping[Guid, int],
    adjust: Callable[[Mapping[Guid, list[Guid]], dict[Guid, int]], None],
) -> tuple[dict[Guid, int], dict[Guid, int], list[str]]:
    """(section per switch, tier per switch, kind per section) from the whole-fabric tiers
    (``tiers``: 1 for leaves, breadth-first distance above, already fixed by ``adjust``).
    ``hcas_on``: host HCAs per leaf; ``adjust`` fixes a section's own tiers in place (hostless
    leaves, see topology.classify)."""
    switches = switch_far.keys()
    parent: dict[Guid, Guid] = {g: g for g in switches}

    def find(x: Guid) -> Guid:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    leaves = [g for g, t in tiers.items() if t == 1]
    low = {g for g, t in tiers.items() if t <= 2}  # leaves and the switches one tier up
    in_pod: set[Guid] = set(leaves)
    for leaf in leaves:
        # Set operations at C level: this runs over every leaf port.
        near = low.intersection(switch_far[leaf])
        in_pod |= near
        root = find(leaf)
        for far in near:
            r = find(far)
            if r != root:
                parent[r] = root
    pods: dict[Guid, list[Guid]] = {}
    for g in in_pod:
        pods.setdefault(find(g), []).append(g)
    if len(pods) <= 1:
        # One pod (the common case): a single section; only the design depth is checked.
        single = dict.fromkeys(switches, 0)
        pod_of = dict.fromkeys(in_pod, Guid(""))
        return single, _design_tiers(switch_far, dict(tiers), pod_of, single, None), [COMPUTE]
    uppers = [g for g in switches if g not in in_pod]
    upper_set = set(uppers)
    is_upper = upper_set.__contains__
    member_of = {g: root for root, members in pods.items() for g in members}
    up_cables: dict[Guid, int] = dict.fromkeys(pods, 0)
    up_switches: dict[Guid, int] = dict.fromkeys(pods, 0)
    reached: dict[Guid, set[Guid]] = {root: set() for root in pods}
    for g, root in member_of.items():
        if tiers.get(g) == 1:
            continue  # a leaf's switch neighbours are all in its pod
        ups = list(filter(is_upper, switch_far[g]))
        if ups:
            up_cables[root] += len(ups)
            up_switches[root] += 1
            reached[root].update(ups)
    reach = {root: len(r) for root, r in reached.items()}
    # Cables to the cores per pod switch that has any: a compute spine's dozens, a side
    # group's spine's one or two.
    per_switch = {root: up_cables[root] / max(1, up_switches[root]) for root in pods}
    best, most, thickest = max(reach.values()), max(up_cables.values()), max(per_switch.values())
    if best:
        # A compute pod reaches most cores with many cables from each of its spines (a partly
        # built one at least a third of the best-cabled pod's cables); a side group reaches a
        # few cores, or all of them with a cable or two per spine.
        main = {
            root
            for root, n in reach.items()
            if 2 * n >= best and 3 * up_cables[root] > most and 2 * per_switch[root] > thickest
        }
    else:
        weight = {root: sum(hcas_on.get(g, 0) for g in members) for root, members in pods.items()}
        main = {max(pods, key=lambda root: (weight[root], len(pods[root]), root))}
    # A side group is attached: a pod with no cable out of itself is a piece of a partial
    # capture (a -p excerpt), judged with the compute fabric.
    side_roots = sorted(
        (
            root
            for root in pods
            if root not in main
            and (
                reach[root] or any(member_of.get(f, root) != root for g in pods[root] for f in switch_far[g])
            )
        ),
        key=lambda r: min(pods[r]),
    )
    if not side_roots:
        single = dict.fromkeys(switches, 0)
        return single, _design_tiers(switch_far, dict(tiers), member_of, single, None), [COMPUTE]
    index = dict.fromkeys(pods, 0) | {r: i + 1 for i, r in enumerate(side_roots)}
    section: dict[Guid, int] = {g: index[root] for g, root in member_of.items()}
    # Switches above the pods, lowest first: the section of most of their cables down.
    for u in sorted(uppers, key=lambda g: (tiers.get(g, 1 << 30), g)):
        t = tiers.get(u)
        votes = Counter(
            section[f]
            for f in switch_far[u]
            if f in section and f != u and (t is None or tiers.get(f, 0) < t)
        )
        section[u] = min(votes, key=lambda s: (-votes[s], s)) if votes else 0
    kinds = [COMPUTE] + [SIDE] * len(side_roots)
    per_section: dict[Guid, int] = {}
    for s in range(len(kinds)):
        mine = {g for g, x in section.items() if x == s}
        start = [g for g in leaves if g in mine]
        per_section.update(
            _design_tiers(switch_far, _bfs(switch_far, mine, start), member_of, section, adjust)
        )
    return section, per_section, kinds


def _bfs(switch_far: Mapping[Guid, list[Guid]], mine: set[Guid], start: list[Guid]) -> dict[Guid, int]:
    """Tiers within one section: 1 for its leaves, breadth-first distance over its own cables."""
    tiers = dict.fromkeys(start, 1)
    queue = deque(sorted(start))
    while queue:
        g = queue.popleft()
        t = tiers[g] + 1
        for f in switch_far[g]:
            if f in mine and f not in tiers:
                tiers[f] = t
                queue.append(f)
    return tiers


def _design_tiers(
    switch_far: Mapping[Guid, list[Guid]],
    tiers: dict[Guid, int],
    pod_of: Mapping[Guid, Guid],
    section: Mapping[Guid, int],
    adjust: Callable[[Mapping[Guid, list[Guid]], dict[Guid, int]], None] | None,
) -> dict[Guid, int]:
    """``tiers`` (fixed by ``adjust`` first, when given) without the switches above their section's design. Leaves and spines are the
    pods'; a core joins pods (its spines below are of two pods or more): a switch over one pod
    only, or anything higher than a core, lies on no shortest path between two leaves, so it is
    hostless (dropped): a spare chained to a core, a side group whose hosts are all gone, cores
    cabled for pods not built yet. (Four-tier fat trees are not recognised.)"""
    if adjust is not None:
        adjust(switch_far, tiers)
    out = {g: t for g, t in tiers.items() if t <= 2}
    spines = {g for g, t in out.items() if t == 2 and g in pod_of}
    for g, t in tiers.items():
        if t == 3:
            below = spines.intersection(switch_far[g])  # C level: a core has many ports
            pods = {pod_of[f] for f in below if section[f] == section[g]}
            if len(pods) >= 2:
                out[g] = t
    return out
