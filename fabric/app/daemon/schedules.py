"""Recurring jobs: add, list (with each one's last run) and remove schedules; the daemon runs them."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fabric.app.session import StoreAccess
from fabric.core.timing import Timing
from fabric.store import Run, Schedule
from topology.errors import UsageError

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True, slots=True)
class ScheduleStatus:
    schedule: Schedule
    last_run: Run | None  # None: never ran

    @property
    def source(self) -> str:
        """Where the job runs: ``lab NAME``, ``ssh HOST`` / ``ssh INVENTORY`` or ``local``, and
        ``through slurm (partition P)`` for a sweep launched through Slurm."""
        args = self.schedule.args
        where = "local"
        for key, kind in (("lab", "lab"), ("ssh", "ssh"), ("inventory", "ssh")):
            if args.get(key):
                where = f"{kind} {args[key]}"
                break
        if args.get("launcher") == "slurm":
            if where == "local":
                where = f"input {args.get('input')}"
            inside = [f"{k} {args[k]}" for k in ("partition", "reservation") if args.get(k)]
            where += " through slurm" + (f" ({', '.join(inside)})" if inside else "")
        return where


def add_schedule(
    stored: StoreAccess, name: str, kind: str, timing: Timing, args: Mapping[str, Any], enabled: bool = True
) -> Schedule:
    """Check the job's arguments against its kind and store it; its first run is the next due slot."""
    if not _NAME_RE.fullmatch(name):
        raise UsageError(f"schedule name {name!r}: use letters, digits, '.', '_' and '-'")
    if args.get("lab") and args.get("ssh"):
        raise UsageError("choose one of --lab and --ssh")
    if kind == "sweep":
        from fabric.app.daemon.jobs import slurm_choice_of

        through_slurm = slurm_choice_of(args) is not None
        if args.get("ssh"):
            raise UsageError("a sweep runs against --lab NAME or over SSH with --inventory FILE, not --ssh")
        if through_slurm and args.get("inventory"):
            raise UsageError("--launcher slurm reaches the hosts through Slurm: drop --inventory")
        if through_slurm and not args.get("lab") and "input" not in args:
            raise UsageError("a Slurm sweep schedule needs --lab NAME or the fabric: add -- --input TOPO")
        if not through_slurm and not args.get("lab") and not args.get("inventory"):
            raise UsageError(
                "a sweep schedule needs --lab NAME or --inventory FILE (with -- --input TOPO),"
                " or -- --launcher slurm --input TOPO"
            )
        if args.get("inventory") and "input" not in args:
            raise UsageError("an SSH sweep schedule needs the fabric: add -- --input TOPO")
    with stored.write() as store:
        schedule_id = store.add_schedule(
            name,
            kind,
            interval_seconds=timing.interval_seconds,
            cron=None if timing.cron is None else timing.cron.text,
            args=dict(args),
            enabled=enabled,
            next_run=timing.first_run(time.time()),
        )
        return store.schedule(schedule_id)


def schedule_statuses(stored: StoreAccess) -> list[ScheduleStatus]:
    """Every schedule with its last run; none when there is no store yet (listing creates none)."""
    found = stored.read()
    if found is None:
        return []
    with found as store:
        return [
            ScheduleStatus(s, next(iter(store.list_runs(s.id, limit=1)), None))
            for s in store.list_schedules()
        ]


def remove_schedule(stored: StoreAccess, name: str) -> None:
    """Remove a schedule by name (its past runs stay in the store)."""
    with stored.write() as store:
        store.delete_schedule(name)


def schedule_to_dict(st: ScheduleStatus) -> dict[str, Any]:
    s, r = st.schedule, st.last_run
    return {
        "name": s.name,
        "kind": s.kind,
        "interval_seconds": s.interval_seconds,
        "cron": s.cron,
        "args": dict(s.args),
        "enabled": s.enabled,
        "last_run": s.last_run,
        "next_run": s.next_run,
        "last_result": None
        if r is None
        else {"run_id": r.id, "started": r.started, "finished": r.finished, "ok": r.ok, "error": r.error},
    }
