"""Classify a discovered fabric: switch tiers, hosts and HCA index, rails, groups, uplinks.

Everything is derived from the cabling and the node descriptions, never from switch names:

* **tier**: HCAs are tier 0; a switch with a host HCA is a leaf (1); other switches are counted up
  from the leaves by breadth-first search (2 spine, 3 core) within their section: the compute
  fabric or a side group (topology.sections); a switch above its section's design is hostless.
* **host / HCA index** from NodeDescription in every naming habit (topology.naming):
  ``dgx-0042 mlx5_3`` (index 3), ``node01 HCA-1`` (1-based, index 0), ``host/mlx5_3``,
  ``host ib1``, ``host ibp11s0f0`` (index: PCI order in the host's layout). Descriptions without
  a real host name (``localhost``, ``ubuntu``, a bare adapter model such as ``MT4129 ConnectX7
  Mellanox Technologies``) are *unnamed*: they are never merged into one host. SHARP aggregation
  nodes and switch management ports are not hosts.
* **rails**: a fabric is rail-optimized when most multi-HCA hosts of the compute fabric spread
  their HCAs over its leaves by index (see :func:`_rails`). Rails are numbered 0.. in the order
  of the HCA indexes they carry, so a DGX H100 using mlx5_0,3,4,5,6,9,10,11 still has rails
  0-7. Rail leaves of one scalable unit stay separate vertices (unlike topograph, which merges
  them).
* **groups**: leaves that serve the same hosts (a scalable unit) where most leaves share hosts;
  elsewhere pods, leaves that reach the same upper switches (topology.pods).

>>> from topology.model import Fabric
>>> parse_hca_description("dgx-0042 mlx5_3")
('dgx-0042', 'mlx5_3', 3)
>>> parse_hca_description("node01 HCA-1")
('node01', 'HCA-1', 0)
"""

from __future__ import annotations

import operator
import re
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import combinations, filterfalse
from types import MappingProxyType

from topology._speed import fast_init, gc_paused
from topology.boards import boards_over_leaves, chassis_boards
from topology.hostroles import HostRole, decide_roles, service_leaves
from topology.model import Fabric, Guid, Node, NodeKind
from topology.naming import (
    PciKey,
    adapter_index,
    host_spellings,
    parse_hca_description,
    pci_indexes,
    pci_key,
    switch_display_name,
    switch_name,
)
from topology.pods import GroupKind, Pod, find_pods, group_sort_key, most_in, pods_are_groups
from topology.sections import COMPUTE, SIDE, Section, split_sections, tier_name

__all__ = [
    "Classification",
    "Group",
    "GroupKind",
    "NodeClass",
    "Pod",
    "Role",
    "Section",
    "classify",
    "parse_hca_description",
    "switch_name",
]

_SWITCH_DESC = re.compile(r"^MF0;|\bswitch\b", re.IGNORECASE)
# ";...:<model code>" (MF0;leaf-01:MQM9700/U1): looked for after the first ';' only (one pass; a
# ';.*:' pattern is retried from every ';' to the end of the text).
_MODEL_CODE = re.compile(r":[A-Z]++\d", re.IGNORECASE)


def _switch_like(desc: str) -> bool:
    if _SWITCH_DESC.search(desc):
        return True
    semi = desc.find(";")
    return semi >= 0 and _MODEL_CODE.search(desc, semi + 1) is not None


class Role(StrEnum):
    COMPUTE = "compute"  # an HCA of a compute host (a real host name; topology.hostroles)
    SERVICE = "service"  # an HCA of a service host: login, UFM, storage... (topology.hostroles)
    UNNAMED = "unnamed"  # an HCA whose description names no host
    AGGREGATION = "aggregation"  # SHARP aggregation node
    SWITCH_MGMT = "switch_mgmt"  # a switch's own management HCA
    SWITCH = "switch"
    ROUTER = "router"


