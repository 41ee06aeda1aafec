"""Link health: BER with confidence bounds, flaps, errors, congestion and repeat offenders.

``assess(snapshots, fabric, since=..., now=...)`` scores every link of a fabric from decoded
counter snapshots (the store's blocks, or :func:`frame_snapshots` of a counter table), summed
column-wise, and returns a :class:`HealthReport` (links worst first, nodes, summary).
"""

from __future__ import annotations

from fabric.health.assess import assess
from fabric.health.ber import BerEstimate, estimate_ber, poisson_lower, poisson_upper
from fabric.health.history import PastFinding
from fabric.health.records import EndHealth, HealthReport, HealthSummary, LinkHealth, NodeHealth
from fabric.health.snapshots import frame_snapshots, in_time_order
from fabric.health.status import Status
from fabric.health.thresholds import HealthThresholds, thresholds_from_mapping
from topology.diff import LinkEvent

__all__ = [
    "BerEstimate",
    "EndHealth",
    "HealthReport",
    "HealthSummary",
    "HealthThresholds",
    "LinkEvent",
    "LinkHealth",
    "NodeHealth",
    "PastFinding",
    "Status",
    "assess",
    "estimate_ber",
    "frame_snapshots",
    "in_time_order",
    "poisson_lower",
    "poisson_upper",
    "thresholds_from_mapping",
]
