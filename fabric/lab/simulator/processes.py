"""The lab's processes: start ibsim and OpenSM in their own sessions, tell whether a recorded PID
still runs the program it ran (PIDs are reused), stop one by its PID, wait for a line in its log,
and sweep away what killed clients left behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from topology.errors import LabError

_STOP_GRACE = 3.0
# Popen objects of the processes this Python process started: kept so they are reaped, not leaked.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def alive(pid: int, program: str) -> bool:
    """True if ``pid`` runs ``program`` (guards against PID reuse); a zombie counts as dead."""
    if pid <= 0:
        return False
    child = _CHILDREN.get(pid)
    if child is not None:
        if child.poll() is None:
            return True  # our own child, not reaped: it cannot have been reused
        del _CHILDREN[pid]
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return False
    comm = stat[stat.find("(") + 1 : stat.rfind(")")]
    if stat[stat.rfind(")") + 2 :].startswith(("Z", "X")):
        return False
    return program in (comm, Path(argv0).name)


def stop_process(pid: int, program: str) -> None:
    """SIGTERM, then SIGKILL after a grace period; only if ``pid`` still runs ``program``."""
    if not alive(pid, program):
        return
    for sig, wait in ((signal.SIGTERM, _STOP_GRACE), (signal.SIGKILL, _STOP_GRACE)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not alive(pid, program):
                return
            time.sleep(0.02)
    raise LabError(f"{program} (pid {pid}) did not stop after SIGKILL")


def start_process(
    argv: Sequence[str], env: dict[str, str], cwd: Path, out: Path, err: Path, stdin: int
) -> int:
    with out.open("ab") as fout, err.open("ab") as ferr:
        try:
            proc = subprocess.Popen(
                list(argv), stdin=stdin, stdout=fout, stderr=ferr, env=env, cwd=cwd, start_new_session=True
            )
        except OSError as exc:
            raise LabError(f"cannot start {argv[0]}: {exc.strerror or exc}") from exc
    _CHILDREN[proc.pid] = proc
    return proc.pid


def wait_for(path: Path, needle: str, pid: int, program: str, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError):
            if needle in path.read_text(errors="replace"):
                return
        if not alive(pid, program):
            raise LabError(f"{program} exited before {what}")
        if time.monotonic() > deadline:
            raise LabError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(0.05)


def clean_litter(scratch: Path, only_dead: bool = True) -> None:
    """Remove ``sys-<pid>`` trees that umad2sim clients left behind when they were killed."""
    import shutil

    if not scratch.is_dir():
        return
    for entry in scratch.glob("sys-*"):
        pid = entry.name[4:]
        if only_dead and pid.isdigit() and Path(f"/proc/{pid}").exists():
            continue
        shutil.rmtree(entry, ignore_errors=True)
