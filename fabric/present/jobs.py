"""Scheduled jobs for people: the one line a run leaves in the store and the daemon prints."""

from __future__ import annotations

from fabric.app.collect import SnapshotOutcome
from fabric.app.jobs import JobContext, JobResult, run_job
from fabric.present.counters import snapshot_line
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
