"""Wiring anomalies an operator must fix, found by comparing every element with its peers.

Nothing is compared with a fixed design: a leaf is judged against the other leaves of its unit,
a link against links of the same kind (tier pair and hardware), a host against the rails of its
unit. That keeps real fabrics with their own conventions free of false alarms.

Kinds: ``rail_miswire``, ``missing_link``, ``degraded_link``, ``uplink_imbalance``,
``down_port``, ``unnamed_hca``; ``missing_hca`` (topology.hostfaults), ``unconfigured_ports``,
``duplicate_guid``, ``duplicate_lid`` (topology.addressing).

One family of anomaly a module: topology.wiring_rails, wiring_uplinks, wiring_speeds,
wiring_down_ports (what they share: topology.wiring_peers); this module runs them all and is
where callers import them from.
"""

from __future__ import annotations

from topology._speed import gc_paused
from topology.addressing import addressing_anomalies
from topology.anomaly import Anomaly, Severity
from topology.classify import Classification
from topology.hostfaults import missing_hcas
from topology.model import Fabric
from topology.wiring_down_ports import down_ports
from topology.wiring_rails import rail_anomalies
from topology.wiring_speeds import BelowPeers, degraded_links, links_below_peers
from topology.wiring_uplinks import uplink_anomalies, uplinks_by_peers, usual_uplinks

__all__ = [
    "Anomaly",
    "BelowPeers",
    "Severity",
    "find_anomalies",
    "links_below_peers",
    "uplinks_by_peers",
    "usual_uplinks",
]


def find_anomalies(fabric: Fabric, cls: Classification) -> list[Anomaly]:
    found: list[Anomaly] = []
    with gc_paused():  # many short-lived counters and sets, no cycles (see topology._speed)
        found += rail_anomalies(fabric, cls)
        found += uplink_anomalies(fabric, cls)
        found += degraded_links(fabric, cls)
        found += down_ports(fabric, cls)
        found += missing_hcas(fabric, cls)
        found += addressing_anomalies(fabric, cls)
    order = {s: i for i, s in enumerate(reversed(list(Severity)))}
    return sorted(found, key=lambda a: (order[a.severity], a.kind, a.message))
