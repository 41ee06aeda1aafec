"""A fan-out spread over worker processes, each with its own threads and its own interpreter lock.

One interpreter runs paramiko's handshake crypto on one core at a time (about 4-8 ms of client CPU
per connection), so a fan-out to thousands of hosts from one process is bound by that core. Here
each worker is a Python process (``python -c ...serve()``) that runs its share of the hosts on its
own threads; the parent hands each worker at most its share of the ``concurrency`` connections at a
time and takes each host's :class:`~probes.transport.CommandResult` back as soon as it is done.

Bounds: at most ``concurrency`` connections in all (split over the workers), at most that many
results in flight, each stream of a result capped (``MAX_OUTPUT_BYTES``), and the output of all
the hosts within the fan-out's budget (each worker spends an even share of it). Workers talk to the
parent over their stdin/stdout pipes (length-prefixed pickles, between our own processes only):
a worker whose parent dies reads end-of-file and exits; a worker that dies turns the hosts it held
into one-line records naming it, and the other hosts still run.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import selectors
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol, cast

from probes.inventory import HostEntry
from probes.output import FANOUT_OUTPUT_BYTES, OutputBudget, spending
from probes.transport import CommandResult, FailureKind, Transport
from topology.errors import IbfabError

_HEADER = struct.Struct(">I")
_READ_SIZE = 1 << 20
_STOP_GRACE = 10.0  # seconds for workers to finish and report after their last host


class HostClaims(Protocol):
    """What the dispatcher needs of :class:`probes.fanout.HostLocks`."""

    def try_acquire(self, hosts: Iterable[str]) -> bool: ...

    def release(self, hosts: Iterable[str]) -> None: ...


@dataclass(frozen=True, slots=True)
class WorkerUsage:
    """What one worker process cost, as it measured itself just before exiting."""

    pid: int
    hosts: int  # hosts it ran
    cpu_seconds: float  # user + system
    peak_rss_mib: float


@dataclass(frozen=True, slots=True)
class WorkerRun:
    """Per-host records in the order the hosts were given, and each worker's usage."""

    results: list[CommandResult]
    usage: tuple[WorkerUsage, ...]


def run_host(
    entry: HostEntry,
    argv: tuple[str, ...],
    factory: Callable[[HostEntry], Transport],
    timeout: float,
) -> CommandResult:
    """``argv`` on one host through a fresh transport; any error is a record, never an exception
    (one host's bug must not lose the other hosts' results)."""
    start = time.monotonic()
    try:
        transport = factory(entry)
        try:
            return transport.run(argv, timeout)
        finally:
            transport.close()
    except Exception as exc:
        return error_record(entry.name, argv, start, exc)


def error_record(host: str, argv: tuple[str, ...], start: float, exc: Exception) -> CommandResult:
    """An exception met while running on ``host``, as its record (one line)."""
    message = exc.one_line() if isinstance(exc, IbfabError) else f"{type(exc).__name__}: {exc}"
    return CommandResult(host, argv, None, "", "", time.monotonic() - start, FailureKind.ERROR, message)


def lost_record(entry: HostEntry, argv: tuple[str, ...], message: str) -> CommandResult:
    return CommandResult(entry.name, argv, None, "", "", 0.0, FailureKind.ERROR, message)


def can_send(factory: object) -> bool:
    """Whether ``factory`` can be handed to a worker process (a lambda or closure cannot)."""
    try:
        pickle.dumps(factory)
    except Exception:
        return False
    return True


def _frame(obj: object) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


