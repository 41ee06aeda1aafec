"""What one counter reading says on its own, where no rate can be had.

A counter read once is a total since it was last cleared, over a time nobody knows (a switch's
counters run from its last reboot or the last ``perfquery -R``, often months). Two things in it are
findings all the same:

* **saturated**: a sticky error counter at its maximum (SymbolErrorCounter 65,535) has stopped
  counting. The true count is unknown, and it can show no new errors until it is cleared, so no
  later reading can judge the link either. Judged on every link's newest reading.
* **large**: a physical-layer error count at or above ``reading_errors_large`` on a link whose
  ends were read only once (with two readings, health judges the rate instead).

Only the counters that speak of the cable are judged: symbol errors, receive errors and link
error recoveries. LinkDowned counts every reboot of the host behind the cable; switch relay
errors, discards and constraint errors count traffic to hosts that went away; the 4-bit local
link integrity and buffer overrun counters saturate at 15. None of those says a cable is bad
from a total whose time is unknown.

The action is always the same: clear the counters of both ends (``perfquery -R``, or
``ibclearcounters`` fabric-wide), read again, and let the rate judge the cable.

>>> rows = {("0x1", 1): {"symbol_errors": 65535}, ("0x2", 3): {"symbol_errors": 0}}
>>> [f.counts[0].saturated for f in judge_reading(rows, [(("0x1", 1), ("0x2", 3))], one_reading=True)]
[True]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fabric.core.fields import max_value
from fabric.health.thresholds import HealthThresholds
from topology.model import Guid, PortRef

# The counters a total is judged on, in the order reasons name them.
CABLE_COUNTERS: tuple[str, ...] = ("symbol_errors", "rcv_errors", "link_error_recovery")
# Saturation alone says something only for counters wide enough not to fill up in normal life.
_SATURATION_BITS_MIN = 8

PortKey = tuple[str, int]
LinkEnds = tuple[PortKey, PortKey]


@dataclass(frozen=True, slots=True)
class ReadCount:
    """One counter of one end, as read."""

    port: PortRef
    counter: str
    value: int
    saturated: bool

    def to_dict(self) -> dict[str, object]:
        return {
            "guid": self.port.guid,
            "port": self.port.port,
            "counter": self.counter,
            "value": self.value,
            "saturated": self.saturated,
        }


@dataclass(frozen=True, slots=True)
class ReadingFinding:
    """A cable whose counters, read once, are saturated or large (``a`` the lower end)."""

    a: PortRef
    b: PortRef
    counts: tuple[ReadCount, ...]  # saturated first, then largest
    one_reading: bool  # the ends were read once: no rate at all yet
    taken_at: float | None = None

    @property
    def key(self) -> tuple[tuple[str, int], tuple[str, int]]:
        return ((self.a.guid, self.a.port), (self.b.guid, self.b.port))

    @property
    def saturated(self) -> bool:
        return any(c.saturated for c in self.counts)

    def reasons(self) -> tuple[str, ...]:
        """One sentence per counter: what was read, and what it means."""
        out = []
        for c in self.counts:
            if c.saturated:
                out.append(
                    f"{c.counter} at {c.port} is at its maximum ({c.value:,}): saturated, so the true "
                    "count is unknown and no new errors can show until the counters are cleared"
                )
            else:
                out.append(
                    f"{c.counter} at {c.port} is {c.value:,} on its first reading: a total since the "
                    "counters were last cleared, over a time not known, so no rate"
                )
        return tuple(out)

    def to_dict(self) -> dict[str, object]:
        return {
            "a": {"guid": self.a.guid, "port": self.a.port},
            "b": {"guid": self.b.guid, "port": self.b.port},
            "counts": [c.to_dict() for c in self.counts],
            "saturated": self.saturated,
            "one_reading": self.one_reading,
            "taken_at": self.taken_at,
            "reasons": list(self.reasons()),
        }


def judge_reading(
    values: Mapping[PortKey, Mapping[str, int | None]],
    links: Iterable[LinkEnds],
    *,
    one_reading: bool,
    thresholds: HealthThresholds | None = None,
    taken_at: float | None = None,
) -> list[ReadingFinding]:
    """The cables of ``links`` (each as its two ``(guid, port)`` ends, lower first) whose ends'
    counters in ``values`` (one reading: end -> counter -> value) are saturated, or, when
    ``one_reading``, at or above ``thresholds.reading_errors_large``. Worst first."""
    t = thresholds or HealthThresholds()
    out = []
    for a, b in links:
        counts: list[ReadCount] = []
        for end in (a, b):
            read = values.get(end)
            if not read:
                continue
            for name in CABLE_COUNTERS:
                value = read.get(name)
                if value is None or value <= 0:
                    continue
                full = value >= max_value(name) and max_value(name) >= (1 << _SATURATION_BITS_MIN) - 1
                if full or (one_reading and value >= t.reading_errors_large):
                    counts.append(ReadCount(PortRef(Guid(end[0]), end[1]), name, value, full))
        if counts:
            counts.sort(key=lambda c: (not c.saturated, -c.value, c.counter, c.port))
            out.append(
                ReadingFinding(
                    PortRef(Guid(a[0]), a[1]), PortRef(Guid(b[0]), b[1]), tuple(counts), one_reading, taken_at
                )
            )
    out.sort(key=lambda f: (-sum(c.saturated for c in f.counts), -max(c.value for c in f.counts), f.key))
    return out
