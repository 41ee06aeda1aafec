"""The ``unnamed_hca`` anomaly: HCAs whose node description names no host, one anomaly per machine.

A DGX that booted before its hostname was set leaves all eight of its HCAs as ``MT4129 ConnectX7
Mellanox Technologies``: eight rows for one fix on one machine would bury the faults beside them
(74 of the 87 anomalies of the real NDR SuperPOD capture). The HCAs the evidence puts in one
machine (:func:`topology.unnamed.likely_machines`: a shared adapter card, the port pattern of
the unit's rail leaves) are one anomaly naming each of them; an HCA with no such evidence is its
own. Nothing is merged on a guess.
"""

from __future__ import annotations

from collections.abc import Mapping

from topology.anomaly import Anomaly, Severity
from topology.classify import Classification, Role
from topology.model import Fabric, Guid
from topology.unnamed import likely_machines


def unnamed_anomalies(
    fabric: Fabric, cls: Classification, explained: Mapping[Guid, str] | None = None
) -> list[Anomaly]:
    """One ``unnamed_hca`` per machine; ``explained`` holds the rail check's words for an unnamed
    HCA that sits where a host lacks one (``probably dgx-0042's rail 5 HCA ...``)."""
    unnamed_role = Role.UNNAMED  # read once: an enum member's lookup costs over 100 ns
    unnamed = [g for g, c in cls.nodes.items() if c.role is unnamed_role]
    if not unnamed:
        return []
    likely = likely_machines(fabric, cls)
    said = dict(explained or {})
    machines: dict[str, list[Guid]] = {}
    for g in unnamed:
        key = likely[g].machine if g in likely else str(g)
        machines.setdefault(key, []).append(g)
    out = []
    for key, hcas in machines.items():
        hcas.sort()
        ports = [p for g in hcas if (p := fabric.switch_port_of(g)) is not None]
        if len(hcas) == 1:
            g = hcas[0]
            guess = said.get(g) or (likely[g].phrase if g in likely else "")
            message = (
                f"HCA {g}{_where(fabric, cls, g)} has no host name "
                f"(description {fabric.nodes[g].description!r}){f'; {guess}' if guess else ''}: "
                "set its node description (rdma system set / node_desc) so it maps to a host"
            )
        else:
            # the machine is a host the evidence names, or "the machine on port P of <its leaves>"
            who = f"one machine, probably {key}" if key in cls.hosts else f"one machine ({key})"
            listed = "; ".join(f"{g}{_where(fabric, cls, g)} ({fabric.nodes[g].description!r})" for g in hcas)
            message = (
                f"{len(hcas)} HCAs of {who} have no host name: {listed}: set its node descriptions "
                "(rdma system set / node_desc) so they map to a host"
            )
        out.append(Anomaly("unnamed_hca", Severity.WARNING, tuple(hcas), tuple(ports), message))
    return out


def _where(fabric: Fabric, cls: Classification, hca: Guid) -> str:
    port = fabric.switch_port_of(hca)
    if port is None:
        return ""
    c = cls.nodes.get(port.guid)
    return f" on {c.name if c is not None else port.guid} port {port.port}"
