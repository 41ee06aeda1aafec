"""The scheduler loop behind ``ibfab daemon``: run due schedules, record every run, stop cleanly.

Each pass reads the enabled schedules, and for each one that is due and not already running
(by this daemon) moves its ``next_run`` on, records a started run and starts its job in a worker
thread (at most ``workers`` at once; a due schedule that finds no free worker waits for the next
pass). The workers only run the job; the loop's own thread records how each run ended
(ok, or failed with the one-line error), so a failing job never stops the daemon.

:meth:`Daemon.stop` (the CLI calls it on SIGTERM/SIGINT) starts no new job and waits up to
``grace_seconds`` for running ones; a job still running after that is recorded as failed
("stopped while running") and abandoned with the process, after the tools it runs are ended and
the Slurm allocations it holds or has asked for are cancelled (:func:`fabric.app.daemon.jobs.end_running_work`).
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Self

from fabric.app.daemon.jobs import HostActivity, JobContext, end_running_work
from fabric.app.hostlocks import host_locks
from fabric.core.timing import timing_of
from fabric.present.jobs import run_and_summarise
from topology.errors import IbfabError, StoreError

if TYPE_CHECKING:
    from fabric.app.session import StoreAccess
    from fabric.store import Schedule, Store
    from probes.hostlocks import HostLocks

JobRunner = Callable[["Schedule", JobContext], str]


@dataclass(frozen=True, slots=True)
class RunReport:
    """How one run of a schedule ended."""

    schedule: str
    run_id: int
    started: float
    finished: float
    ok: bool
    message: str  # the job's summary line, or its error

    def line(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.finished))
        state = "ok" if self.ok else "FAILED"
        return f"{when} {self.schedule} run {self.run_id} {state} ({self.finished - self.started:.1f} s): {self.message}"


class DaemonLock:
    """One daemon per store: an exclusive ``flock`` on ``<store>.daemon.lock``, which holds the
    holder's PID. Released when closed or when the process ends (however it ends)."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.path = db.with_name(db.name + ".daemon.lock")
        self._fd: int | None = None

    def acquire(self) -> Self:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot create the daemon lock: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip()
            os.close(fd)
            who = f"PID {holder}" if holder.isdigit() else "a process that has not written its PID yet"
            raise StoreError(
                f"{self.db}: another ibfab daemon ({who}) already runs this store's schedules;"
                " stop it first, or give this one another --db"
            ) from None
        # The file is never removed: a daemon that opened it just before a removal would lock
        # a file nobody else can see, and two daemons would run.
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> Self:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass(frozen=True, slots=True)
class _Unwritten:
    """A run the store was too busy to record: a missed slot (run_id None) or a run's end."""

    schedule: Schedule
    run_id: int | None
    started: float
    finished: float
    message: str
    ok: bool = False
    next_run: float | None = None  # a missed slot: the schedule's next slot, to write back


@dataclass
class _Running:
    schedule: Schedule
    run_id: int
    started: float
    thread: threading.Thread


