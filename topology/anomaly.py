"""What discovery reports about a fabric: an :class:`Anomaly` of a :class:`Severity`.

The record every detector builds (topology.wiring, topology.hostfaults, topology.addressing) and
every front end reads; it lives apart from the detectors so that they import it, not each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from topology.model import Guid, PortRef


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"


@dataclass(frozen=True, slots=True)
class Anomaly:
    kind: str
    severity: Severity
    nodes: tuple[Guid, ...]
    ports: tuple[PortRef, ...]
    message: str