@fast_init
@dataclass(frozen=True, slots=True)
class NodeClass:
    guid: Guid
    name: str  # what an operator calls it: host + adapter, or the switch's short name
    role: Role
    tier: int | None  # 0 HCA, 1 leaf, 2 spine, 3 core; None for a switch no host reaches
    host: str | None = None
    adapter: str | None = None
    hca_index: int | None = None
    rail: int | None = None  # HCAs: rail of their index; leaves: the rail they carry
    group: int | None = None  # leaves and their HCAs: scalable unit / pod
    leaf: Guid | None = None  # HCAs: the switch they are cabled to
    section: int = 0  # the compute fabric (0) or a side group (1..): Classification.sections
    tier_name: str = "hca"  # leaf, spine, core; side leaf, side spine...; hostless


@dataclass(frozen=True)
class Group:
    index: int
    leaves: tuple[Guid, ...]
    hosts: tuple[str, ...]
    rails: tuple[int, ...]
    pod: int | None = None  # the pod most of its leaves are in (Classification.pods)


@dataclass(frozen=True)
class Classification:
    nodes: Mapping[Guid, NodeClass]
    rail_optimized: bool
    rail_indexes: tuple[int, ...]  # rail r carries HCA index rail_indexes[r]
    groups: tuple[Group, ...]
    uplinks: Mapping[Guid, int]  # per switch: cables to switches of a higher tier
    hosts: Mapping[str, tuple[Guid, ...]]  # host -> its HCAs
    sections: tuple[Section, ...] = ()  # the compute fabric, then its side groups
    # Every named host's role with the rule it rests on, and the leaves whose hosts are all
    # service hosts (topology.hostroles).
    host_roles: Mapping[str, HostRole] = field(default_factory=lambda: MappingProxyType({}))
    service_leaves: frozenset[Guid] = frozenset()
    pods: tuple[Pod, ...] = ()  # leaves that reach the same upper switches (topology.pods)
    # Director boards -> their chassis's system image GUID (topology.boards).
    boards: Mapping[Guid, Guid] = field(default_factory=lambda: MappingProxyType({}))
    group_kind: GroupKind = GroupKind.UNIT  # what the groups are: units, or the pods themselves

    def is_service_host(self, host: str) -> bool:
        r = self.host_roles.get(host)
        return r is not None and r.service

    def peer_key(self, guid: Guid) -> tuple[int, int | None, bool, bool]:
        """Whom a switch is judged against: its section, its tier, whether it is a service leaf
        (compared with service leaves only) and whether it is a director's board (its uplinks
        include its chassis's inside wiring: compared with boards only)."""
        c = self.nodes[guid]
        return c.section, c.tier, guid in self.service_leaves, guid in self.boards

    def of(self, guid: Guid) -> NodeClass:
        return self.nodes[guid]

    def tier_counts(self) -> dict[int, int]:
        return dict(
            Counter(c.tier for c in self.nodes.values() if c.role is Role.SWITCH and c.tier is not None)
        )

    def leaves(self) -> list[Guid]:
        return [g for g, c in self.nodes.items() if c.role is Role.SWITCH and c.tier == 1]


def _hca_role(node: Node) -> tuple[Role, str | None, str | None, int | None]:
    desc = node.description
    if "aggregation node" in desc.lower():
        return Role.AGGREGATION, None, None, None
    if node.kind is NodeKind.ROUTER:
        return Role.ROUTER, None, None, None
    if (
        (";" in desc or "witch" in desc)
        and _switch_like(desc)
        and adapter_index(desc.split()[-1] if desc.split() else "") is None
    ):
        return Role.SWITCH_MGMT, None, None, None
    host, adapter, index = parse_hca_description(desc)
    if host is None:
        return Role.UNNAMED, None, adapter, index
    return Role.COMPUTE, host, adapter, index


def classify(fabric: Fabric) -> Classification:
    with gc_paused():  # one NodeClass per node and their lookup maps, no cycles (topology._speed)
        return _classify(fabric)


