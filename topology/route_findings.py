"""What the route checks find, each with its evidence: switch, LID, port and the path. Pure.

A finding names where it happens (``switch``, ``port``, ``lid``), the route that shows it
(``path``: hop by hop from a source switch, each hop the switch, its out port and the far end)
and how much it touches (``count``: hosts' routes, LIDs, cables, as ``detail`` says). The words
for people are built in :mod:`fabric.present.routes`; the JSON form is :meth:`RouteFinding.to_dict`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from topology.anomaly import Severity
from topology.model import Guid
from topology.route_walk import Walk

# The kinds, as JSON names them (stable).
NO_ROUTE = "no_route"  # a destination LID some routes never deliver (no entry, a port without a cable)
WRONG_DESTINATION = "wrong_destination"  # delivered to another node
FORWARDING_LOOP = "forwarding_loop"
LONGER_THAN_MINIMAL = "longer_than_minimal"
CREDIT_LOOP = "credit_loop"
DOWN_UP = "down_up"  # a route turning down then up against the tiers
IMBALANCE = "imbalance"
CROSSES_FLAGGED = "crosses_flagged_link"
CROSSES_ISOLATED = "crosses_isolated_link"
NO_TABLE = "no_table"  # a switch of the topology the tables do not list
UNKNOWN_SWITCH = "unknown_switch"  # a switch in the tables the topology does not have
LID_MISMATCH = "lid_mismatch"  # the tables name another node at a LID
ENGINE_FALLBACK = "engine_fallback"
ENGINE_MISMATCH = "engine_mismatch"
UNUSED_BROKEN = "unused_broken_entries"  # entries that go nowhere, on no host's route

KINDS = (
    NO_ROUTE,
    WRONG_DESTINATION,
    FORWARDING_LOOP,
    CREDIT_LOOP,
    CROSSES_ISOLATED,
    ENGINE_FALLBACK,
    LONGER_THAN_MINIMAL,
    DOWN_UP,
    IMBALANCE,
    CROSSES_FLAGGED,
    ENGINE_MISMATCH,
    NO_TABLE,
    LID_MISMATCH,
    UNKNOWN_SWITCH,
    UNUSED_BROKEN,
)


@dataclass(frozen=True, slots=True)
class Hop:
    """One hop of a route: ``switch`` sends the packet out of ``port`` to ``to`` (its ``to_port``)."""

    switch: Guid
    port: int
    to: Guid | None  # None: the port has no cable
    to_port: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"switch": self.switch, "port": self.port, "to": self.to, "to_port": self.to_port}


@dataclass(frozen=True, slots=True)
class RouteFinding:
    kind: str
    severity: Severity
    lid: int | None = None
    switch: Guid | None = None
    port: int | None = None
    path: tuple[Hop, ...] = ()
    source: Guid | None = None  # the node the shown route starts at (a host's HCA, else a switch)
    destination: Guid | None = None  # the node at ``lid``
    count: int = 0
    lids: tuple[int, ...] = ()  # every LID the finding covers (``lid`` is the first)
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "severity": self.severity.value,
            "lid": self.lid,
            "lids": list(self.lids),
            "switch": self.switch,
            "port": self.port,
            "source": self.source,
            "destination": self.destination,
            "count": self.count,
            "path": [h.to_dict() for h in self.path],
            "detail": dict(self.detail),
        }


def route_hops(w: Walk, s: int, d: int, limit: int = 64) -> tuple[Hop, ...]:
    """The route from switch ``s`` to destination column ``d``, hop by hop, up to where it ends
    (a loop is shown once round, ending at the switch it comes back to)."""
    b = w.bound
    hops: list[Hop] = []
    seen: set[int] = set()
    here = s
    while len(hops) < limit:
        port = int(b.table[here, d])
        if port in (0, 255) or not b.has_table[here]:
            break
        far_s = int(b.far_switch[here, port])
        far_h = int(b.far_hca[here, port])
        to = b.switches[far_s] if far_s >= 0 else b.hcas[far_h] if far_h >= 0 else None
        hops.append(Hop(b.switches[here], port, to, int(b.far_port[here, port]) if to else 0))
        seen.add(here)
        if far_s < 0 or far_s in seen:
            break
        here = far_s
    return tuple(hops)


def source_of(w: Walk, s: int) -> Guid:
    """A host HCA cabled to switch ``s`` (the shown route's start), else the switch itself."""
    b = w.bound
    import numpy as np

    on = np.flatnonzero((b.hca_switch == s) & (w.traffic.group >= 0))
    if len(on):
        return b.hcas[int(on[0])]
    on = np.flatnonzero(b.hca_switch == s)
    return b.hcas[int(on[0])] if len(on) else b.switches[s]
