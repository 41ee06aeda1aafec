"""Each node's role from its kind and NodeDescription (an HCA of a named or unnamed host, a SHARP
aggregation node, a switch's management port...), and one spelling and index per host's adapters
(topology.naming)."""

from __future__ import annotations

import re
from collections import defaultdict

from topology.classification import Role
from topology.model import Guid, Node, NodeKind
from topology.naming import PciKey, adapter_index, host_spellings, parse_hca_description, pci_indexes, pci_key

_SWITCH_DESC = re.compile(r"^MF0;|\bswitch\b", re.IGNORECASE)
# ";...:<model code>" (MF0;leaf-01:MQM9700/U1): looked for after the first ';' only (one pass; a
# ';.*:' pattern is retried from every ';' to the end of the text).
_MODEL_CODE = re.compile(r":[A-Z]++\d", re.IGNORECASE)

# Enum members read once (an enum class's attribute lookup costs over 100 ns; this runs per node).
_ROUTER, _COMPUTE = NodeKind.ROUTER, Role.COMPUTE


def _switch_like(desc: str) -> bool:
    if _SWITCH_DESC.search(desc):
        return True
    semi = desc.find(";")
    return semi >= 0 and _MODEL_CODE.search(desc, semi + 1) is not None


def hca_role(node: Node) -> tuple[Role, str | None, str | None, int | None]:
    desc = node.description
    if "aggregation node" in desc.lower():
        return Role.AGGREGATION, None, None, None
    if node.kind is _ROUTER:
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
    return _COMPUTE, host, adapter, index


def name_hosts(roles: dict[Guid, tuple[Role, str | None, str | None, int | None]]) -> None:
    """One spelling per host (``DGX01``/``dgx01``), and an index for adapters named by their PCI
    address (``ibp11s0f0``): their order among the host's adapters (topology.naming)."""
    compute = [(g, r) for g, r in roles.items() if r[0] is _COMPUTE and r[1] is not None]
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