def _classify(fabric: Fabric) -> Classification:
    roles: dict[Guid, tuple[Role, str | None, str | None, int | None]] = {}
    for n in fabric.nodes.values():
        roles[n.guid] = (Role.SWITCH, None, None, None) if n.kind is NodeKind.SWITCH else _hca_role(n)
    _name_hosts(roles)

    # Far-end GUIDs per switch port, read once: tiers, uplinks and groups all count over them.
    switch_far = {g: far_guids(fabric, g) for g, n in fabric.nodes.items() if n.kind is NodeKind.SWITCH}
    hcas_on: dict[Guid, int] = {}
    boards = chassis_boards(fabric)
    whole = _tiers(switch_far, roles, hcas_on, boards)
    section_of, tiers, kinds = split_sections(switch_far, whole, hcas_on, _hostless_leaves)
    hca_leaf: dict[Guid, Guid] = {}
    neighbours = fabric.neighbours
    switch_set = switch_far.keys()
    for g in fabric.nodes:
        if g not in switch_set:
            for _, far, _ in neighbours(g):
                if far.guid in switch_set:
                    hca_leaf[g] = far.guid  # the first switch it is cabled to
                    break

    hosts: dict[str, list[Guid]] = defaultdict(list)
    for g, (role, host, _, _) in roles.items():
        if role is Role.COMPUTE and host is not None:
            hosts[host].append(g)

    # Rails are the compute fabric's: a side group's service hosts never decide them.
    compute_tiers = {g: t for g, t in tiers.items() if section_of[g] == 0} if len(kinds) > 1 else tiers
    rail_indexes, leaf_rail = _rails(fabric, roles, compute_tiers, hca_leaf, hosts)
    groups, leaf_group, pods, group_kind = _groups(fabric, roles, tiers, hca_leaf, hosts, leaf_rail)
    index_rail = {idx: r for r, idx in enumerate(rail_indexes)}
    host_roles, svc_leaves = _host_roles(roles, tiers, hca_leaf, hosts, leaf_rail, index_rail)

    uplinks: dict[Guid, int] = {}
    tier_of = tiers.get
    for g, fars in switch_far.items():
        t = tier_of(g)
        if t is None:
            continue
        if len(kinds) == 1:
            # Cables to switches of a higher tier (a loopback cable is on g's own tier), counted
            # at C level: this runs over every switch port. count_uplinks has the general rule.
            far_tiers = Counter(map(tier_of, fars))
            uplinks[g] = sum(n for ft, n in far_tiers.items() if ft is not None and ft > t)
        else:
            uplinks[g] = count_uplinks(g, fars, tier_of, section_of, kinds)

    nodes: dict[Guid, NodeClass] = {}
    rail_of_leaf, group_of_leaf, leaf_of = leaf_rail.get, leaf_group.get, hca_leaf.get
    shared_names = {
        name
        for name, k in Counter(switch_name(fabric.nodes[g].description) for g in switch_far).items()
        if k > 1
    }
    compute = Role.COMPUTE
    names = {(k, t): tier_name(k, t) for k in set(kinds) for t in {*tiers.values(), None}}
    section_get, multi = section_of.get, len(kinds) > 1
    for g, n in fabric.nodes.items():
        role, host, adapter, index = roles[g]
        # Positional arguments (field order): guid, name, role, tier, host, adapter, hca_index,
        # rail, group, leaf; this loop runs once per node.
        if role is Role.SWITCH:
            nodes[g] = NodeClass(
                g,
                switch_display_name(n, switch_name(n.description) in shared_names),
                role,
                tier_of(g),
                None,
                None,
                None,
                rail_of_leaf(g),
                group_of_leaf(g),
                None,
                section_of[g],
                names[kinds[section_of[g]], tier_of(g)],
            )
            continue
        leaf = leaf_of(g)
        name = f"{host} {adapter}" if host and adapter else (host or n.description or g)
        nodes[g] = NodeClass(
            g,
            name,
            role,
            0,
            host,
            adapter,
            index,
            index_rail.get(index) if index is not None and role is compute else None,
            group_of_leaf(leaf) if leaf is not None else None,
            leaf,
            section_get(leaf, 0) if multi and leaf is not None else 0,
        )
    return Classification(
        nodes=MappingProxyType(nodes),
        rail_optimized=bool(rail_indexes),
        rail_indexes=rail_indexes,
        groups=groups,
        uplinks=MappingProxyType(uplinks),
        hosts=MappingProxyType({h: tuple(sorted(gs)) for h, gs in sorted(hosts.items())}),
        sections=_sections(kinds, section_of, tiers, nodes, hosts, hcas_on),
        host_roles=MappingProxyType(host_roles),
        service_leaves=svc_leaves,
        pods=pods,
        boards=MappingProxyType(boards),
        group_kind=group_kind,
    )


