"""Ports the tool lists as down (``down_port``): a port without a peer where most switches of its
peer group have that port cabled.
"""

from __future__ import annotations

from collections import defaultdict

from topology.anomaly import Anomaly, Severity
from topology.classify import Classification, Role
from topology.model import Fabric, Guid
from topology.wiring_peers import _PeerKey


def down_ports(fabric: Fabric, cls: Classification) -> list[Anomaly]:
    """A port listed without a peer where most same-tier peers have that port cabled."""
    out: list[Anomaly] = []
    if not fabric.unconnected:
        return out
    by_tier: dict[_PeerKey, list[Guid]] = defaultdict(list)
    switch = Role.SWITCH  # read once: an enum member's lookup costs over 100 ns, per node here
    for g, sc in cls.nodes.items():
        if sc.role is switch and sc.tier is not None:
            by_tier[cls.peer_key(g)].append(g)
    for up in fabric.unconnected:
        c = cls.nodes.get(up.ref.guid)
        if c is None or c.tier is None:
            continue
        peers = [g for g in by_tier[cls.peer_key(up.ref.guid)] if g != up.ref.guid]
        if len(peers) < 2:
            continue
        cabled = sum(1 for g in peers if any(p == up.ref.port for p, _, _ in fabric.neighbours(g)))
        if cabled * 2 > len(peers):
            out.append(
                Anomaly(
                    "down_port",
                    Severity.WARNING,
                    (up.ref.guid,),
                    (up.ref,),
                    f"{c.name} port {up.ref.port} is down ({up.width}x {up.speed}) while {cabled} of "
                    f"{len(peers)} peers have it cabled",
                )
            )
    return out
