"""The Slurm changes a session makes (``ibfab drain ... --apply``, ``drain undo``, and the TUI's):
each opens the session's store to audit in; Slurm is the client the caller connected."""

from __future__ import annotations

from fabric.app.drains.drain import (
    AppliedDrain,
    DrainPlan,
    ResumePlan,
    apply_drains,
    apply_resume,
    plan_resume,
)
from fabric.app.isolation.isolate import RETEST_WINDOW_SECONDS
from fabric.app.session import Session
from probes.slurm import Slurm


def drain(session: Session, plan: DrainPlan, slurm: Slurm) -> list[AppliedDrain]:
    """Drain every planned node (every node audited in the session's store)."""
    with session.store.write() as store:
        return apply_drains(plan, store, slurm)


def resume_plan(
    session: Session, audit_id: int, slurm: Slurm, window_seconds: float = RETEST_WINDOW_SECONDS
) -> ResumePlan:
    """What ``ibfab drain undo ID`` shows (it refuses an entry already resumed, or a node someone
    else has resumed or drained again)."""
    with session.store.write() as store:
        return plan_resume(store, audit_id, slurm, window_seconds=window_seconds)


def resume(session: Session, plan: ResumePlan, slurm: Slurm, *, force: bool = False) -> AppliedDrain:
    """What ``ibfab drain undo ID --apply`` does: refused inside the re-test window or after a
    failed re-test unless ``force``, audited either way."""
    with session.store.write() as store:
        return apply_resume(plan, store, slurm, force=force)


__all__ = ["drain", "resume", "resume_plan"]
