"""Rails: whether most multi-HCA hosts spread their HCAs over the leaves by index, and which HCA
index each rail leaf carries."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from topology.model import Guid


def find_rails(
    on_leaves_by_host: Mapping[str, Sequence[tuple[int | None, Guid]]],
) -> tuple[tuple[int, ...], dict[Guid, int]]:
    """Rail-optimized when most multi-HCA hosts spread their HCAs over leaves by index: most
    leaves carry one HCA index of those hosts, most multi-HCA hosts follow those rails, and
    they hold a fair share of the fabric's host HCAs (two service hosts with HCA-1 and HCA-2 on
    two leaves do not make a fabric of single-HCA nodes rail-optimized). A host with all its
    HCAs on one leaf is not spread and counts against.

    ``on_leaves_by_host``: every named host's HCAs on leaves, (HCA index, leaf) each."""
    on_leaves = sum(map(len, on_leaves_by_host.values()))
    placed = {host: mine for host, mine in on_leaves_by_host.items() if len(mine) >= 2}
    spread = {h: mine for h, mine in placed.items() if len({leaf for _, leaf in mine}) >= 2}
    per_leaf: dict[Guid, Counter[int]] = defaultdict(Counter)
    for mine in spread.values():
        for index, leaf in mine:
            if index is not None:
                per_leaf[leaf][index] += 1
    dominant: dict[Guid, int] = {}
    aligned = 0
    for leaf, counts in per_leaf.items():
        index, count = counts.most_common(1)[0]
        if count * 2 > sum(counts.values()):
            dominant[leaf] = index
        if count * 4 >= 3 * sum(counts.values()):
            aligned += 1
    distinct = sorted(set(dominant.values()))
    if len(per_leaf) < 2 or len(distinct) < 2 or aligned * 4 < 3 * len(per_leaf):
        return (), {}
    following = [
        mine
        for mine in spread.values()
        if 4 * sum(1 for index, leaf in mine if index is not None and dominant.get(leaf) == index)
        >= 3 * len(mine)
    ]
    if 2 * len(following) <= len(placed) or 4 * sum(map(len, following)) < on_leaves:
        return (), {}
    index_rail = {idx: r for r, idx in enumerate(distinct)}
    return tuple(distinct), {leaf: index_rail[idx] for leaf, idx in dominant.items()}