def _host_roles(
    roles: dict[Guid, tuple[Role, str | None, str | None, int | None]],
    tiers: Mapping[Guid, int],
    hca_leaf: Mapping[Guid, Guid],
    hosts: Mapping[str, list[Guid]],
    leaf_rail: Mapping[Guid, int],
    index_rail: Mapping[int, int],
) -> tuple[dict[str, HostRole], frozenset[Guid]]:
    """Each host's role (topology.hostroles); the HCAs of service hosts become Role.SERVICE in
    ``roles``. Returns the roles and the service leaves."""
    placed: dict[str, list[tuple[int | None, Guid]]] = {}
    leaf_hosts: dict[Guid, set[str]] = defaultdict(set)
    above: set[str] = set()
    tier_of = tiers.get
    for host, host_hcas in hosts.items():
        mine = []
        up = False
        for g in host_hcas:
            leaf = hca_leaf.get(g)
            if leaf is None:
                continue
            t = tier_of(leaf)
            if t == 1:
                mine.append((roles[g][3], leaf))
                leaf_hosts[leaf].add(host)
            elif t is not None:
                up = True
        placed[host] = mine
        if up and not mine:
            above.add(host)
    decided = decide_roles(placed, leaf_rail, index_rail, frozenset(above))
    for host, r in decided.items():
        if r.service:
            for g in hosts[host]:
                _, h, adapter, index = roles[g]
                roles[g] = (Role.SERVICE, h, adapter, index)
    return dict(sorted(decided.items())), service_leaves(leaf_hosts, decided)


def count_uplinks(
    g: Guid,
    fars: list[Guid],
    tier_of: Callable[[Guid], int | None],
    section_of: Mapping[Guid, int],
    kinds: list[str],
) -> int:
    """Cables from switch ``g`` to switches of a higher tier of its own section (a loopback
    cable is on its own tier); a side group's cables to another section are its way out, so
    uplinks too. A compute switch's cables to a side group are not."""
    t = tier_of(g)
    assert t is not None
    if len(kinds) == 1:
        far_tiers = Counter(map(tier_of, fars))  # C-level: this runs over every switch port
        return sum(n for ft, n in far_tiers.items() if ft is not None and ft > t)
    mine = section_of[g]
    up = 0
    for f in fars:
        s = section_of.get(f)
        if s is None:
            continue  # an HCA
        if s != mine:
            up += kinds[mine] == SIDE
        elif (ft := tier_of(f)) is not None and ft > t:
            up += 1
    return up


