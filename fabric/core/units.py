"""Durations, the one way: parsed from what an operator types, written back exactly, or said in
the unit an operator would use.

>>> parse_duration("5m"), parse_duration("0.2s"), parse_duration("90"), parse_duration("2d")
(300.0, 0.2, 90.0, 172800.0)
>>> duration_spec(300), duration_spec(90), duration_spec(5400)
('5m', '90s', '90m')
>>> human_duration(3.2), human_duration(600), human_duration(5400), human_duration(3 * 86400)
('3.2 s', '10 min', '90 min', '3.0 days')

And a moment in a finding's text, in UTC (the store keeps epoch seconds):

>>> utc_time(1_800_000_000)
'2027-01-15 08:00:00 UTC'
"""

from __future__ import annotations

import math
import re
import time

from topology.errors import UsageError

_DURATION = re.compile(r"^\s*(?P<n>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_SPEC_UNITS = (("d", 86400.0), ("h", 3600.0), ("m", 60.0))


MAX_DURATION_S = 10 * 365 * 86400


def parse_duration(text: str, what: str = "--every") -> float:
    """Seconds in ``30s``, ``5m``, ``1h``, ``2d``, ``0.2s``, ``500ms`` or a bare number of seconds;
    a one-line UsageError naming ``what`` otherwise (zero, negative, not a duration)."""
    m = _DURATION.match(text or "")
    if not m:
        raise UsageError(f"{what} {text!r}: give a duration such as 30s, 5m or 1h")
    seconds = float(m["n"]) * _UNIT_S[(m["unit"] or "s").lower()]
    if seconds <= 0:
        raise UsageError(f"{what} {text!r}: must be more than 0")
    if seconds > MAX_DURATION_S:  # 99999999999999999999d would not fit the store, nor mean anything
        raise UsageError(f"{what} {text[:40]!r}: longer than {MAX_DURATION_S // (365 * 86400)} years")
    return seconds


def duration_spec(seconds: float) -> str:
    """The shortest exact spelling that :func:`parse_duration` reads back: 300 -> ``5m``."""
    for unit, size in _SPEC_UNITS:
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def human_duration(seconds: float) -> str:
    """12 min, 2.1 h, 3.0 days: the unit an operator would say."""
    if math.isinf(seconds):
        return "forever"
    if seconds < 10:
        return f"{seconds:.1f} s"  # a lab's collections can be under a second apart: never "0 s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def utc_time(epoch: float) -> str:
    """``2027-01-15 08:00:00 UTC``: when something happened, as findings and advice say it."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))
