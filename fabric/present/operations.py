"""Changes and runs for people: open isolations with their age, the audit log, and the last
collection, sweep and daemon runs with their errors (the TUI's changes screen)."""

from __future__ import annotations

from fabric.app.readmodel.operations import OpenChange, Operations
from fabric.app.readmodel.views import StoreState
from fabric.core.units import human_duration
from fabric.present.overview import when


def age(seconds: float) -> str:
    return human_duration(seconds)


def ago(now: float, then: float) -> str:
    """``12 min ago``; a time ahead of this machine's clock says so rather than a negative age."""
    return f"{age(now - then)} ago" if now >= then else f"{age(then - now)} ahead of this clock"


def open_change_row(c: OpenChange) -> tuple[str, str, str, str, str]:
    """(audit id, action, target, since when, who) for the open-changes table."""
    return (
        str(c.entry.id),
        c.kind,
        c.entry.target,
        ago(c.entry.time + c.age_seconds, c.entry.time),
        c.entry.user,
    )


def runs_text(ops: Operations, state: StoreState | None, now: float) -> str:
    """The last collection and sweep, each schedule's last run (failures with their error), and
    the newest failed runs."""
    lines = []
    if state is not None:
        snap = state.latest_snapshot
        lines.append(
            f"collection  {when(snap.taken_at)} ({ago(now, snap.taken_at)}, snapshot #{snap.id})"
            if snap
            else "collection  never (ibfab counters collect)"
        )
        sweep = state.last_sweep
        lines.append(
            f"sweep       {when(sweep.started)} ({ago(now, sweep.started)}, #{sweep.id} {sweep.pattern})"
            if sweep
            else "sweep       never"
        )
    if not ops.schedules:
        lines.append("daemon      no schedules (ibfab schedule add; ibfab daemon)")
    for s in ops.schedules:
        sched = s.schedule
        every = f"every {age(sched.interval_seconds)}" if sched.interval_seconds else f"cron {sched.cron}"
        if s.last is None:
            last = "never ran"
        elif s.last.finished is None:
            last = f"running since {when(s.last.started)}"
        else:
            verdict = "ok" if s.last.ok else f"FAILED: {s.last.error or 'no error recorded'}"
            last = f"last {when(s.last.started)} ({ago(now, s.last.started)}): {verdict}"
        state_word = "" if sched.enabled else " (disabled)"
        lines.append(f"schedule    {sched.name} ({sched.kind}, {every}){state_word}: {last}")
    for r in ops.failed_runs[:5]:
        lines.append(f"failed run  #{r.id} {when(r.started)}: {r.error or 'no error recorded'}")
    return "\n".join(lines)
