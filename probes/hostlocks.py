"""At most one probe per host at a time: across the threads of a process and, with a directory,
across every ibfab process that uses that directory (the daemon, CLI sweeps, fan-outs).

Across processes each host is a lock file ``DIR/HOST.lock`` held with ``flock``: the kernel
releases it when the holder closes it or dies however it dies (SIGKILL, OOM), so a crash never
leaves a host locked. The holder writes its PID, since when, its command line and why into the
file, so a process that finds a host busy can say who has it. Lock files are never removed
(removing one while another process opens it would let two processes lock two different files).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from probes.inventory import fold_names, host_sort_key
from topology.errors import UnavailableError

_POLL = 0.2  # seconds between tries of a lock another process holds (flock has no timeout)
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class HostBusy(UnavailableError):
    """A host stayed busy with another probe for longer than we were willing to wait."""


def this_command() -> str:
    """This process's command line, short: ``ibfab sweep run --lab demo``."""
    argv = [os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python", *sys.argv[1:]]
    return " ".join(argv)


class HostLocks:
    """At most one probe per host at a time, across threads (and processes, with ``directory``).

    A probe that needs several hosts (a pair for a bandwidth test) takes them all at once or
    waits, so two pair probes can never deadlock by each holding one end.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else None
        self._busy: set[str] = set()
        self._files: dict[str, int] = {}  # host -> the fd holding its lock file
        self._cond = threading.Condition()

    def busy(self) -> frozenset[str]:
        """The hosts this process holds."""
        with self._cond:
            return frozenset(self._busy)

    def try_acquire(self, hosts: Iterable[str], why: str = "") -> bool:
        wanted = set(hosts)
        with self._cond:
            if wanted & self._busy or self._lock_files(wanted, why) is not None:
                return False
            self._busy |= wanted
            return True

    def acquire(self, hosts: Iterable[str], timeout: float | None = None, why: str = "") -> None:
        """Take every host of ``hosts`` or none; wait at most ``timeout`` seconds (None: as long
        as it takes). :class:`HostBusy` names the hosts still busy and, for a host another
        process holds, that process (PID, command, since when, why)."""
        wanted = set(hosts)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                taken = wanted & self._busy
                other = None if taken else self._lock_files(wanted, why)
                if not taken and other is None:
                    self._busy |= wanted
                    return
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise HostBusy(_busy_message(timeout, taken, other))
                # Our own threads notify; another process's release is seen by polling.
                wait = left if self.directory is None else min(_POLL, _POLL if left is None else left)
                self._cond.wait(wait)

    def release(self, hosts: Iterable[str]) -> None:
        with self._cond:
            for host in hosts:
                self._busy.discard(host)
                fd = self._files.pop(host, None)
                if fd is not None:
                    os.close(fd)  # closing the file releases its flock
            self._cond.notify_all()

    @contextmanager
    def hold(self, hosts: Sequence[str], timeout: float | None = None, why: str = "") -> Iterator[None]:
        self.acquire(hosts, timeout, why)
        try:
            yield
        finally:
            self.release(hosts)

    # -- across processes --------------------------------------------------------------------
    def lock_file(self, host: str) -> Path:
        assert self.directory is not None
        name = host if _SAFE_NAME.fullmatch(host) else hashlib.sha256(host.encode()).hexdigest()[:32]
        return self.directory / f"{name}.lock"

    def _lock_files(self, hosts: set[str], why: str) -> tuple[str, str] | None:
        """Lock every host's file, or none: None when all are ours now, else (a busy host, what
        its holder wrote)."""
        if self.directory is None:
            return None
        self.directory.mkdir(parents=True, exist_ok=True)
        got: list[str] = []
        for host in sorted(hosts, key=host_sort_key):
            fd = os.open(self.lock_file(host), os.O_RDWR | os.O_CREAT, 0o644)  # not inherited
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 1024, 0).decode(errors="replace")
                os.close(fd)
                for h in got:
                    os.close(self._files.pop(h))
                return host, holder
            self._files[host] = fd
            got.append(host)
            line = f"{os.getpid()}\t{time.time():.0f}\t{this_command()}\t{why}\n".encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, line, 0)
        return None


def describe_holder(text: str) -> str:
    """What a lock file says of its holder: ``PID 4242 (ibfab sweep run ...) since 11:02:03``."""
    parts = text.rstrip("\n").split("\t")
    if len(parts) < 3 or not parts[0].isdigit():
        return "another process"
    command = parts[2] if len(parts[2]) <= 120 else parts[2][:117] + "..."
    said = f"PID {parts[0]} ({command})"
    with suppress(ValueError):
        said += " since " + time.strftime("%H:%M:%S", time.localtime(float(parts[1])))
    if len(parts) > 3 and parts[3]:
        said += f", for {parts[3]}"
    return said


def _busy_message(timeout: float | None, taken: set[str], other: tuple[str, str] | None) -> str:
    if other is not None:
        host, holder = other
        busy = f"is still busy after {timeout:g} s" if timeout else "is busy"
        return f"host {host} {busy}: another ibfab process probes it: {describe_holder(holder)}"
    return f"host(s) still busy after {timeout:g} s: {fold_names(sorted(taken, key=host_sort_key))}"


__all__ = ["HostBusy", "HostLocks", "describe_holder", "this_command"]
