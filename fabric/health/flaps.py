"""Link flaps: counter increments on both ends of a cable, merged, plus downs seen by discovery.

A cable that goes down is counted by the LinkDownedCounter of *both* its ports. Like UFM's log
analyzer, two increments on the two ends whose samples are within ``merge_s`` seconds are one
event of the link (counted as the larger of the two deltas); increments further apart are
separate events. LinkErrorRecoveryCounter increments (retrains without going down) are merged the
same way. Discovery adds :class:`LinkEvent` records (the cable disappeared or came back between
two ``ibnetdiscover`` snapshots); a discovery "down" inside a merged counter event's interval
(widened by ``merge_s``) is the same flap and is not counted twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from topology.diff import LinkEvent


@dataclass(frozen=True, slots=True)
class CounterIncrement:
    """One delta row of one end with a counter that went up: interval start, sample time, count."""

    start: float
    time: float
    count: int


@dataclass(frozen=True, slots=True)
class Flaps:
    downs: int  # link-downs in the window, both ends merged, plus discovery downs
    recoveries: int  # link error recoveries (retrains), both ends merged
    down_since: float | None  # the link's last discovery event is "down": it has not come back
    times: tuple[float, ...]  # when each down or recovery was seen

    @property
    def total(self) -> int:
        return self.downs + self.recoveries


NO_FLAPS = Flaps(0, 0, None, ())


def merge_ends(
    a: Sequence[CounterIncrement], b: Sequence[CounterIncrement], merge_s: float
) -> list[CounterIncrement]:
    """Both ends' increments as link events: a pair within ``merge_s`` seconds counts once.

    >>> one = [CounterIncrement(0.0, 60.0, 1)]
    >>> [e.count for e in merge_ends(one, [CounterIncrement(2.0, 64.0, 1)], 10.0)]
    [1]
    >>> [e.count for e in merge_ends(one, [CounterIncrement(30.0, 90.0, 1)], 10.0)]
    [1, 1]
    """
    unpaired = sorted(b, key=lambda e: e.time)
    merged: list[CounterIncrement] = []
    for ea in sorted(a, key=lambda e: e.time):
        best = None
        for i, eb in enumerate(unpaired):
            gap = abs(eb.time - ea.time)
            if gap <= merge_s and (best is None or gap < abs(unpaired[best].time - ea.time)):
                best = i
        if best is None:
            merged.append(ea)
            continue
        eb = unpaired.pop(best)
        merged.append(
            CounterIncrement(min(ea.start, eb.start), max(ea.time, eb.time), max(ea.count, eb.count))
        )
    merged.extend(unpaired)
    return sorted(merged, key=lambda e: e.time)


def count_flaps(
    downs: tuple[Sequence[CounterIncrement], Sequence[CounterIncrement]],
    recoveries: tuple[Sequence[CounterIncrement], Sequence[CounterIncrement]],
    events: Iterable[LinkEvent],
    *,
    merge_s: float,
    since: float,
    now: float,
) -> Flaps:
    """Flaps of one link in [since, now] from its two ends' increments and its discovery events."""
    down_events = merge_ends(downs[0], downs[1], merge_s)
    recovery_events = merge_ends(recoveries[0], recoveries[1], merge_s)
    times = [e.time for e in down_events] + [e.time for e in recovery_events]
    n_downs = sum(e.count for e in down_events)
    down_since: float | None = None
    for event in sorted(events, key=lambda e: e.time):
        if event.time > now:
            break
        down_since = event.time if event.kind == "down" else None
        if event.kind != "down" or event.time < since:
            continue
        seen = any(e.start - merge_s <= event.time <= e.time + merge_s for e in down_events)
        if not seen:
            n_downs += 1
            times.append(event.time)
    return Flaps(n_downs, sum(e.count for e in recovery_events), down_since, tuple(sorted(times)))
