"""Folding host names that carry at most one number, without importing ClusterShell.

``ibfab discover`` folds its compute hosts (``dgx-[0001-1024]``) in every report. ClusterShell
does that, but importing it (its group resolver, configparser, logging, subprocess) costs more
than the rest of the report. Names with one run of digits or none (HOST_NAME_RE's names: no
brackets, commas or ``%``) are one-axis patterns, folded here as ClusterShell's
``str(NodeSet)`` folds them with its default settings; any other name set (several numbers in
a name: a multi-axis fold) returns None and the caller folds it with ClusterShell
(probes.inventory.fold_names). ``tests/probes/test_hostfold.py`` holds the two equal on many
name sets.

ClusterShell's rules, as followed here: a name ``prefix<digits>suffix`` is the pattern
``prefix%ssuffix`` with the index ``digits`` kept as text; patterns are written in sorted order,
joined by commas, a pattern with one index written plain and one with several in brackets. An
index set is written as runs of consecutive numbers in the order (length, text); a run is broken
where the zero padding changes: a run started by a zero-padded index (``08``) takes indexes of
its length only, one started unpadded takes no zero-padded one, and a run is written with its
first index's length as padding when that index is zero-padded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# One run of up to 100 digits, as probes.inventory.host_nodeset splits a name (longer runs are
# left to ClusterShell).
_ONE_NUMBER = re.compile(r"([^0-9]*)([0-9]{1,100})([^0-9]*)")
_NO_NUMBER = re.compile(r"[^0-9]*")


def fold_one_number(hosts: Iterable[str]) -> str | None:
    """ClusterShell's fold of ``hosts`` (host names) when each has at most one number, else None."""
    patterns: dict[str, set[str] | None] = {}
    for name in hosts:
        m = _ONE_NUMBER.fullmatch(name)
        if m is None:
            if _NO_NUMBER.fullmatch(name) is None:
                return None  # several numbers (or a very long one): ClusterShell's multi-axis fold
            patterns.setdefault(name, None)
            continue
        prefix, digits, suffix = m.groups()
        indexes = patterns.setdefault(f"{prefix}%s{suffix}", set())
        if indexes is None:
            return None  # not reachable for these names (a pattern holds %s); be safe
        indexes.add(digits)
    out = []
    for pattern, indexes in sorted(patterns.items(), key=lambda item: item[0]):
        if not indexes:
            out.append(pattern)
            continue
        ranges = _ranges(indexes)
        out.append(pattern % (f"[{ranges}]" if len(indexes) > 1 else ranges))
    return ",".join(out)


def _ranges(indexes: set[str]) -> str:
    """``{"01", "02", "04"}`` -> ``01-02,04`` (the rules in the module doc)."""
    runs: list[str] = []
    start = last = -1
    pad = 0
    padded = False
    for text in sorted(indexes, key=lambda s: (len(s), s)):
        n = len(text)
        zero = n > 1 and text[0] == "0"
        number = int(text)
        if start >= 0 and number == last + 1 and (n == pad if padded else not zero):
            last = number
            continue
        if start >= 0:
            runs.append(_run(start, last, pad if padded else 0))
        start = last = number
        pad, padded = n, zero
    runs.append(_run(start, last, pad if padded else 0))
    return ",".join(runs)


def _run(start: int, last: int, pad: int) -> str:
    return f"{start:0{pad}d}" if start == last else f"{start:0{pad}d}-{last:0{pad}d}"
