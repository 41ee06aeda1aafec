"""What classifying a fabric yields: each node's class (role, tier, host, rail, group...), the
groups, and the whole Classification record (topology.classify builds it)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from topology._speed import fast_init
from topology.hostroles import HostRole
from topology.model import Guid
from topology.pods import GroupKind, Pod
from topology.sections import Section


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


HOST_HCA = frozenset({Role.COMPUTE, Role.SERVICE, Role.UNNAMED})


def is_host_hca(role: Role) -> bool:
    return role in HOST_HCA
