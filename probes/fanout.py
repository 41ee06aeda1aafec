"""Run one probe on many hosts: bounded concurrency, one record per host, identical output folded.

>>> from probes.inventory import HostEntry
>>> from probes.runner import LocalTransport
>>> hosts = [HostEntry(f"n{i}") for i in (1, 2, 3)]
>>> rs = fan_out(hosts, ["echo", "hi"], lambda h: LocalTransport(h.name))
>>> [(f.hosts, f.stdout) for f in fold(rs)]
[('n[1-3]', 'hi\\n')]
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from probes.inventory import HostEntry, fold_names, host_sort_key
from probes.transport import CommandResult, FailureKind, Transport
from topology.errors import IbfabError

ArgvForHost = Callable[[HostEntry], Sequence[str]] | Sequence[str]


@dataclass(frozen=True, slots=True)
class FoldedResult:
    """Hosts that answered identically, as one host range (``dgx-[0001-0004,0007]``)."""

    hosts: str
    count: int
    exit_code: int | None
    stdout: str
    stderr: str
    failure: FailureKind | None
    message: str

    @property
    def ok(self) -> bool:
        return self.failure is None and self.exit_code == 0


def fan_out(
    hosts: Iterable[HostEntry],
    argv_for_host: ArgvForHost,
    transport_factory: Callable[[HostEntry], Transport],
    concurrency: int = 16,
    timeout: float = 60.0,
    locks: HostLocks | None = None,
) -> list[CommandResult]:
    """Run a command on every host, at most ``concurrency`` at once; results sorted by host name.

    ``argv_for_host`` is one argv for all hosts or a function of the host. A host that cannot be
    reached is a record with a :class:`FailureKind`, never an exception. With ``locks``, a host
    already busy with another probe is waited for, so no host runs two probes at once.
    """
    entries = sorted(hosts, key=lambda h: host_sort_key(h.name))
    if not entries:
        return []

    def one(entry: HostEntry) -> CommandResult:
        start = time.monotonic()
        argv: tuple[str, ...] = ()
        try:
            argv = tuple(argv_for_host(entry) if callable(argv_for_host) else argv_for_host)
            if locks is None:
                return _run_once(entry, argv, transport_factory, timeout)
            with locks.hold([entry.name]):
                return _run_once(entry, argv, transport_factory, timeout)
        except IbfabError as exc:
            message = exc.one_line()
        except Exception as exc:  # one host's bug must not lose the other hosts' results
            message = f"{type(exc).__name__}: {exc}"
        return CommandResult(
            entry.name, argv, None, "", "", time.monotonic() - start, FailureKind.ERROR, message
        )

    with ThreadPoolExecutor(
        max_workers=max(1, min(concurrency, len(entries))), thread_name_prefix="fanout"
    ) as pool:
        return list(pool.map(one, entries))


def _run_once(
    entry: HostEntry, argv: tuple[str, ...], factory: Callable[[HostEntry], Transport], timeout: float
) -> CommandResult:
    transport = factory(entry)
    try:
        return transport.run(argv, timeout)
    finally:
        transport.close()


def fold(results: Iterable[CommandResult]) -> list[FoldedResult]:
    """Group hosts whose exit code, stdout and stderr (or failure) are identical; sorted by first host."""
    groups: dict[tuple[int | None, str, str, FailureKind | None, str], list[str]] = {}
    for r in results:
        groups.setdefault((r.exit_code, r.stdout, r.stderr, r.failure, r.message), []).append(r.host)
    folded = [
        (min(host_sort_key(h) for h in names), FoldedResult(fold_names(names), len(names), *key))
        for key, names in groups.items()
    ]
    return [f for _, f in sorted(folded, key=lambda pair: pair[0])]


class HostBusy(IbfabError):
    """A host stayed busy with another probe for longer than we were willing to wait."""


class HostLocks:
    """At most one probe per host at a time, across threads.

    A probe that needs several hosts (a pair for a bandwidth test) takes them all at once or
    waits, so two pair probes can never deadlock by each holding one end.
    """

    def __init__(self) -> None:
        self._busy: set[str] = set()
        self._cond = threading.Condition()

    def busy(self) -> frozenset[str]:
        with self._cond:
            return frozenset(self._busy)

    def try_acquire(self, hosts: Iterable[str]) -> bool:
        wanted = set(hosts)
        with self._cond:
            if wanted & self._busy:
                return False
            self._busy |= wanted
            return True

    def acquire(self, hosts: Iterable[str], timeout: float | None = None) -> None:
        wanted = set(hosts)
        with self._cond:
            if not self._cond.wait_for(lambda: not (wanted & self._busy), timeout):
                taken = sorted(wanted & self._busy, key=host_sort_key)
                raise HostBusy(f"host(s) still busy after {timeout:g} s: {fold_names(taken)}")
            self._busy |= wanted

    def release(self, hosts: Iterable[str]) -> None:
        with self._cond:
            self._busy -= set(hosts)
            self._cond.notify_all()

    @contextmanager
    def hold(self, hosts: Sequence[str], timeout: float | None = None) -> Iterator[None]:
        self.acquire(hosts, timeout)
        try:
            yield
        finally:
            self.release(hosts)
