"""Pods: leaves that reach the same upper switches, and whether they are the fabric's groups.

A pod is a block of leaves cabled to the same switches one tier up: the leaves under one set of
spines in a three-tier fat tree, or the leaves cabled to the same line boards of a fabric's
director chassis. Each leaf's *uppers* are the switches of a higher tier it has a cable to.
Leaves with the same uppers are one pod; a leaf whose uppers differ (a cable missing, or
miswired to another pod's spine) joins the pod holding most of its uppers, so one fault does
not split a pod. A leaf cabled to no higher switch is in no pod.

Pods and scalable units are two readings of the same leaves: a *unit* is leaves that share
their hosts (the rail leaves of a SuperPOD scalable unit, a leaf pair), a pod is leaves that
share their uppers. The fabric's groups are its units where most leaves share hosts with
another leaf (rail and dual-rail fabrics: a unit is where a job's ranks talk through one leaf
hop), and its pods everywhere else (every leaf's hosts its own: a fat tree, leaves under
directors), where one group per leaf would say nothing. Either way every group names the pod
its leaves are in.

>>> from topology.model import Guid
>>> pods = cluster_pods({Guid("0xa"): frozenset({"s1", "s2"}), Guid("0xb"): frozenset({"s1", "s2"}),
...                      Guid("0xc"): frozenset({"s3"})})
>>> [sorted(p) for p in pods]
[['0xa', '0xb'], ['0xc']]
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from operator import itemgetter

from topology.model import Fabric, Guid
from topology.naming import switch_name


class GroupKind(StrEnum):
    """What a fabric's groups are (Classification.group_kind)."""

    UNIT = "unit"  # leaves that share their hosts (scalable units, leaf pairs), or a leaf alone
    POD = "pod"  # leaves that reach the same upper switches


@dataclass(frozen=True)
class Pod:
    """Leaves that reach the same upper switches; ``uppers`` are the switches they share (the
    set most of its leaves reach: one leaf's missing cable does not narrow it)."""

    index: int
    leaves: tuple[Guid, ...]
    uppers: tuple[Guid, ...]
    hosts: tuple[str, ...] = ()  # the hosts on its leaves


def leaf_uppers(
    fabric: Fabric, leaves: Sequence[Guid], tiers: Mapping[Guid, int]
) -> dict[Guid, frozenset[Guid]]:
    """Each leaf's switches of a higher tier (tier above 1) it has a cable to."""
    # C-level over each leaf's ports (map and filter: 16k ports at 8k HCAs); a neighbour is a
    # (port, far end, link) tuple and a far end a (guid, port) tuple.
    upper = {g for g, t in tiers.items() if t > 1}
    return {
        leaf: frozenset(filter(upper.__contains__, map(_GUID, map(_FAR, fabric.neighbours(leaf)))))
        for leaf in leaves
    }


_FAR, _GUID = itemgetter(1), itemgetter(0)


def cluster_pods(uppers: Mapping[Guid, frozenset[Guid]]) -> list[list[Guid]]:
    """Leaves grouped into pods by their uppers (leaves with none are left out), each pod's
    leaves in the order given, pods in the order of their first leaf.

    The most common upper sets found the pods (ties: the larger set first); every other set
    joins the pod that holds more than half of its switches (the most of them, then the larger
    pod), else founds a pod of its own."""
    leaves_of: dict[frozenset[Guid], list[Guid]] = defaultdict(list)
    for leaf, ups in uppers.items():
        if ups:
            leaves_of[ups].append(leaf)
    order = sorted(leaves_of, key=lambda s: (-len(leaves_of[s]), -len(s), sorted(s)))
    founders: list[frozenset[Guid]] = []
    size: list[int] = []
    holding: dict[Guid, list[int]] = defaultdict(list)  # upper switch -> pods founded on it
    pod_of: dict[frozenset[Guid], int] = {}
    for ups in order:
        hits = Counter(p for up in ups for p in holding.get(up, ()))
        best = max(hits, key=lambda p: (hits[p], size[p], -p), default=None)
        if best is not None and 2 * hits[best] > len(ups):
            pod_of[ups] = best
            size[best] += len(leaves_of[ups])
            continue
        pod_of[ups] = len(founders)
        for up in ups:
            holding[up].append(len(founders))
        founders.append(ups)
        size.append(len(leaves_of[ups]))
    members: dict[int, list[Guid]] = defaultdict(list)
    for leaf, ups in uppers.items():
        if ups:
            members[pod_of[ups]].append(leaf)
    return list(members.values())


def pod_uppers(pod: Collection[Guid], uppers: Mapping[Guid, frozenset[Guid]]) -> set[Guid]:
    """The upper switches more than half of ``pod``'s leaves reach."""
    counts = Counter(up for leaf in pod for up in uppers[leaf])
    return {up for up, n in counts.items() if 2 * n > len(pod)}


def find_pods(
    fabric: Fabric, leaves: Sequence[Guid], tiers: Mapping[Guid, int], leaf_hosts: Mapping[Guid, set[str]]
) -> tuple[Pod, ...]:
    """The pods of ``leaves`` (``tiers``: each switch's tier; ``leaf_hosts``: each leaf's hosts),
    in the order of their first leaf's name; leaves and uppers in description order."""
    uppers = leaf_uppers(fabric, leaves, tiers)

    def by_desc(gs: Iterable[Guid]) -> tuple[Guid, ...]:
        return tuple(sorted(gs, key=lambda g: fabric.nodes[g].description))

    ordered = sorted(cluster_pods(uppers), key=lambda ls: group_sort_key(fabric, ls))
    return tuple(
        Pod(
            i,
            by_desc(ls),
            by_desc(pod_uppers(ls, uppers)),
            tuple(sorted({h for x in ls for h in leaf_hosts[x]})),
        )
        for i, ls in enumerate(ordered)
    )


def group_sort_key(fabric: Fabric, leaves: Iterable[Guid]) -> str:
    """Groups and pods are listed by the first of their leaves' names."""
    return min(switch_name(fabric.nodes[g].description) for g in leaves)


def most_in(leaves: Iterable[Guid], leaf_pod: Mapping[Guid, int]) -> int | None:
    """The pod most of ``leaves`` are in (the lower on a tie), None when none is in a pod."""
    counts = Counter(leaf_pod[leaf] for leaf in leaves if leaf in leaf_pod)
    return min(counts, key=lambda p: (-counts[p], p)) if counts else None


def pods_are_groups(unit_sizes: Sequence[int], pods: Sequence[Pod]) -> bool:
    """Whether the fabric's groups are its pods rather than its units: there are pods, and
    fewer than half of the leaves share hosts with another leaf (``unit_sizes``: leaves per
    unit, a leaf alone counting as a unit of one)."""
    shared = sum(n for n in unit_sizes if n > 1)
    return bool(pods) and 2 * shared < sum(unit_sizes)