@dataclass
class _Worker:
    proc: subprocess.Popen[bytes]
    slots: int
    stderr: IO[bytes]
    held: dict[int, None] = field(default_factory=dict)  # task indexes it is running
    buffer: bytearray = field(default_factory=bytearray)
    usage: WorkerUsage | None = None
    ended: bool = False  # its output has ended
    broken: bool = False  # it no longer takes hosts

    def send(self, obj: object) -> bool:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(_frame(obj))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return False
        return True

    def frames(self) -> list[object]:
        out: list[object] = []
        while len(self.buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self.buffer)
            if len(self.buffer) < _HEADER.size + size:
                break
            with memoryview(self.buffer) as view:  # no copy of a result's (up to 128 MiB) frame
                out.append(pickle.loads(view[_HEADER.size : _HEADER.size + size]))
            del self.buffer[: _HEADER.size + size]
        return out

    def why_ended(self) -> str:
        code = self.proc.poll()
        self.stderr.seek(0)
        lines = [ln.strip() for ln in self.stderr.read()[-4096:].decode(errors="replace").splitlines()]
        said = next((ln for ln in reversed(lines) if ln), "")
        how = f"exit {code}" if code is not None and code >= 0 else f"signal {-(code or 0)}"
        return f"worker process {self.proc.pid} ended ({how}{': ' + said[:200] if said else ''})"


