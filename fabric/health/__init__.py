"""Link health: BER with confidence bounds, flaps, errors, congestion and repeat offenders.

``assess(frame, fabric, since=..., now=...)`` scores every link of a fabric from the counter
table and returns a :class:`HealthReport` (links worst first, nodes, summary);
``assess_pieces(pieces, fabric, ...)`` gives the same report from the table a few snapshots at a
time, in the memory of one piece; ``assess_columns(pieces, fabric, ...)`` the same report from the
store's decoded blocks, summed column-wise (health's fast path).
"""

from __future__ import annotations

from fabric.health.assess import assess, assess_columns, assess_pieces
from fabric.health.ber import BerEstimate, estimate_ber, poisson_lower, poisson_upper
from fabric.health.history import PastFinding
from fabric.health.records import EndHealth, HealthReport, HealthSummary, LinkHealth, NodeHealth
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
    "assess_columns",
    "assess_pieces",
    "estimate_ber",
    "poisson_lower",
    "poisson_upper",
    "thresholds_from_mapping",
]
