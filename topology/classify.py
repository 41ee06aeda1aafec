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
  their HCAs over its leaves by index (topology.rails). Rails are numbered 0.. in the order
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

from collections import Counter, defaultdict
from collections.abc import Mapping
from types import MappingProxyType

from topology._speed import gc_paused
from topology.boards import chassis_boards
from topology.classification import HOST_HCA, Classification, Group, NodeClass, Role
from topology.hostroles import HostRole, decide_roles, service_leaves
from topology.model import Fabric, Guid, NodeKind
from topology.naming import parse_hca_description, switch_display_name, switch_name
from topology.node_roles import hca_role, name_hosts
from topology.pods import GroupKind, Pod
from topology.rails import find_rails
from topology.sections import COMPUTE, SIDE, Section, split_sections, tier_name
from topology.tiers import count_uplinks, far_guids, find_tiers, hostless_leaves
from topology.units import find_groups

__all__ = [
    "Classification",
    "Group",
    "GroupKind",
    "NodeClass",
    "Pod",
    "Role",
    "Section",
    "classify",
    "count_uplinks",
    "far_guids",
    "parse_hca_description",
    "switch_name",
]


def classify(fabric: Fabric) -> Classification:
    with gc_paused():  # one NodeClass per node and their lookup maps, no cycles (topology._speed)
        return _classify(fabric)


def _classify(fabric: Fabric) -> Classification:
    # Enum members read once, not per node: each read of Role.X or NodeKind.X goes through the
    # enum class's attribute lookup (over 100 ns; this runs over every node, several times).
    switch_kind, compute = NodeKind.SWITCH, Role.COMPUTE
    switch_role: tuple[Role, str | None, str | None, int | None] = (Role.SWITCH, None, None, None)
    roles: dict[Guid, tuple[Role, str | None, str | None, int | None]] = {}
    for n in fabric.nodes.values():
        roles[n.guid] = switch_role if n.kind is switch_kind else hca_role(n)
    name_hosts(roles)

    # Far-end GUIDs per switch port, read once: tiers, uplinks and groups all count over them.
    switch_far = {g: far_guids(fabric, g) for g, n in fabric.nodes.items() if n.kind is switch_kind}
    hcas_on: dict[Guid, int] = {}
    boards = chassis_boards(fabric)
    whole = find_tiers(switch_far, roles, hcas_on, boards)
    section_of, tiers, kinds = split_sections(switch_far, whole, hcas_on, hostless_leaves)
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
        if role is compute and host is not None:
            hosts[host].append(g)

    placed, above, leaf_hosts = _on_leaves(roles, tiers, hca_leaf, hosts)
    # Rails are the compute fabric's: a side group's service hosts never decide them.
    if len(kinds) > 1:
        compute_placed = {h: [(i, lf) for i, lf in mine if section_of[lf] == 0] for h, mine in placed.items()}
        rail_indexes, leaf_rail = find_rails(compute_placed)
    else:
        rail_indexes, leaf_rail = find_rails(placed)
    groups, leaf_group, pods, group_kind = find_groups(fabric, tiers, leaf_hosts, leaf_rail)
    index_rail = {idx: r for r, idx in enumerate(rail_indexes)}
    host_roles, svc_leaves = _host_roles(roles, hosts, placed, above, leaf_hosts, leaf_rail, index_rail)

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
    switch = Role.SWITCH
    names = {(k, t): tier_name(k, t) for k in set(kinds) for t in {*tiers.values(), None}}
    section_get, multi = section_of.get, len(kinds) > 1
    for g, n in fabric.nodes.items():
        role, host, adapter, index = roles[g]
        # Positional arguments (field order): guid, name, role, tier, host, adapter, hca_index,
        # rail, group, leaf; this loop runs once per node.
        if role is switch:
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


def _on_leaves(
    roles: Mapping[Guid, tuple[Role, str | None, str | None, int | None]],
    tiers: Mapping[Guid, int],
    hca_leaf: Mapping[Guid, Guid],
    hosts: Mapping[str, list[Guid]],
) -> tuple[dict[str, list[tuple[int | None, Guid]]], frozenset[str], dict[Guid, set[str]]]:
    """Where the named hosts are cabled, read in one pass over their HCAs (rails, units and host
    roles all start from it): each host's HCAs on leaves as (HCA index, leaf); the hosts cabled
    only above the leaves; and every leaf, in GUID order, with its hosts."""
    placed: dict[str, list[tuple[int | None, Guid]]] = {}
    leaf_hosts: dict[Guid, set[str]] = {leaf: set() for leaf in sorted(g for g, t in tiers.items() if t == 1)}
    above: set[str] = set()
    tier_of, leaf_of = tiers.get, hca_leaf.get
    for host, host_hcas in hosts.items():
        mine = []
        up = False
        for g in host_hcas:
            leaf = leaf_of(g)
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
    return placed, frozenset(above), leaf_hosts


def _host_roles(
    roles: dict[Guid, tuple[Role, str | None, str | None, int | None]],
    hosts: Mapping[str, list[Guid]],
    placed: Mapping[str, list[tuple[int | None, Guid]]],
    above: frozenset[str],
    leaf_hosts: Mapping[Guid, set[str]],
    leaf_rail: Mapping[Guid, int],
    index_rail: Mapping[int, int],
) -> tuple[dict[str, HostRole], frozenset[Guid]]:
    """Each host's role (topology.hostroles); the HCAs of service hosts become Role.SERVICE in
    ``roles``. Returns the roles and the service leaves."""
    decided = decide_roles(placed, leaf_rail, index_rail, above)
    for host, r in decided.items():
        if r.service:
            for g in hosts[host]:
                _, h, adapter, index = roles[g]
                roles[g] = (Role.SERVICE, h, adapter, index)
    return dict(sorted(decided.items())), service_leaves(leaf_hosts, decided)


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
            if c.tier == 0 and c.role in HOST_HCA and c.leaf is not None:
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
