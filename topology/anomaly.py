"""What a wiring check reports: an :class:`Anomaly` with its :class:`Severity`.

Its own module so that every detector (topology.wiring, topology.hostfaults, topology.addressing)
builds the same record without importing the module that gathers them all
(:func:`topology.wiring.find_anomalies`, where these names are also found).
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