def _start_worker(slots: int, factory: object, timeout: float, budget: int) -> _Worker:
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 -- the worker's; _stop closes it
    proc = subprocess.Popen(
        # -P: the worker imports ibfab from ``root``, never from whatever directory it starts in
        [sys.executable, "-P", "-c", "from probes.fanout_workers import serve; serve()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
        start_new_session=True,  # Ctrl-C reaches the parent only; it stops the workers itself
    )
    worker = _Worker(proc, slots, stderr)
    worker.send((factory, slots, timeout, budget))
    return worker


def run_in_workers(
    entries: Sequence[HostEntry],
    argvs: Sequence[tuple[str, ...]],
    factory: Callable[[HostEntry], Transport],
    workers: int,
    concurrency: int,
    timeout: float,
    locks: HostClaims | None = None,
    output_budget: int = FANOUT_OUTPUT_BYTES,
) -> WorkerRun:
    """Run ``argvs[i]`` on ``entries[i]`` over ``workers`` processes with ``concurrency``
    connections in all; with ``locks``, a host busy elsewhere is run once it is free. The hosts'
    output keeps at most ``output_budget`` bytes in all (:func:`probes.fanout.fan_out`)."""
    n = len(entries)
    workers = max(1, min(workers, concurrency, n))
    share, extra = divmod(max(concurrency, workers), workers)
    results: list[CommandResult | None] = [None] * n
    pending: deque[int] = deque(range(n))
    pool: list[_Worker] = []
    selector = selectors.DefaultSelector()
    done = 0

    def finish(i: int, record: CommandResult) -> None:
        nonlocal done
        if results[i] is None:
            done += 1
        results[i] = record
        if locks is not None:
            locks.release([entries[i].name])

    def dispatch() -> None:
        while pending:
            # the worker with the most free connections: hosts spread evenly over the workers
            open_ = [w for w in pool if not (w.ended or w.broken) and len(w.held) < w.slots]
            if not open_:
                return
            w = max(open_, key=lambda w: w.slots - len(w.held))
            i = _next_free(pending, entries, locks)
            if i is None:
                return
            w.held[i] = None
            if not w.send((i, entries[i], argvs[i])):
                w.broken = True  # its end-of-file will turn what it holds into records

    def read(w: _Worker) -> None:
        assert w.proc.stdout is not None
        data = os.read(w.proc.stdout.fileno(), _READ_SIZE)
        if data:
            w.buffer += data
            for item in w.frames():
                if isinstance(item, WorkerUsage):
                    w.usage = item
                else:
                    i, record = cast("tuple[int, CommandResult]", item)
                    w.held.pop(i, None)
                    finish(i, record)
            return
        selector.unregister(w.proc.stdout)
        w.ended = True
        with contextlib.suppress(subprocess.TimeoutExpired):
            w.proc.wait(5)
        if w.held:
            why = w.why_ended()
            for i in list(w.held):
                finish(i, lost_record(entries[i], argvs[i], why))
            w.held.clear()

    try:
        for k in range(workers):
            w = _start_worker(share + (k < extra), factory, timeout, output_budget // workers)
            pool.append(w)
            assert w.proc.stdout is not None
            selector.register(w.proc.stdout, selectors.EVENT_READ, w)
        while done < n:
            dispatch()
            if all(w.ended for w in pool):
                for i in pending:
                    finish(i, lost_record(entries[i], argvs[i], "not run: every worker process ended"))
                pending.clear()
                break
            for key, _ in selector.select(timeout=0.1 if pending else 1.0):
                read(key.data)
        for w in pool:  # no more hosts: each worker reports its usage and exits
            if w.proc.stdin is not None and not w.proc.stdin.closed:
                with contextlib.suppress(OSError):
                    w.proc.stdin.close()
        deadline = time.monotonic() + _STOP_GRACE
        while any(not w.ended for w in pool) and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.2):
                read(key.data)
    finally:
        for w in pool:
            _stop(w)
        selector.close()
    usage = tuple(w.usage for w in pool if w.usage is not None)
    lost = "not run: the fan-out's worker processes ended"
    return WorkerRun([r or lost_record(entries[i], argvs[i], lost) for i, r in enumerate(results)], usage)


def _next_free(pending: deque[int], entries: Sequence[HostEntry], locks: HostClaims | None) -> int | None:
    """The first pending host not busy elsewhere (taken for us), or None when all are busy."""
    if locks is None:
        return pending.popleft()
    for k, i in enumerate(pending):
        if locks.try_acquire([entries[i].name]):
            del pending[k]
            return i
    return None


def _stop(w: _Worker) -> None:
    """End a worker we started: it has normally exited already; otherwise TERM, then KILL."""
    for stream in (w.proc.stdin, w.proc.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    if w.proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            w.proc.send_signal(signal.SIGTERM)
        try:
            w.proc.wait(2)
        except subprocess.TimeoutExpired:
            w.proc.kill()
            w.proc.wait()
    w.stderr.close()


# -- inside a worker process ----------------------------------------------------------------------


def _read_exact(stream: IO[bytes], size: int) -> bytes | None:
    data = stream.read(size)
    return data if data is not None and len(data) == size else None


def serve() -> None:
    """A worker's main: the settings frame, then host frames until end-of-file; a result frame per
    host as it finishes, a :class:`WorkerUsage` frame last."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything a library prints goes to the worker's stderr, not into our frames
    sys.stdout = sys.stderr
    stdin = sys.stdin.buffer
    write_lock = threading.Lock()

    def receive() -> object | None:
        header = _read_exact(stdin, _HEADER.size)
        if header is None:
            return None
        body = _read_exact(stdin, _HEADER.unpack(header)[0])
        return None if body is None else pickle.loads(body)

    ran = 0

    def reply(obj: object) -> None:
        nonlocal ran
        frame = _frame(obj)
        with write_lock:
            ran += isinstance(obj, tuple)
            out.write(frame)
            out.flush()

    settings = receive()
    if settings is None:
        return
    factory, slots, timeout, budget_bytes = cast(
        "tuple[Callable[[HostEntry], Transport], int, float, int]", settings
    )
    budget = OutputBudget(budget_bytes)

    def one(i: int, entry: HostEntry, argv: tuple[str, ...]) -> None:
        with spending(budget):
            record = run_host(entry, argv, factory, timeout)
        reply((i, record))

    given = 0
    with ThreadPoolExecutor(max_workers=slots, thread_name_prefix="fanout-worker") as threads:
        while (task := receive()) is not None:
            given += 1
            threads.submit(one, *cast("tuple[int, HostEntry, tuple[str, ...]]", task))
        with write_lock:
            if ran < given:  # the parent left before taking every result: it died or gave up
                os._exit(1)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    reply(WorkerUsage(os.getpid(), ran, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024))
    out.close()
