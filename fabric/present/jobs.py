"""Scheduled jobs for people: the schedule table and the one line a run leaves in the store and the
daemon prints."""

from __future__ import annotations

import time
from collections.abc import Sequence

from fabric.app.daemon.jobs import JobContext, JobResult, run_job
from fabric.app.daemon.schedules import ScheduleStatus
from fabric.app.health.collect import SnapshotOutcome
from fabric.core.units import duration_spec
from fabric.present.counters import snapshot_line
from fabric.present.table import table
from fabric.store import Schedule


def job_summary(result: JobResult) -> str:
    """``snapshot 12: ...`` for a collection, ``sweep 3 (lab): 40 results, 2 failed; top suspect ...``."""
    if isinstance(result, SnapshotOutcome):
        return snapshot_line(result)
    top = f"; top suspect {result.top_suspect[0]} - {result.top_suspect[1]}" if result.top_suspect else ""
    return (
        f"sweep {result.sweep_id} ({result.backend}): {result.results} results, {result.failed} failed{top}"
    )


def run_and_summarise(schedule: Schedule, ctx: JobContext) -> str:
    """The daemon's job runner: run the schedule's job, return its summary line."""
    return job_summary(run_job(schedule, ctx))


def local_time(t: float | None) -> str:
    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def schedule_when(s: Schedule) -> str:
    return f"every {duration_spec(s.interval_seconds)}" if s.interval_seconds else f"cron {s.cron}"


def schedule_added_line(s: Schedule) -> str:
    return f"schedule {s.name} ({s.kind}, {schedule_when(s)}) added; next run {local_time(s.next_run)}"


def render_schedules(statuses: Sequence[ScheduleStatus]) -> str:
    """One row per schedule: when it runs, where, its last and next run and the last result."""
    if not statuses:
        return "no schedules (add one with 'ibfab schedule add')"
    rows = []
    for st in statuses:
        s, r = st.schedule, st.last_run
        if r is None:
            result = "-"
        elif r.ok is None:
            result = "running"
        else:
            result = "ok" if r.ok else f"FAILED: {r.error}"
        name = s.name + ("" if s.enabled else " (disabled)")
        rows.append(
            (
                name,
                s.kind,
                schedule_when(s),
                st.source,
                local_time(s.last_run),
                local_time(s.next_run),
                result,
            )
        )
    return table(("NAME", "KIND", "WHEN", "SOURCE", "LAST RUN", "NEXT RUN", "LAST RESULT"), rows)
