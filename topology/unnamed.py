"""Where an unnamed HCA (``localhost``, ``MT4123 ConnectX6 Mellanox Technologies``) probably
belongs, from evidence in the fabric, for the ``unnamed_hca`` anomaly:

* its adapter card: the ports of one card share a system image GUID, so an unnamed port of a
  card whose other port names a host belongs to that host;
* its cabling: hosts whose HCAs spread over the leaves of one unit use the same port number on
  each (rail and dual-rail fabrics); an unnamed HCA on port P of one of those leaves, where one
  host has its HCAs on port P of the unit's other leaves but none on this leaf, is that host's;
* otherwise, the other unnamed HCAs on the same port of the unit's leaves: one machine, so one
  node description to set.

Nothing is said without such evidence.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from topology.classify import Classification, Role
from topology.model import Fabric, Guid, NodeKind, PortRef


def leaf_port(fabric: Fabric, hca: Guid) -> PortRef | None:
    """The switch port an HCA is cabled to (its first, if it has several)."""
    for _, far, _ in fabric.neighbours(hca):
        node = fabric.nodes.get(far.guid)
        if node is not None and node.kind is NodeKind.SWITCH:
            return far
    return None


class Likely(NamedTuple):
    """Where an unnamed HCA probably belongs: ``machine`` names the one machine (the same words
    for every HCA the evidence puts in it), ``phrase`` says it with its evidence."""

    machine: str  # "dgx-0042", or "the machine on port 21 of leaf-a, leaf-b"
    phrase: str


def likely_hosts(fabric: Fabric, cls: Classification) -> dict[Guid, str]:
    """Unnamed HCA -> what its evidence says, as a phrase (``probably dgx-0042 (...)``)."""
    return {g: likely.phrase for g, likely in likely_machines(fabric, cls).items()}


def likely_machines(fabric: Fabric, cls: Classification) -> dict[Guid, Likely]:
    """Unnamed HCA -> the machine its evidence puts it in, and that evidence."""
    unnamed_role = Role.UNNAMED  # read once: an enum member's lookup costs over 100 ns
    unnamed = [g for g, c in cls.nodes.items() if c.role is unnamed_role]
    if not unnamed:
        return {}
    cards: dict[Guid, set[str]] = defaultdict(set)
    at: dict[PortRef, Guid] = {}  # leaf port -> HCA on it
    for g, c in cls.nodes.items():
        if c.tier != 0:
            continue
        sysimg = fabric.nodes[g].sysimgguid
        if c.host is not None and sysimg is not None:
            cards[sysimg].add(c.host)
        port = leaf_port(fabric, g)
        if port is not None:
            at[port] = g
    leaves_of_group: dict[int, list[Guid]] = {gr.index: list(gr.leaves) for gr in cls.groups}
    out: dict[Guid, Likely] = {}
    for g in unnamed:
        sysimg = fabric.nodes[g].sysimgguid
        owners = cards.get(sysimg, set()) if sysimg is not None else set()
        if len(owners) == 1:
            (host,) = owners
            out[g] = Likely(
                host,
                f"probably {host} (it shares an adapter card, system image GUID {sysimg}, with {host}'s HCAs)",
            )
            continue
        port = leaf_port(fabric, g)
        group = cls.nodes[port.guid].group if port is not None else None
        if port is None or group is None:
            continue
        others = [PortRef(leaf, port.port) for leaf in leaves_of_group.get(group, ()) if leaf != port.guid]
        beside = [at[p] for p in others if p in at]
        hosts: dict[str, int] = defaultdict(int)
        for h in beside:
            name = cls.nodes[h].host
            if name is not None:
                hosts[name] += 1
        # A host that uses this port number on two or more of the unit's other leaves and has
        # no HCA on this leaf: the pattern says this is its HCA.
        fitting = [
            h
            for h, n in hosts.items()
            if n >= 2 and not any(cls.nodes[x].leaf == port.guid for x in cls.hosts.get(h, ()))
        ]
        if len(fitting) == 1:
            host = fitting[0]
            out[g] = Likely(
                host,
                f"probably {host} (its other HCAs sit on port {port.port} of this unit's other leaves"
                " and it has none on this leaf)",
            )
            continue
        twins = [cls.nodes[x].leaf or x for x in beside if cls.nodes[x].role is Role.UNNAMED]
        if twins and not hosts:
            names = ", ".join(sorted(cls.nodes[t].name for t in twins))
            every = ", ".join(sorted({cls.nodes[t].name for t in twins} | {cls.nodes[port.guid].name}))
            out[g] = Likely(
                f"the machine on port {port.port} of {every}",
                f"probably one machine with the unnamed HCAs on port {port.port} of {names}",
            )
    return out
