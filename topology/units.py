"""Groups of leaves: scalable units (leaves that serve the same hosts) where most leaves share
hosts, else the pods (topology.pods)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from itertools import combinations

from topology.classification import Group
from topology.model import Fabric, Guid
from topology.pods import GroupKind, Pod, find_pods, group_sort_key, most_in, pods_are_groups


def find_groups(
    fabric: Fabric,
    tiers: Mapping[Guid, int],
    leaf_hosts: Mapping[Guid, set[str]],
    leaf_rail: Mapping[Guid, int],
) -> tuple[tuple[Group, ...], dict[Guid, int], tuple[Pod, ...], GroupKind]:
    """(groups, group per leaf, pods, what the groups are): units where most leaves share
    hosts, else the pods (topology.pods). ``leaf_hosts``: every leaf (tier 1), in GUID order,
    and the named hosts cabled to it."""
    leaves = list(leaf_hosts)
    parent = {leaf: leaf for leaf in leaves}

    def find(x: Guid) -> Guid:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    # Two leaves are in one unit when they share at least half of the smaller one's hosts,
    # so a single miswired cable to another unit's leaf does not merge two units.
    by_host: dict[str, list[Guid]] = defaultdict(list)
    for leaf, served in leaf_hosts.items():
        for h in served:
            by_host[h].append(leaf)
    shared: Counter[tuple[Guid, Guid]] = Counter()
    for ls in by_host.values():
        shared.update(combinations(sorted(ls), 2))
    for (a, b), n in shared.items():
        if 2 * n >= min(len(leaf_hosts[a]), len(leaf_hosts[b])):
            parent[find(a)] = find(b)
    units: dict[Guid, list[Guid]] = defaultdict(list)
    for leaf in leaves:
        units[find(leaf)].append(leaf)

    def key(ls: list[Guid]) -> str:
        return group_sort_key(fabric, ls)

    pods = find_pods(fabric, leaves, tiers, leaf_hosts)
    leaf_pod = {leaf: p.index for p in pods for leaf in p.leaves}
    kind = GroupKind.POD if pods_are_groups([len(u) for u in units.values()], pods) else GroupKind.UNIT
    if kind is GroupKind.POD:
        alone = sorted(([leaf] for leaf in leaves if leaf not in leaf_pod), key=key)
        ordered = [list(p.leaves) for p in pods] + alone
    else:
        ordered = sorted(units.values(), key=key)
    groups: list[Group] = []
    leaf_group: dict[Guid, int] = {}
    for i, ls in enumerate(ordered):
        hs: set[str] = set()
        for leaf in ls:
            hs |= leaf_hosts[leaf]
            leaf_group[leaf] = i
        rails = tuple(sorted({leaf_rail[leaf] for leaf in ls if leaf in leaf_rail}))
        leaves_by_desc = tuple(sorted(ls, key=lambda g: fabric.nodes[g].description))
        groups.append(Group(i, leaves_by_desc, tuple(sorted(hs)), rails, most_in(ls, leaf_pod)))
    return tuple(groups), leaf_group, pods, kind
