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
from typing import Any

from topology.nameformats import HOST_NAME_RE

_NUMBER_RUN = re.compile(r"(\d+)")
# A host name with one run of digits: ClusterShell reads it as pattern ``prefix%ssuffix`` and
# the index ``digits`` (kept as that very text: a RangeSet holds ``"%0*d" % (pad, n)``, with the
# run's own length as pad when it has leading zeros). Runs longer than its limit (1e100) are
# left to it, and so is every other name (none or several numbers: a multi-axis set).
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


def host_sort_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Natural order: ``dgx-2`` before ``dgx-10``, ``127.0.0.9`` before ``127.0.0.10``."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in _NUMBER_RUN.split(name) if part)


def fold_names(names: Iterable[str], *, last_number_only: bool = False) -> str:
    """``['dgx-01', 'dgx-02', 'dgx-04']`` -> ``dgx-[01-02,04]``: the one host-range fold.

    ``last_number_only`` folds ranges on the last number of a name only (``su1-dgx-[01-04]``),
    as Slurm's hostlist expressions read them. A name that is no host name (a NodeDescription's
    ``dgx-[0001-0999]``, ``a[b``) is never read as a range: it follows, quoted, as it is.
    """
    names = list(names)
    hosts = [n for n in names if HOST_NAME_RE.fullmatch(n)]
    others = [repr(n) for n in dict.fromkeys(n for n in names if not HOST_NAME_RE.fullmatch(n))]
    # At most one number a name: one axis, the same fold whichever axis is folded.
    folded = fold_one_number(hosts) if hosts else None
    if folded is not None:
        return ",".join([folded, *others])
    if not last_number_only:
        ns = host_nodeset(hosts)
    else:
        ns = host_nodeset(sorted(set(hosts), key=host_sort_key))
        ns.fold_axis = (-1,)
    return ",".join(([str(ns)] if hosts else []) + others)


def host_nodeset(hosts: Iterable[str]) -> Any:
    """``NodeSet.fromlist(hosts)`` for host names (HOST_NAME_RE: no brackets, operators or
    groups), the same set built without ClusterShell parsing each name: the names with one
    number are gathered by pattern and each pattern's indexes added at once (a tenth of the
    time at a thousand hosts, where every ``discover`` folds its compute hosts)."""
    from ClusterShell.NodeSet import NodeSet, NodeSetBase
    from ClusterShell.RangeSet import RangeSet

    ns = NodeSet()
    indexes: dict[tuple[str, str], list[str]] = {}
    rest: list[str] = []
    for name in hosts:
        m = _ONE_NUMBER.fullmatch(name)
        if m is None:
            rest.append(name)
            continue
        prefix, digits, suffix = m.groups()
        indexes.setdefault((prefix, suffix), []).append(digits)
    for (prefix, suffix), digits in indexes.items():
        rs = RangeSet()
        rs.update(digits)
        ns.update(NodeSetBase(f"{prefix}%s{suffix}", rs, copy_rangeset=False))
    ns.updaten(rest)
    return ns