def _sections(
    kinds: list[str],
    section_of: Mapping[Guid, int],
    tiers: Mapping[Guid, int],
    nodes: Mapping[Guid, NodeClass],
    hosts: Mapping[str, list[Guid]],
    hcas_on: Mapping[Guid, int],
) -> tuple[Section, ...]:
    members: dict[int, list[Guid]] = defaultdict(list)
    for g, s in section_of.items():
        members[s].append(g)
    hcas: Counter[int] = Counter()
    host_sections: dict[int, set[str]] = defaultdict(set)
    if len(kinds) == 1:
        hcas[0] = sum(hcas_on.values())  # one section: every host HCA on a switch is its
        host_sections[0] = set(hosts)
    else:
        for c in nodes.values():
            if c.tier == 0 and c.role in _HOST_HCA and c.leaf is not None:
                hcas[c.section] += 1
                if c.host is not None:
                    host_sections[c.section].add(c.host)
    out = []
    side = 0
    for s, kind in enumerate(kinds):
        gs = sorted(members.get(s, ()))
        if kind == SIDE:
            side += 1
        depth = max((tiers[g] for g in gs if g in tiers), default=0)
        out.append(
            Section(
                s,
                kind,
                COMPUTE if kind == COMPUTE else f"side group {side}",
                tuple(gs),
                sum(1 for g in gs if tiers.get(g) == 1),
                len(host_sections.get(s, ())),
                hcas[s],
                depth,
            )
        )
    return tuple(out)


def _name_hosts(roles: dict[Guid, tuple[Role, str | None, str | None, int | None]]) -> None:
    """One spelling per host (``DGX01``/``dgx01``), and an index for adapters named by their PCI
    address (``ibp11s0f0``): their order among the host's adapters (topology.naming)."""
    compute = [(g, r) for g, r in roles.items() if r[0] is Role.COMPUTE and r[1] is not None]
    spelled = host_spellings(r[1] for _, r in compute if r[1] is not None)
    respell = any(k != v for k, v in spelled.items())
    if respell:
        for g, (role, host, adapter, index) in compute:
            assert host is not None
            roles[g] = (role, spelled[host], adapter, index)
    by_pci: dict[str, dict[Guid, PciKey]] = defaultdict(dict)
    for g, (_, host, adapter, index) in compute:
        if index is None and adapter is not None and (key := pci_key(adapter)) is not None:
            assert host is not None
            by_pci[spelled[host]][g] = key
    for g, index in pci_indexes(by_pci).items():
        role, host, adapter, _ = roles[g]
        roles[g] = (role, host, adapter, index)


_HOST_HCA = frozenset({Role.COMPUTE, Role.SERVICE, Role.UNNAMED})


def _is_host_hca(role: Role) -> bool:
    return role in _HOST_HCA


def far_guids(fabric: Fabric, guid: Guid) -> list[Guid]:
    """The far end's GUID of every cable of ``guid``, in port order (a loopback cable twice)."""
    return list(map(_GUID, map(_FAR, fabric.neighbours(guid))))


# Fields by position (a PortRef is a named tuple (guid, port)): an item is read at C level, a
# named field through its descriptor. This runs over every switch port, several times.
_FAR = operator.itemgetter(1)
_GUID = operator.itemgetter(0)


def _tiers(
    switch_far: Mapping[Guid, list[Guid]],
    roles: Mapping[Guid, tuple[Role, str | None, str | None, int | None]],
    hcas_on: dict[Guid, int],
    boards: Mapping[Guid, Guid],
) -> dict[Guid, int]:
    """Leaves are switches with host HCAs; the rest are counted up from them. Fills ``hcas_on``
    (host HCAs per switch that has any).

    A spine that also carries a few storage hosts (real fabrics do this) is not a leaf: a
    candidate linked to two or more other candidates that carry a larger share of hosts, and whose
    own ports are mostly switch links, is demoted before counting. So is a board of a director
    chassis that leaves hang off (``boards``: board -> chassis; topology.boards.boards_over_leaves).
    """
    # The per-port loops are C-level (map/filter over set lookups): they run over every switch
    # port, 82k of them at 16k HCAs.
    host_set = {g for g, r in roles.items() if r[0] is Role.COMPUTE or r[0] is Role.UNNAMED}
    is_switch, is_host = switch_far.__contains__, host_set.__contains__
    share: dict[Guid, float] = {}
    for g, fars in switch_far.items():
        h = sum(map(is_host, fars))
        if h > 0:
            hcas_on[g] = h
            s = sum(map(is_switch, fars)) - fars.count(g)
            share[g] = h / max(1, h + s)
    candidates = share.keys()
    demoted = set()
    for g, own in share.items():
        if own < 0.25:
            richer = {fg for fg in candidates & set(switch_far[g]) if fg != g and share[fg] > own}
            if len(richer) >= 2:
                demoted.add(g)
    if boards:
        demoted |= boards_over_leaves(switch_far, candidates - demoted, boards)
    tiers: dict[Guid, int] = {}
    queue: deque[Guid] = deque()
    for g in sorted(candidates - demoted):
        tiers[g] = 1
        queue.append(g)
    switches = switch_far.keys()
    while queue:
        g = queue.popleft()
        # Breadth first: a switch's tier is its distance from the nearest leaf, whatever order
        # one level's switches are found in.
        t = tiers[g] + 1
        for fg in filterfalse(tiers.__contains__, switches & set(switch_far[g])):
            tiers[fg] = t
            queue.append(fg)
    _hostless_leaves(switch_far, tiers)
    return tiers


