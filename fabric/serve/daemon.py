"""The scheduler loop behind ``ibfab daemon``: run due schedules, record every run, stop cleanly.

Each pass reads the enabled schedules, and for each one that is due and not already running
(by this daemon) moves its ``next_run`` on, records a started run and starts its job in a worker
thread (at most ``workers`` at once; a due schedule that finds no free worker waits for the next
pass). The workers only run the job; the loop's own thread records how each run ended
(ok, or failed with the one-line error), so a failing job never stops the daemon.

:meth:`Daemon.stop` (the CLI calls it on SIGTERM/SIGINT) starts no new job and waits up to
``grace_seconds`` for running ones; a job still running after that is recorded as failed
("stopped while running") and abandoned with the process.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fabric.app.jobs import HostActivity, JobContext
from fabric.core.timing import timing_of
from fabric.present.jobs import run_and_summarise
from fabric.store import Schedule, Store
from probes.fanout import HostLocks
from topology.errors import IbfabError

JobRunner = Callable[[Schedule, JobContext], str]


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


@dataclass
class _Running:
    schedule: Schedule
    run_id: int
    started: float
    thread: threading.Thread


@dataclass
class Daemon:
    """Runs the schedules of one store; see the module docstring."""

    db: Path
    workers: int = 4
    poll_seconds: float = 1.0
    grace_seconds: float = 60.0
    runner: JobRunner = run_and_summarise
    on_report: Callable[[RunReport], None] | None = None
    clock: Callable[[], float] = time.time
    locks: HostLocks = field(default_factory=HostLocks)
    activity: HostActivity = field(default_factory=HostActivity)
    reports: list[RunReport] = field(default_factory=list)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _done: queue.Queue[tuple[int, float, bool, str]] = field(default_factory=queue.Queue)
    _running: dict[int, _Running] = field(default_factory=dict)

    def stop(self) -> None:
        """Start no new job; :meth:`run` returns once the running ones end (or the grace runs out).
        Safe to call from a signal handler."""
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def run(self, *, once: bool = False, max_runs: int | None = None) -> list[RunReport]:
        """Loop until stopped. ``once``: start what is due now, wait for it, return.
        ``max_runs``: return after starting that many runs (and waiting for them)."""
        started = 0
        with Store.open(self.db) as store:
            while not self.stopping:
                if max_runs is None or started < max_runs:
                    started += self._start_due(store, None if max_runs is None else max_runs - started)
                if once or (max_runs is not None and started >= max_runs):
                    break
                self._collect(store, self._wait_time(store))
            self._drain(store, self.grace_seconds if self.stopping else None)
        return self.reports

    # -- one pass -------------------------------------------------------------------------------
    def _start_due(self, store: Store, budget: int | None) -> int:
        now = self.clock()
        count = 0
        for schedule in store.list_schedules(enabled_only=True):
            if budget is not None and count >= budget:
                break
            if len(self._running) >= self.workers:
                break
            if schedule.id in self._running:
                continue  # a job already running is not started twice
            if schedule.next_run is not None and schedule.next_run > now:
                continue
            self._start(store, schedule, now)
            count += 1
        return count

    def _start(self, store: Store, schedule: Schedule, now: float) -> None:
        try:
            upcoming: float | None = timing_of(schedule.interval_seconds, schedule.cron).after_run(now, now)
        except IbfabError:
            upcoming = None  # a bad stored cron: the run below fails with the reason
        # Move next_run first: a restart after a crash must not start the same slot again.
        store.update_schedule(schedule.id, next_run=upcoming if upcoming is not None else now + 3600)
        run_id = store.start_run(schedule.id, now)
        thread = threading.Thread(
            target=self._work, args=(schedule, run_id), name=f"job-{schedule.name}", daemon=True
        )
        self._running[schedule.id] = _Running(schedule, run_id, now, thread)
        thread.start()

    def _work(self, schedule: Schedule, run_id: int) -> None:
        ctx = JobContext(self.db, self.locks, self.activity)
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
            s.next_run - now
            for s in store.list_schedules(enabled_only=True)
            if s.next_run is not None and s.id not in self._running
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
        store.finish_run(running.run_id, ok, None if ok else message, finished)
        report = RunReport(running.schedule.name, running.run_id, running.started, finished, ok, message)
        self.reports.append(report)
        if self.on_report is not None:
            self.on_report(report)

    def _drain(self, store: Store, grace: float | None) -> None:
        """Wait for running jobs (up to ``grace`` seconds when stopping); record the rest as failed."""
        deadline = None if grace is None else time.monotonic() + grace
        while self._running:
            left = 0.5 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                break
            try:
                item = self._done.get(timeout=min(0.5, left))
            except queue.Empty:
                continue
            self._record(store, *item)
        for schedule_id in list(self._running):
            reason = f"daemon stopped while the job was still running (grace {grace:g} s)"
            self._record(store, schedule_id, self.clock(), False, reason)


__all__ = ["Daemon", "JobRunner", "RunReport"]
