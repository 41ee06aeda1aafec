"""What an operator checks before and after changing the fabric: the changes still in force (open
isolations and Slurm drains, with their age), the audit log, the schedules the daemon runs and how their last runs
ended; and a sweep's pairs each once, with every re-test.

Reads the store only; the safety checks of an undo stay in :mod:`fabric.app.isolation.isolate` and
:mod:`fabric.app.drains.drain`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fabric.app.drains.drain import DRAIN, open_drains
from fabric.app.isolation.isolate import ISOLATE, open_isolations
from fabric.app.sweeps.sweep import ShownSweep
from fabric.store import AuditEntry, Run, Schedule, Store
from probes.expect import is_slow
from probes.localize import final_results
from probes.pairs import PairResult


@dataclass(frozen=True, slots=True)
class OpenChange:
    """A change still in force (an isolation or a drain nobody has undone) and how long it has been."""

    entry: AuditEntry
    age_seconds: float  # negative: recorded at a time ahead of this clock

    @property
    def kind(self) -> str:
        return self.entry.action

    @property
    def is_drain(self) -> bool:
        return self.entry.action == DRAIN


@dataclass(frozen=True, slots=True)
class ScheduleState:
    schedule: Schedule
    last: Run | None  # its newest run


@dataclass(frozen=True, slots=True)
class Operations:
    open_changes: tuple[OpenChange, ...]  # isolations and drains, oldest first
    audit: tuple[AuditEntry, ...]  # newest first
    schedules: tuple[ScheduleState, ...]
    runs: tuple[Run, ...]  # newest first: the daemon's and collections run by hand

    @property
    def failed_runs(self) -> tuple[Run, ...]:
        return tuple(r for r in self.runs if r.ok is False)


def operations(store: Store, now: float, audit_limit: int = 200, runs_limit: int = 50) -> Operations:
    log = store.audit_log()
    entries = [e for e in open_isolations(store) if e.action == ISOLATE] + open_drains(store)
    still = tuple(OpenChange(e, now - e.time) for e in sorted(entries, key=lambda e: (e.time, e.id)))
    schedules = tuple(
        ScheduleState(s, next(iter(store.list_runs(s.id, limit=1)), None)) for s in store.list_schedules()
    )
    return Operations(
        still,
        tuple(reversed(log))[:audit_limit],
        schedules,
        tuple(store.list_runs(limit=runs_limit)),
    )


@dataclass(frozen=True, slots=True)
class PairHistory:
    """One pair of a sweep: every attempt in order (0: the sweep, 1...: re-tests) and whether its
    last attempt was measured and judged slow against its route (:func:`probes.expect.is_slow`);
    a last attempt with no measurement is failed, not slow."""

    attempts: tuple[PairResult, ...]
    slow: bool

    @property
    def final(self) -> PairResult:
        return self.attempts[-1]

    @property
    def client(self) -> str:
        return f"{self.final.client.host}/{self.final.client.device}"

    @property
    def server(self) -> str:
        return f"{self.final.server.host}/{self.final.server.device}"


def pair_histories(shown: ShownSweep) -> list[PairHistory]:
    """Each pair once (slow ones first, then by name), the way localization judges it."""
    return histories(shown.results)


def histories(results: Sequence[PairResult]) -> list[PairHistory]:
    slow = {r.key for r in final_results(results) if is_slow(r)}
    by_pair: dict[tuple[str, str], list[PairResult]] = {}
    for r in results:
        by_pair.setdefault(r.key, []).append(r)
    out = [
        PairHistory(tuple(sorted(attempts, key=lambda r: r.attempt)), key in slow)
        for key, attempts in by_pair.items()
    ]
    out.sort(key=lambda p: (not p.slow, p.client, p.server))
    return out