def _hostless_leaves(switch_far: Mapping[Guid, list[Guid]], tiers: dict[Guid, int]) -> None:
    """A leaf whose hosts are all gone looks like a core (only spines around it). It is a leaf
    when it reaches exactly the spines another leaf reaches; a core spans spines of many pods."""

    switches = switch_far.keys()

    def switch_neighbours(g: Guid) -> frozenset[Guid]:
        return frozenset(switches & set(switch_far[g])) - {g}

    leaf_uppers = {switch_neighbours(g) for g, t in tiers.items() if t == 1}
    for g, t in list(tiers.items()):
        if t >= 3:
            near = switch_neighbours(g)
            if near and all(tiers.get(x) == 2 for x in near) and near in leaf_uppers:
                tiers[g] = 1


def _rails(
    fabric: Fabric,
    roles: Mapping[Guid, tuple[Role, str | None, str | None, int | None]],
    tiers: Mapping[Guid, int],
    hca_leaf: Mapping[Guid, Guid],
    hosts: Mapping[str, list[Guid]],
) -> tuple[tuple[int, ...], dict[Guid, int]]:
    """Rail-optimized when most multi-HCA hosts spread their HCAs over leaves by index: most
    leaves carry one HCA index of those hosts, most multi-HCA hosts follow those rails, and
    they hold a fair share of the fabric's host HCAs (two service hosts with HCA-1 and HCA-2 on
    two leaves do not make a fabric of single-HCA nodes rail-optimized). A host with all its
    HCAs on one leaf is not spread and counts against."""
    placed: dict[str, list[tuple[int | None, Guid]]] = {}
    on_leaves = 0
    for host, host_hcas in hosts.items():
        mine = [
            (roles[g][3], leaf)
            for g in host_hcas
            if (leaf := hca_leaf.get(g)) is not None and tiers.get(leaf) == 1
        ]
        on_leaves += len(mine)
        if len(mine) >= 2:
            placed[host] = mine
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


def _groups(
    fabric: Fabric,
    roles: Mapping[Guid, tuple[Role, str | None, str | None, int | None]],
    tiers: Mapping[Guid, int],
    hca_leaf: Mapping[Guid, Guid],
    hosts: Mapping[str, list[Guid]],
    leaf_rail: Mapping[Guid, int],
) -> tuple[tuple[Group, ...], dict[Guid, int], tuple[Pod, ...], GroupKind]:
    """(groups, group per leaf, pods, what the groups are): units where most leaves share
    hosts, else the pods (topology.pods)."""
    leaves = sorted(g for g, t in tiers.items() if t == 1)
    leaf_hosts: dict[Guid, set[str]] = {leaf: set() for leaf in leaves}
    for host, hcas in hosts.items():
        for g in hcas:
            leaf = hca_leaf.get(g)
            if leaf in leaf_hosts:
                leaf_hosts[leaf].add(host)
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
