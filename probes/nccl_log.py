"""NCCL's own log lines (``NCCL_DEBUG=INFO`` or ``WARN``), wherever they land in nccl-tests output.

NCCL writes its log to the same stdout as nccl-tests' table, so a log line can start in the middle
of a row: nccl-tests prints a row's first five columns, runs the collective (whose ``NCCL INFO``
lines, with ``NCCL_DEBUG_SUBSYS=COLL``, follow straight on), then the timings::

               0             0     float    none      -1vm:1299:1299 [0] NCCL INFO AllGather: opCount 0 ...

:func:`split_log` cuts such a line into the row's text before the log and the log line. The
formats are NCCL's ``src/debug.cc`` (v2.28.9-1; the host:pid:tid prefix is the same since 2.x):

* ``[timestamp ]host:pid:tid [cudaDev] NCCL INFO message``
* ``\\n[timestamp ]host:pid:tid [cudaDev] file:line NCCL WARN message`` (a WARN starts on a line
  of its own and carries a ``[%F %T] `` timestamp by default; 2.30 adds `` (function)`` after the
  line number)
* ``host:pid:tid [cudaDev] time function:line NCCL TRACE message``, ``host:pid:tid NCCL CALL ...``
* the VERSION level (``NCCL version 2.28.9+cuda13.0``) has no prefix and is no log line here.

Linear: a line is searched once for the end of a prefix (``[dev] ... NCCL LEVEL``, its parts of
bounded length) and the host:pid:tid before it read backwards, within the 1,024 bytes NCCL's log
buffer holds.
"""

from __future__ import annotations

import re
from collections.abc import Container
from dataclasses import dataclass

_WINDOW = 1100  # NCCL formats a log line in a 1,024-byte buffer: its prefix is never longer
_MAX_HOST = 256
_MAX_DIGITS = 10
# Where a log line's prefix ends: '[dev] NCCL INFO ', '[dev] file:line NCCL WARN ', '[dev] time
# function:line NCCL TRACE ', 'NCCL CALL ' (bounded: linear whatever the line holds).
_CANDIDATE = re.compile(
    r"\[(?P<dev>\d{1,9})\] (?:(?P<loc>[^\[\]\n]{1,600}?) )?NCCL (?P<level>INFO|WARN|TRACE|ABORT)(?: |$)"
    r"|(?P<call>NCCL CALL)(?: |$)"
)
# A row's last value glued to the host name: '-1vm', '0.06vm', 'N/Avm'.
_GLUED = re.compile(r"(-?\d+(?:\.\d+)?|N/A)([A-Za-z].*)")


@dataclass(frozen=True, slots=True)
class NcclLogLine:
    """One NCCL log line: who wrote it (host, process, thread, CUDA device) and what."""

    host: str
    pid: int
    tid: int
    device: int | None  # None for 'NCCL CALL' lines
    level: str  # INFO, WARN, TRACE, ABORT, CALL
    location: str | None  # 'transport/net_ib.cc:253' (WARN, TRACE), else None
    message: str

    @property
    def process(self) -> str:
        """``host:pid``: one process of the job."""
        return f"{self.host}:{self.pid}"


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() and len(text) <= _MAX_DIGITS else None


def _timestamp_start(line: str, lo: int, start: int) -> int:
    """Where a ``[timestamp] `` right before ``start`` begins (``start`` when there is none)."""
    if start < 2 or line[start - 2 : start] != "] ":
        return start
    opening = line.rfind("[", lo, start - 2)
    inside = line[opening + 1 : start - 2] if opening >= 0 else ""
    if opening < 0 or "]" in inside or not any(c.isdigit() for c in inside):
        return start
    return opening


def _log_at(line: str, m: re.Match[str], known: Container[str]) -> tuple[int, NcclLogLine] | None:
    """The log line whose ``[dev] ... NCCL LEVEL`` (or ``NCCL CALL``) ``m`` found, and where it
    starts in ``line``; None when no ``host:pid:tid`` stands right before it."""
    if m["call"] is not None:
        token_end, device, level, location = m.start() - 1, None, "CALL", None
    else:
        token_end, device, level = m.start() - 1, int(m["dev"]), m["level"]
        location = m["loc"].strip() if m["loc"] else None
    if token_end < 1 or line[token_end] != " ":
        return None
    lo = max(0, token_end - _WINDOW)
    space = line.rfind(" ", lo, token_end)
    if space < 0 and lo > 0:
        return None
    token_start = space + 1
    parts = line[token_start:token_end].rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        return None
    host, pid_text, tid_text = parts
    pid, tid = _number(pid_text), _number(tid_text)
    if pid is None or tid is None:
        return None
    start = _timestamp_start(line, lo, token_start)
    if start == token_start and line[:start].strip() and len(host) <= _MAX_HOST:
        host, start = _unglue(host, pid_text, start, known)  # no timestamp between row and host
    message = line[m.end() :].rstrip()
    return start, NcclLogLine(host, pid, tid, device, level, location, message)


def _unglue(host: str, pid: str, start: int, known: Container[str]) -> tuple[str, int]:
    """A host name that follows a row's text may carry the row's last value glued to its front
    ('-1vm'): the processes already seen at a line's start say where the name begins; failing
    that, a leading number before a letter is the row's."""
    if f"{host}:{pid}" in known:
        return host, start
    for cut in range(1, len(host)):
        if f"{host[cut:]}:{pid}" in known:
            return host[cut:], start + cut
    if m := _GLUED.fullmatch(host):
        return m.group(2), start + len(m.group(1))
    return host, start


def split_log(line: str, known: Container[str] = ()) -> tuple[str, NcclLogLine | None]:
    """``line`` as (the text before NCCL's log line, the log line), or ``(line, None)``.

    ``known`` holds the processes (``host:pid``) whose log lines were seen at the start of a line:
    they settle where a host name glued to a row's last value begins.

    >>> text, log = split_log("           0             0     float    none      -1vm:1299:1299 [0] NCCL INFO AllGather: opCount 0")
    >>> text.split(), log.host, log.level, log.message
    (['0', '0', 'float', 'none', '-1'], 'vm', 'INFO', 'AllGather: opCount 0')
    """
    if "NCCL " not in line:
        return line, None
    for m in _CANDIDATE.finditer(line):
        found = _log_at(line, m, known)
        if found is not None:
            start, log = found
            return line[:start], log
    return line, None


__all__ = ["NcclLogLine", "split_log"]
