"""The tree a scheduler sees: one switch per node at level 0, real switches above.

Slurm's ``topology/tree`` (and topograph's tier labels) need exactly one lowest switch per node.
In a rail-optimized fabric a node is cabled to every rail leaf of its scalable unit, and any two
nodes of a unit talk rail to rail through one leaf hop, so the *unit* is the node's switch
(``su01``) and the real spines sit above the units. Elsewhere the node's switch is its leaf (the
leaf of its first HCA when it has several). Above level 0 come the real switches, tier by tier, each
listing the level below that it is cabled to (a switch may have several parents, as Slurm allows).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from fabric.placement import Sites, host_sites
from probes.inventory import fold_names, host_sort_key
from topology.classify import Classification
from topology.model import Fabric, Guid

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_LEVEL_PREFIX = {1: "spines", 2: "cores"}


@dataclass(frozen=True, slots=True)
class TreeSwitch:
    name: str
    level: int
    nodes: tuple[str, ...] = ()  # level 0: hosts
    children: tuple[str, ...] = ()  # level >= 1: names one level down
    guids: tuple[Guid, ...] = ()  # the real switches it stands for


@dataclass(frozen=True)
class SchedulerTree:
    levels: tuple[tuple[TreeSwitch, ...], ...]  # levels[0] = the nodes' switches
    host_switch: Mapping[str, str]  # host -> its level-0 switch
    host_tiers: Mapping[str, tuple[str, ...]]  # host -> tier-0, tier-1, ... values (names of sets)
    sites: Sites
    source: str


def fold(names: Iterable[str]) -> str:
    """A host list Slurm reads: ranges only on the last number (``dgx-[0001-0032]``)."""
    return fold_names(names, last_number_only=True)


def switch_names(fabric: Fabric, cls: Classification) -> dict[Guid, str]:
    """Unique names made of ``[A-Za-z0-9_.-]``; a name two switches share gets a GUID suffix."""
    base = {}
    for g, c in cls.nodes.items():
        if fabric.nodes[g].kind.value == "switch":
            base[g] = _UNSAFE.sub("-", c.name).strip("-._") or "switch"
    dup = Counter(base.values())
    return {g: f"{n}-{g[-6:]}" if dup[n] > 1 else n for g, n in base.items()}


def build_tree(fabric: Fabric, cls: Classification, sites: Sites | None = None) -> SchedulerTree:
    sites = sites or host_sites(fabric, cls)
    names = switch_names(fabric, cls)
    members: dict[str, list[str]] = defaultdict(list)
    under: dict[str, set[Guid]] = defaultdict(set)
    host_switch: dict[str, str] = {}
    for host, s in sites.hosts.items():
        if sites.rail_optimized:
            sw = sites.unit_names[s.unit]
            under[sw].update(s.leaves)
            if s.unit >= 0:
                under[sw].update(cls.groups[s.unit].leaves)
        else:
            first = s.rail_leaves[0][1]
            sw = names[first]
            under[sw].add(first)
        members[sw].append(host)
        host_switch[host] = sw
    level0 = tuple(
        TreeSwitch(sw, 0, nodes=tuple(hs), guids=tuple(sorted(under[sw])))
        for sw, hs in sorted(members.items(), key=lambda kv: host_sort_key(kv[0]))
    )
    levels = [level0]
    reach: dict[str, list[frozenset[str]]] = {sw.name: [] for sw in level0}  # level-0 name -> per level
    current = level0
    while current:
        tier = len(levels) + 1
        ups: dict[str, set[Guid]] = {}
        for item in current:
            ups[item.name] = {
                Guid(far.guid)
                for g in item.guids
                for _, far, _ in fabric.neighbours(g)
                if cls.nodes[Guid(far.guid)].tier == tier
            }
        above = sorted(set().union(*ups.values()), key=lambda g: host_sort_key(names[g]))
        if not above:
            break
        nxt = tuple(
            TreeSwitch(
                names[g],
                len(levels),
                children=tuple(item.name for item in current if g in ups[item.name]),
                guids=(g,),
            )
            for g in above
        )
        for sw0 in level0:
            below = reach[sw0.name][-1] if reach[sw0.name] else frozenset({sw0.name})
            reach[sw0.name].append(
                frozenset(names[g] for item in current if item.name in below for g in ups[item.name])
            )
        levels.append(nxt)
        current = nxt
    host_tiers = _tier_values(host_switch, reach)
    return SchedulerTree(
        tuple(levels),
        MappingProxyType(host_switch),
        MappingProxyType(host_tiers),
        sites,
        fabric.source,
    )


def _tier_values(
    host_switch: Mapping[str, str], reach: Mapping[str, list[frozenset[str]]]
) -> dict[str, tuple[str, ...]]:
    """tier-0 is the node's switch; tier-k names the set of level-k switches above it (a single
    switch by its own name, a set as ``spines-01``, ``cores-01`` ... in order of their members)."""
    set_names: dict[int, dict[frozenset[str], str]] = defaultdict(dict)
    depth = max((len(v) for v in reach.values()), default=0)
    for k in range(depth):
        sets = {v[k] for v in reach.values() if len(v) > k and v[k]}
        multi = sorted((s for s in sets if len(s) > 1), key=lambda s: sorted(s, key=host_sort_key))
        for s in sets:
            if len(s) == 1:
                set_names[k][s] = next(iter(s))
        for i, s in enumerate(multi, 1):
            set_names[k][s] = f"{_LEVEL_PREFIX.get(k + 1, f'tier{k + 1}')}-{i:02d}"
    out = {}
    for host, sw in host_switch.items():
        path = [sw]
        for k, s in enumerate(reach[sw]):
            if not s:
                break
            path.append(set_names[k][s])
        out[host] = tuple(path)
    return out
