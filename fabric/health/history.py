"""Repeat offenders: links and nodes whose findings keep coming back on different days.

The store keeps past findings and hands them back as :class:`PastFinding` records. A finding on a
port belongs to whatever link that port is on now (either end); a finding with ``port=None`` is
about the whole node. Days are UTC calendar days; only findings at ``warn`` or worse count.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from fabric.health.status import Status

DAY_S = 86400.0


@dataclass(frozen=True, slots=True)
class PastFinding:
    """A finding from an earlier assessment, as the store keeps it."""

    time: float  # when it was found, seconds since the epoch
    guid: str  # node GUID (normalised)
    port: int | None = None  # None: a finding about the whole node
    status: Status = Status.WARN

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))


def day_of(time: float) -> int:
    """UTC day number of an epoch time."""
    return int(time // DAY_S)


@dataclass(frozen=True, slots=True)
class History:
    """Past finding days and times by port and by node, within the lookback."""

    port_days: dict[tuple[str, int], set[int]]
    node_days: dict[str, set[int]]
    port_times: dict[tuple[str, int], list[float]]

    @classmethod
    def build(cls, findings: Iterable[PastFinding], *, now: float, lookback_days: float) -> History:
        oldest = now - lookback_days * DAY_S
        port_days: dict[tuple[str, int], set[int]] = defaultdict(set)
        node_days: dict[str, set[int]] = defaultdict(set)
        port_times: dict[tuple[str, int], list[float]] = defaultdict(list)
        for f in findings:
            if not oldest <= f.time <= now or f.status.rank < Status.WARN.rank:
                continue
            node_days[f.guid].add(day_of(f.time))
            if f.port is not None:
                port_days[(f.guid, f.port)].add(day_of(f.time))
                port_times[(f.guid, f.port)].append(f.time)
        return cls(dict(port_days), dict(node_days), dict(port_times))

    def link_days(self, a: tuple[str, int], b: tuple[str, int]) -> set[int]:
        return self.port_days.get(a, set()) | self.port_days.get(b, set())

    def link_times(self, a: tuple[str, int], b: tuple[str, int]) -> list[float]:
        return self.port_times.get(a, []) + self.port_times.get(b, [])
