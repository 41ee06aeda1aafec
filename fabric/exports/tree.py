"""The tree a scheduler sees: one switch per node at level 0, real switches above.

Slurm's ``topology/tree`` (and topograph's tier labels) need exactly one lowest switch per node.
In a rail-optimized fabric a node is cabled to every rail leaf of its scalable unit, and any two
nodes of a unit talk rail to rail through one leaf hop, so the *unit* is the node's switch
(``su01``) and the real spines sit above the units. Elsewhere the node's switch is its leaf (the
leaf of its first HCA when it has several). Above level 0 come the real switches, tier by tier, each
listing the level below that it is cabled to (a switch may have several parents, as Slurm allows).

Where the fabric's groups are pods (topology.pods) and it has several, the level above the leaves
is the pods (``pod01``: the upper switches its leaves share), so a job inside one pod is known to
stay below one set of spines or line boards. A director chassis is one switch, named after it,
standing for all its boards (topology.chassis): its line and fabric boards are one box, not
two tiers of switches.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from fabric.placement import Sites, host_sites, unit_name
from probes.inventory import fold_names, host_sort_key
from topology.chassis import Chassis, board_chassis, find_chassis
from topology.classify import Classification, GroupKind
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


def build_tree(
    fabric: Fabric,
    cls: Classification,
    sites: Sites | None = None,
    chassis: Sequence[Chassis] | None = None,
) -> SchedulerTree:
    """``chassis``: the fabric's director chassis, found here when not given."""
    sites = sites or host_sites(fabric, cls)
    names = switch_names(fabric, cls)
    boxes = board_chassis(find_chassis(fabric, cls) if chassis is None else chassis)
    box_names = _chassis_names(boxes.values(), set(names.values()))
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
    placed: set[Guid] = set()  # switches a chassis or a pod above has stood for already
    tier = 1
    # A vertex above level 0 is one switch, or a whole chassis (by its name, all its boards).
    vertex: dict[Guid, tuple[str, tuple[Guid, ...]]] = {
        g: (box_names[box.guid], box.boards) for g, box in boxes.items()
    }
    pods = cls.pods if not sites.rail_optimized and cls.group_kind is GroupKind.POD else ()
    if len(pods) > 1:
        # The level above the leaves: each leaf under its own pod, the pod standing for the
        # upper switches its leaves share.
        leaf_pod = {leaf: p for p in pods for leaf in p.leaves}
        ups = {
            item.name: {unit_name(cls, leaf_pod[g].index) for g in item.guids if g in leaf_pod}
            for item in current
        }
        found = {unit_name(cls, p.index): p.uppers for p in pods}
        current = _level(current, ups, found, len(levels), levels, reach, level0)
        placed.update(up for p in pods for up in p.uppers)
        tier += 1
    while current:
        tier += 1
        ups = {}
        found = {}
        for item in current:
            ups[item.name] = set()
            for g in item.guids:
                for _, far, _ in fabric.neighbours(g):
                    up = Guid(far.guid)
                    if up in placed or cls.nodes[up].tier != tier:
                        continue
                    name, guids = vertex.get(up, (names[up], (up,)))
                    ups[item.name].add(name)
                    found[name] = guids
        current = _level(current, ups, found, len(levels), levels, reach, level0)
        placed.update(g for guids in found.values() for g in guids)
    host_tiers = _tier_values(host_switch, reach)
    return SchedulerTree(
        tuple(levels),
        MappingProxyType(host_switch),
        MappingProxyType(host_tiers),
        sites,
        fabric.source,
    )


def _level(
    current: tuple[TreeSwitch, ...],
    ups: Mapping[str, set[str]],
    found: Mapping[str, tuple[Guid, ...]],
    level: int,
    levels: list[tuple[TreeSwitch, ...]],
    reach: dict[str, list[frozenset[str]]],
    level0: tuple[TreeSwitch, ...],
) -> tuple[TreeSwitch, ...]:
    """The next level up (``found``: name -> the switches it stands for; ``ups``: each current
    item's parents), appended to ``levels``, each level-0 switch's reach extended; () when
    nothing is above."""
    if not found:
        return ()
    nxt = tuple(
        TreeSwitch(
            name,
            level,
            children=tuple(item.name for item in current if name in ups[item.name]),
            guids=found[name],
        )
        for name in sorted(found, key=host_sort_key)
    )
    for sw0 in level0:
        below = reach[sw0.name][-1] if reach[sw0.name] else frozenset({sw0.name})
        reach[sw0.name].append(
            frozenset(name for item in current if item.name in below for name in ups[item.name])
        )
    levels.append(nxt)
    return nxt


def _chassis_names(chassis: Iterable[Chassis], taken: set[str]) -> dict[Guid, str]:
    """A name per chassis, safe as the switch names are: the name its boards share, else
    ``chassis-`` and its GUID's tail; one a switch already has gets the GUID tail too."""
    out: dict[Guid, str] = {}
    for box in {c.guid: c for c in chassis}.values():
        name = _UNSAFE.sub("-", box.name).strip("-._")
        if not name or name in taken or name in out.values():
            name = f"{name or 'chassis'}-{box.guid[-6:]}"
        out[box.guid] = name
    return out


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
