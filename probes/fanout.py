"""Run one probe on many hosts: bounded concurrency, one record per host, identical output folded.

>>> from probes.inventory import HostEntry
>>> from probes.runner import LocalTransport
>>> hosts = [HostEntry(f"n{i}") for i in (1, 2, 3)]
>>> rs = fan_out(hosts, ["echo", "hi"], lambda h: LocalTransport(h.name))
>>> [(f.hosts, f.stdout) for f in fold(rs)]
[('n[1-3]', 'hi\\n')]

What all the hosts' output holds together is bounded (:data:`probes.output.FANOUT_OUTPUT_BYTES`,
beside each stream's own cap): every host runs under one :class:`probes.output.OutputBudget`.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from probes.fanout_workers import can_send, error_record, run_host, run_in_workers
from probes.hostlocks import HostBusy, HostLocks
from probes.inventory import HostEntry, fold_names, host_sort_key
from probes.output import FANOUT_OUTPUT_BYTES, OutputBudget, decode, spending
from probes.transport import CommandResult, FailureKind, Transport

ArgvForHost = Callable[[HostEntry], Sequence[str]] | Sequence[str]


@dataclass(frozen=True, slots=True)
class FoldedResult:
    """Hosts that answered identically, as one host range (``dgx-[0001-0004,0007]``); the output
    as its bytes (:attr:`stdout` decodes them each time: see :class:`CommandResult`)."""

    hosts: str
    count: int
    exit_code: int | None
    stdout_bytes: bytes
    stderr_bytes: bytes
    failure: FailureKind | None
    message: str

    @property
    def ok(self) -> bool:
        return self.failure is None and self.exit_code == 0

    @property
    def stdout(self) -> str:
        return decode(self.stdout_bytes)

    @property
    def stderr(self) -> str:
        return decode(self.stderr_bytes)


# A worker process costs about 0.15 s of CPU to start (an interpreter and paramiko's import):
# about as much as 30 connections. Below this many hosts per worker, threads in this process win.
HOSTS_PER_WORKER = 64
MAX_WORKERS = 8  # each worker is an interpreter of 30-40 MiB


def worker_count(hosts: int, concurrency: int, workers: int | None = None) -> int:
    """How many processes a fan-out to ``hosts`` hosts uses: ``workers`` when given (at most
    one per connection and host), else one per core, one per HOSTS_PER_WORKER hosts, at most
    MAX_WORKERS; 1 means threads in this process.

    >>> worker_count(40, 16, None), worker_count(10, 16, 4), worker_count(10, 2, 4)
    (1, 4, 2)
    """
    if workers is not None:
        return max(1, min(workers, concurrency, hosts))
    cores = len(os.sched_getaffinity(0))
    return max(1, min(cores, MAX_WORKERS, concurrency, hosts // HOSTS_PER_WORKER))


def fan_out(
    hosts: Iterable[HostEntry],
    argv_for_host: ArgvForHost,
    transport_factory: Callable[[HostEntry], Transport],
    concurrency: int = 16,
    timeout: float = 60.0,
    locks: HostLocks | None = None,
    workers: int | None = None,
    output_budget: int = FANOUT_OUTPUT_BYTES,
) -> list[CommandResult]:
    """Run a command on every host, at most ``concurrency`` at once; results sorted by host name.

    ``argv_for_host`` is one argv for all hosts or a function of the host. A host that cannot be
    reached is a record with a :class:`FailureKind`, never an exception. With ``locks``, a host
    already busy with another probe is waited for, so no host runs two probes at once.

    Large fan-outs spread over worker processes (:func:`worker_count`; ``workers=1`` keeps them
    in this process) when the factory can be sent to one (``probes.ssh.ssh_transport_factory``'s
    can; a lambda cannot and runs on threads here); the records are the same either way.

    The hosts' output together keeps at most ``output_budget`` bytes beyond each stream's first
    :data:`probes.output.FREE_BYTES` (split evenly over the worker processes); what a host could
    not keep is cut from the middle of its output, as at the per-stream cap (``cut``).
    """
    entries = sorted(hosts, key=lambda h: host_sort_key(h.name))
    if not entries:
        return []
    processes = worker_count(len(entries), concurrency, workers)
    if processes > 1 and can_send(transport_factory):
        records: dict[int, CommandResult] = {}
        todo: list[tuple[int, tuple[str, ...]]] = []
        for k, entry in enumerate(entries):
            try:
                todo.append((k, tuple(argv_for_host(entry) if callable(argv_for_host) else argv_for_host)))
            except Exception as exc:  # a host whose command cannot be built is a record
                records[k] = error_record(entry.name, (), time.monotonic(), exc)
        run = run_in_workers(
            [entries[k] for k, _ in todo],
            [argv for _, argv in todo],
            transport_factory,
            processes,
            concurrency,
            timeout,
            locks,
            output_budget,
        )
        records.update(zip((k for k, _ in todo), run.results, strict=True))
        return [records[k] for k in range(len(entries))]

    budget = OutputBudget(output_budget)

    def one(entry: HostEntry) -> CommandResult:
        start = time.monotonic()
        argv: tuple[str, ...] = ()
        try:
            argv = tuple(argv_for_host(entry) if callable(argv_for_host) else argv_for_host)
            with contextlib.ExitStack() as stack:
                if locks is not None:
                    stack.enter_context(locks.hold([entry.name]))
                stack.enter_context(spending(budget))  # this pool thread's commands take from it
                return run_host(entry, argv, transport_factory, timeout)
        except Exception as exc:  # one host's bug must not lose the other hosts' results
            return error_record(entry.name, argv, start, exc)

    with ThreadPoolExecutor(
        max_workers=max(1, min(concurrency, len(entries))), thread_name_prefix="fanout"
    ) as pool:
        return list(pool.map(one, entries))


def fold(results: Iterable[CommandResult]) -> list[FoldedResult]:
    """Group hosts whose exit code, stdout and stderr (or failure) are identical; sorted by first host."""
    groups: dict[tuple[int | None, bytes, bytes, FailureKind | None, str], list[str]] = {}
    for r in results:
        key = (r.exit_code, r.stdout_bytes, r.stderr_bytes, r.failure, r.message)
        groups.setdefault(key, []).append(r.host)
    folded = [
        (min(host_sort_key(h) for h in names), FoldedResult(fold_names(names), len(names), *key))
        for key, names in groups.items()
    ]
    return [f for _, f in sorted(folded, key=lambda pair: pair[0])]


__all__ = ["FoldedResult", "HostBusy", "HostLocks", "fan_out", "fold", "worker_count"]
