"""Which process recorded something, and whether that process still runs.

A PID alone cannot tell: PIDs are reused, a store may sit on a file system several hosts share,
and a machine may have rebooted since. So a process is named by its *identity*: the host, the
boot (``/proc/sys/kernel/random/boot_id``) and the process's start time since boot (field 22 of
``/proc/PID/stat``), which together never repeat. Where ``/proc`` is missing only the host is
kept, and a process is then known dead only when no process has its PID.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_and_state(pid: int) -> tuple[str, str] | None:
    """(start time since boot in clock ticks, state letter) of ``pid``; None when it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return (fields[19], fields[0]) if len(fields) > 19 else None


def process_identity(pid: int | None = None) -> str:
    """``host/boot/start`` of ``pid`` (default: this process); boot and start empty without /proc."""
    pid = os.getpid() if pid is None else pid
    got = _start_and_state(pid) if Path("/proc").is_dir() else None
    start = got[0] if got is not None else ""
    return f"{socket.gethostname()}/{_boot_id() if start else ''}/{start}"


def process_alive(pid: int, identity: str) -> bool | None:
    """Whether the process ``identity`` names still runs: True, False, or None when this host
    cannot tell (another host recorded it, or nothing but the PID is known and it is in use)."""
    host, _, rest = identity.partition("/")
    boot, _, start = rest.partition("/")
    if host != socket.gethostname():
        return None
    if boot and start:
        if boot != _boot_id():
            return False  # the machine rebooted since: every process of then is gone
        got = _start_and_state(pid)
        if got is None or got[0] != start:
            return False  # no such process, or its PID now names another one
        return got[1] not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return None
    return None
