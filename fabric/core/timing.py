"""When a schedule is due: intervals (``30s``, ``5m``, ``1h``, ``1d``) and a five-field cron subset.

Pure: text in, times out. Cron fields are minute, hour, day of month, month, day of week (0-7,
both 0 and 7 are Sunday); each is ``*``, a number, a range ``a-b``, a step ``*/n`` or ``a-b/n``,
or a comma list of those. As in cron, when both day fields are restricted a day matches either.
Times are local wall-clock time, like cron's.

>>> parse_interval("5m")
300
>>> spec = parse_cron("*/15 9-17 * * 1-5")
>>> next_cron_fire(spec, datetime(2024, 6, 7, 17, 50)).isoformat()  # a Friday evening
'2024-06-10T09:00:00'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from fabric.core.units import duration_spec, parse_duration
from topology.errors import UsageError

# (name, lowest, highest) of the five cron fields, in order.
_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day-of-month", 1, 31),
    ("month", 1, 12),
    ("day-of-week", 0, 7),
)
_PART_RE = re.compile(r"(?P<base>\*|\d+(?:-\d+)?)(?:/(?P<step>\d+))?")
# A matching day is at most a few years away (Feb 29 on a given weekday: 28 years at worst).
_SEARCH_DAYS = 366 * 29


def parse_interval(text: str) -> int:
    """Whole seconds in ``30s``, ``5m``, ``1h``, ``1d`` (a bare number is seconds)."""
    seconds = parse_duration(text, "--every")
    if "." in text or seconds != int(seconds):
        raise UsageError(f"--every {text!r}: give whole seconds, such as 30s, 5m, 1h or 1d")
    return int(seconds)


@dataclass(frozen=True, slots=True)
class CronSpec:
    """The sets of values each field allows; ``*_any``: the day field was ``*`` (for cron's OR rule)."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday .. 6 = Saturday
    days_any: bool
    weekdays_any: bool

    def day_matches(self, day: datetime) -> bool:
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = (day.isoweekday() % 7) in self.weekdays
        if self.days_any or self.weekdays_any:
            return dom and dow
        return dom or dow

    def matches(self, when: datetime) -> bool:
        """Whether cron fires at ``when``'s minute."""
        return when.minute in self.minutes and when.hour in self.hours and self.day_matches(when)


def _field(text: str, part_of: str, name: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        m = _PART_RE.fullmatch(part)
        if m is None:
            raise UsageError(f"cron {part_of!r}: {name} field {text!r}: use *, N, A-B, */N or lists of them")
        step = int(m["step"]) if m["step"] is not None else 1
        if step < 1:
            raise UsageError(f"cron {part_of!r}: {name} field {text!r}: a step must be at least 1")
        if m["base"] == "*":
            first, last = low, high
        else:
            first_s, _, last_s = m["base"].partition("-")
            first, last = int(first_s), int(last_s or first_s)
            if m["step"] is not None and not last_s:
                last = high  # 'N/step' is N, N+step, ... as in Vixie cron
        for v in (first, last):
            if not low <= v <= high:
                raise UsageError(f"cron {part_of!r}: {name} field {text!r}: {v} is outside {low}-{high}")
        if first > last:
            raise UsageError(f"cron {part_of!r}: {name} field {text!r}: range {first}-{last} runs backwards")
        values.update(range(first, last + 1, step))
    return frozenset(values)


def parse_cron(text: str) -> CronSpec:
    """Five fields: minute hour day-of-month month day-of-week. A bad one is a UsageError naming it."""
    parts = (text or "").split()
    if len(parts) != 5:
        raise UsageError(
            f"cron {text!r}: needs 5 fields (minute hour day-of-month month day-of-week), got {len(parts)}"
        )
    sets = [_field(p, text, name, low, high) for p, (name, low, high) in zip(parts, _FIELDS, strict=True)]
    weekdays = frozenset(d % 7 for d in sets[4])
    return CronSpec(
        " ".join(parts), sets[0], sets[1], sets[2], sets[3], weekdays, parts[2] == "*", parts[4] == "*"
    )


def next_cron_fire(spec: CronSpec, after: datetime) -> datetime:
    """The first minute strictly after ``after`` at which ``spec`` fires (naive or aware datetime)."""
    t = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    limit = t + timedelta(days=_SEARCH_DAYS)
    while t < limit:
        if not spec.day_matches(t):
            t = t.replace(hour=0, minute=0) + timedelta(days=1)
        elif t.hour not in spec.hours:
            t = t.replace(minute=0) + timedelta(hours=1)
        elif t.minute not in spec.minutes:
            t += timedelta(minutes=1)
        else:
            return t
    raise UsageError(f"cron {spec.text!r}: never fires (no such date)")


@dataclass(frozen=True, slots=True)
class Timing:
    """How often a schedule runs: every ``interval_seconds``, or by ``cron``."""

    interval_seconds: int | None = None
    cron: CronSpec | None = None

    def __post_init__(self) -> None:
        if (self.interval_seconds is None) == (self.cron is None):
            raise UsageError("a schedule needs exactly one of --every or --cron")

    @classmethod
    def parse(cls, every: str | None, cron: str | None) -> Timing:
        if (every is None) == (cron is None):
            raise UsageError("give exactly one of --every INTERVAL or --cron 'M H DOM MON DOW'")
        if every is not None:
            return cls(interval_seconds=parse_interval(every))
        assert cron is not None
        return cls(cron=parse_cron(cron))

    @property
    def text(self) -> str:
        if self.cron is not None:
            return f"cron {self.cron.text}"
        assert self.interval_seconds is not None
        return f"every {duration_spec(self.interval_seconds)}"

    def first_run(self, now: float) -> float:
        """When a new schedule first runs: at once for an interval, the next fire time for cron."""
        return now if self.cron is None else self.next_fire(now)

    def next_fire(self, after: float) -> float:
        """The next fire time strictly after ``after`` (seconds since the epoch)."""
        if self.cron is None:
            assert self.interval_seconds is not None
            return after + self.interval_seconds
        local = datetime.fromtimestamp(after)
        return next_cron_fire(self.cron, local).timestamp()

    def after_run(self, started: float, now: float) -> float:
        """When to run next after a run that started at ``started``: one interval after its start
        (no backlog: if that is already past, now); cron: its next fire time after now."""
        if self.cron is None:
            assert self.interval_seconds is not None
            return max(started + self.interval_seconds, now)
        return self.next_fire(max(started, now))


def timing_of(interval_seconds: int | None, cron: str | None) -> Timing:
    """The Timing of a stored schedule."""
    return Timing(interval_seconds, parse_cron(cron) if cron is not None else None)


__all__ = [
    "CronSpec",
    "Timing",
    "next_cron_fire",
    "parse_cron",
    "parse_interval",
    "timing_of",
]
