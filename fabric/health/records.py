"""What a health assessment returns: per end, per link, per node, and the report around them.

``HealthReport.to_dict()`` is exactly what ``--json`` prints: ``links`` (worst first), ``nodes``
(worst first) and ``summary``. Times are seconds since the epoch; GUIDs are ``0x`` + 16 hex.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fabric.health.ber import BerEstimate
from fabric.health.status import Status
from topology.model import PortRef


def _ref(ref: PortRef) -> dict[str, object]:
    return {"guid": ref.guid, "port": ref.port}


@dataclass(frozen=True, slots=True)
class EndHealth:
    """What one port of a link saw over the window (which end saw the errors)."""

    ref: PortRef
    samples: int  # delta rows (pairs of consecutive reachable samples)
    seconds: float  # time covered by those deltas on the same cable
    counters: Mapping[str, int]  # error counters that moved, summed over the window
    ber: float | None  # this end's receive-direction BER (its symbol errors / rate x seconds)
    congestion: float | None  # share of time waiting to send (xmit_wait ticks)
    saturated: tuple[str, ...]  # counters that hit their maximum: counts are lower bounds
    reset: bool  # a counter went down (was cleared) during the window
    link_changes: int  # samples where the port was found on another cable or LID
    first_finding: float | None = None  # first/last sample time with an error counter moving
    last_finding: float | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            **_ref(self.ref),
            "samples": self.samples,
            "seconds": self.seconds,
            "counters": dict(self.counters),
            "ber": self.ber,
            "congestion": self.congestion,
            "saturated": list(self.saturated),
            "reset": self.reset,
            "link_changes": self.link_changes,
            "first_finding": self.first_finding,
            "last_finding": self.last_finding,
        }


@dataclass(frozen=True, slots=True)
class LinkHealth:
    a: PortRef
    b: PortRef
    width: int
    speed: str
    score: int
    status: Status
    ber: BerEstimate
    # (downs + recoveries) per hour observed (fabric.health.rates); 0 if none; None: too short a span
    flaps_per_hour: float | None
    downs: int  # link-downs, both ends merged, plus discovery downs
    recoveries: int  # link error recoveries (retrains without going down)
    congestion: float | None  # the busier end's share of time waiting to send
    reasons: tuple[str, ...]
    first_seen: float | None  # first/last time this link had any finding (history included)
    last_seen: float | None
    counters: Mapping[str, int]  # error counters that moved, both ends summed
    ends: tuple[EndHealth, EndHealth]
    repeat_offender: bool
    repeat_days: int  # distinct UTC days with a finding within the lookback (today included)
    observed_s: float = 0.0  # first to last counter sample of the link in the window
    pending: str | None = None  # why it is not yet certified (a state, not a finding); None: certified

    @property
    def certified(self) -> bool:
        return self.pending is None

    @property
    def key(self) -> tuple[tuple[str, int], tuple[str, int]]:
        return ((self.a.guid, self.a.port), (self.b.guid, self.b.port))

    def to_dict(self) -> dict[str, object]:
        return {
            "a": _ref(self.a),
            "b": _ref(self.b),
            "width": self.width,
            "speed": self.speed,
            "score": self.score,
            "status": self.status.value,
            "ber": self.ber.to_dict(),
            "flaps_per_hour": self.flaps_per_hour,
            "downs": self.downs,
            "recoveries": self.recoveries,
            "congestion": self.congestion,
            "reasons": list(self.reasons),
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "repeat_offender": self.repeat_offender,
            "repeat_days": self.repeat_days,
            "observed_seconds": self.observed_s,
            "certified": self.certified,
            "pending": self.pending,
            "counters": dict(self.counters),
            "ends": [e.to_dict() for e in self.ends],
        }


@dataclass(frozen=True, slots=True)
class NodeHealth:
    guid: str
    description: str
    kind: str
    score: int  # the worst link's score (100 for a node without links)
    status: Status  # the worst link's status; at least watch for a repeat offender
    links: int
    bad_links: int  # links at warn or critical
    repeat_offender: bool
    repeat_days: int

    def to_dict(self) -> dict[str, object]:
        return {
            "guid": self.guid,
            "description": self.description,
            "kind": self.kind,
            "score": self.score,
            "status": self.status.value,
            "links": self.links,
            "bad_links": self.bad_links,
            "repeat_offender": self.repeat_offender,
            "repeat_days": self.repeat_days,
        }


@dataclass(frozen=True, slots=True)
class HealthSummary:
    since: float
    now: float
    snapshots: int  # distinct snapshot ids in the window
    samples: int  # counter rows in the window
    links: int
    links_by_status: Mapping[str, int]
    nodes_by_status: Mapping[str, int]
    links_without_samples: int  # fabric links neither end of which answered in the window
    unknown_guids: tuple[str, ...]  # GUIDs in the counters that the fabric does not know
    ports_not_on_links: tuple[PortRef, ...]  # known nodes' ports that are on no fabric link
    down_links_not_in_fabric: tuple[tuple[tuple[str, int], tuple[str, int]], ...]
    uncertified: int = 0  # links not yet certified (a state: see LinkHealth.pending)

    @property
    def seconds(self) -> float:
        return self.now - self.since

    def to_dict(self) -> dict[str, object]:
        return {
            "window": {"since": self.since, "now": self.now, "seconds": self.seconds},
            "snapshots": self.snapshots,
            "samples": self.samples,
            "links": self.links,
            "links_by_status": dict(self.links_by_status),
            "nodes_by_status": dict(self.nodes_by_status),
            "links_without_samples": self.links_without_samples,
            "uncertified": self.uncertified,
            "unknown_guids": list(self.unknown_guids),
            "ports_not_on_links": [_ref(r) for r in self.ports_not_on_links],
            "down_links_not_in_fabric": [
                {"a": {"guid": a[0], "port": a[1]}, "b": {"guid": b[0], "port": b[1]}}
                for a, b in self.down_links_not_in_fabric
            ],
        }


@dataclass(frozen=True, slots=True)
class HealthReport:
    links: tuple[LinkHealth, ...]  # worst first
    nodes: tuple[NodeHealth, ...]  # worst first
    summary: HealthSummary

    def to_dict(self) -> dict[str, object]:
        return {
            "links": [lk.to_dict() for lk in self.links],
            "nodes": [n.to_dict() for n in self.nodes],
            "summary": self.summary.to_dict(),
        }