@dataclass
class Daemon:
    """Runs the schedules of one store; see the module docstring. Each job builds its own session
    on that store (:func:`fabric.app.daemon.jobs.job_session`)."""

    store: StoreAccess
    workers: int = 4
    poll_seconds: float = 1.0
    grace_seconds: float = 60.0
    runner: JobRunner = run_and_summarise
    on_report: Callable[[RunReport], None] | None = None
    on_note: Callable[[str], None] | None = None  # the store busy, and what the daemon did about it
    clock: Callable[[], float] = time.time
    locks: HostLocks = field(init=False)  # shared with CLI sweeps: lock files next to the store
    activity: HostActivity = field(default_factory=HostActivity)
    reports: list[RunReport] = field(default_factory=list)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _done: queue.Queue[tuple[int, float, bool, str]] = field(default_factory=queue.Queue)
    _running: dict[int, _Running] = field(default_factory=dict)
    _unwritten: list[_Unwritten] = field(default_factory=list)
    _held_back: dict[int, float] = field(default_factory=dict)  # schedule id -> next slot (not stored)
    _urgent: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.locks = host_locks(self.store)

    def stop(self) -> None:
        """Start no new job; :meth:`run` returns once the running ones end (or the grace runs out).
        A second call cuts the grace short. Safe to call from a signal handler."""
        if self._stopping.is_set():
            self._urgent.set()
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def run(self, *, once: bool = False, max_runs: int | None = None) -> list[RunReport]:
        """Loop until stopped. ``once``: start what is due now, wait for it, return.
        ``max_runs``: return after starting that many runs (and waiting for them).
        Raises StoreError when another daemon holds this store (or it is not a store)."""
        started = 0
        with self.store.write() as store, DaemonLock(self.store.path):
            self._close_dead_runs(store)
            while not self.stopping:
                try:
                    self._write_unwritten(store)
                    if max_runs is None or started < max_runs:
                        started += self._start_due(store, None if max_runs is None else max_runs - started)
                    if once or (max_runs is not None and started >= max_runs):
                        break
                    self._collect(store, self._wait_time(store))
                except StoreError as exc:  # a read that found the store busy: try again next pass
                    self._note(f"store: {exc.one_line()}; trying again")
                    self._stopping.wait(self.poll_seconds)
            self._drain(store, self.grace_seconds if self.stopping else None)
            if self._unwritten:
                self._write_unwritten(store, last=True)
        return self.reports

    def _close_dead_runs(self, store: Store) -> None:
        """Runs an earlier daemon (or collector) left open when it was killed: closed as killed."""
        try:
            closed = store.close_dead_runs(self.clock())
        except StoreError as exc:
            self._note(f"store: open runs of dead processes not closed: {exc.one_line()}")
            return
        if closed:
            self._note(f"closed {closed} run(s) left open by a process that was killed")

    # -- one pass -------------------------------------------------------------------------------
    def _start_due(self, store: Store, budget: int | None) -> int:
        """Start the due schedules; returns how many slots were taken (started or missed)."""
        now = self.clock()
        count = 0
        for schedule in store.list_schedules(enabled_only=True):
            if budget is not None and count >= budget:
                break
            if len(self._running) >= self.workers:
                break
            if schedule.id in self._running:
                continue  # a job already running is not started twice
            if self._next_run(schedule) > now:
                continue
            self._start(store, schedule, now)
            count += 1
        return count

    def _next_run(self, schedule: Schedule) -> float:
        """When the schedule is due: as stored, or later when a missed slot is not stored yet."""
        stored = schedule.next_run if schedule.next_run is not None else float("-inf")
        return max(stored, self._held_back.get(schedule.id, float("-inf")))

    def _start(self, store: Store, schedule: Schedule, now: float) -> None:
        try:
            upcoming: float | None = timing_of(schedule.interval_seconds, schedule.cron).after_run(now, now)
        except IbfabError:
            upcoming = None  # a bad stored cron: the run below fails with the reason
        next_run = upcoming if upcoming is not None else now + 3600
        try:
            # Move next_run first: a restart after a crash must not start the same slot again.
            store.update_schedule(schedule.id, next_run=next_run)
            run_id = store.start_run(schedule.id, now)
        except StoreError as exc:
            # The slot is missed, not the daemon: wait for the next slot, record this one later.
            self._held_back[schedule.id] = next_run
            message = f"not run: {exc.one_line()}"
            self._unwritten.append(_Unwritten(schedule, None, now, self.clock(), message, next_run=next_run))
            self._note(f"{schedule.name}: slot missed, the store is busy; next slot {_clock(next_run)}")
            return
        thread = threading.Thread(
            target=self._work, args=(schedule, run_id), name=f"job-{schedule.name}", daemon=True
        )
        self._running[schedule.id] = _Running(schedule, run_id, now, thread)
        thread.start()

    def _work(self, schedule: Schedule, run_id: int) -> None:
        ctx = JobContext(self.store, self.locks, self.activity)
        try:
            timing_of(schedule.interval_seconds, schedule.cron)
            message, ok = self.runner(schedule, ctx), True
        except IbfabError as exc:
            message, ok = exc.one_line(), False
        except Exception as exc:  # a bug in one job must not take the daemon down
            message, ok = f"{type(exc).__name__}: {exc}", False
        self._done.put((schedule.id, self.clock(), ok, message))

    # -- waiting and recording ------------------------------------------------------------------
    def _wait_time(self, store: Store) -> float:
        """Until the next schedule is due (at most poll_seconds), so a 1 s schedule keeps its pace."""
        now = self.clock()
        waits = [
            self._next_run(s) - now
            for s in store.list_schedules(enabled_only=True)
            if s.id not in self._running
        ]
        return max(0.0, min([self.poll_seconds, *waits]))

    def _collect(self, store: Store, timeout: float) -> None:
        """Record runs that ended, waiting up to ``timeout`` for the first (stop cuts the wait short)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                item = self._done.get(timeout=max(0.0, min(0.2, deadline - time.monotonic())))
            except queue.Empty:
                if self.stopping or time.monotonic() >= deadline:
                    return
                continue
            self._record(store, *item)
            if self._done.empty():
                return

    def _record(self, store: Store, schedule_id: int, finished: float, ok: bool, message: str) -> None:
        running = self._running.pop(schedule_id)
        try:
            store.finish_run(running.run_id, ok, None if ok else message, finished)
        except StoreError as exc:
            self._unwritten.append(
                _Unwritten(running.schedule, running.run_id, running.started, finished, message, ok)
            )
            self._note(
                f"{running.schedule.name} run {running.run_id}: its end not recorded yet ({exc.one_line()})"
            )
        self._report(RunReport(running.schedule.name, running.run_id, running.started, finished, ok, message))

    def _report(self, report: RunReport) -> None:
        self.reports.append(report)
        if self.on_report is not None:
            self.on_report(report)

    def _note(self, line: str) -> None:
        if self.on_note is not None:
            self.on_note(line)

    def _write_unwritten(self, store: Store, last: bool = False) -> None:
        """Record what the busy store could not take (oldest first); stop at the first refusal."""
        while self._unwritten:
            item = self._unwritten[0]
            try:
                if item.run_id is None:  # a missed slot: its run row first (kept if the rest fails)
                    item = dataclasses.replace(item, run_id=store.start_run(item.schedule.id, item.started))
                    self._unwritten[0] = item
                assert item.run_id is not None
                store.finish_run(item.run_id, item.ok, None if item.ok else item.message, item.finished)
                if item.next_run is not None:
                    if (store.schedule(item.schedule.id).next_run or 0.0) < item.next_run:
                        store.update_schedule(item.schedule.id, next_run=item.next_run)
                    if self._held_back.get(item.schedule.id) == item.next_run:
                        del self._held_back[item.schedule.id]
                    self._report(
                        RunReport(
                            item.schedule.name, item.run_id, item.started, item.finished, False, item.message
                        )
                    )
            except StoreError as exc:
                if last:
                    self._note(f"stopping with {len(self._unwritten)} runs not recorded: {exc.one_line()}")
                return
            self._unwritten.pop(0)

    def _drain(self, store: Store, grace: float | None) -> None:
        """Wait for running jobs (up to ``grace`` seconds when stopping, cut short by a second
        stop); then end the tools still running, each with its process group (over SSH: its
        session on the host), and record the jobs still running as failed."""
        deadline = None if grace is None else time.monotonic() + grace
        while self._running:
            left = 0.5 if deadline is None else deadline - time.monotonic()
            if left <= 0 or self._urgent.is_set():
                break
            try:
                item = self._done.get(timeout=min(0.5, left))
            except queue.Empty:
                continue
            self._record(store, *item)
        if not self._running:
            return
        # local tools and remote (SSH) sessions alike; a Slurm sweep's allocation must not outlive it
        ended, released = end_running_work([r.thread for r in self._running.values()])
        for schedule_id in list(self._running):
            waited = f" (grace {grace:g} s)" if grace is not None else ""
            reason = f"daemon stopped while the job was still running{waited}"
            if ended:
                reason += f"; {ended} running tool(s) ended with their process groups"
            if released:
                reason += f"; Slurm job(s) {', '.join(released)} cancelled"
            self._record(store, schedule_id, self.clock(), False, reason)


def _clock(when: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(when))


__all__ = ["Daemon", "DaemonLock", "JobRunner", "RunReport"]
