"""What operators and the daemon did: the isolation audit log, schedules and their runs."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any

from fabric.core.processes import process_alive, process_identity
from fabric.store.core import StoreBase
from fabric.store.records import AuditEntry, Run, Schedule
from topology.errors import StoreError
from topology.model import Guid, PortRef

_SCHEDULE_COLUMNS = "id, name, kind, interval_seconds, cron, args, enabled, last_run, next_run"
_RUN_COLUMNS = "id, schedule_id, started, finished, ok, error"
_SCHEDULE_CHANGES = frozenset({"kind", "interval_seconds", "cron", "args", "enabled", "next_run"})


class OperationTables(StoreBase):
    # -- audit log ----------------------------------------------------------------------------
    def audit(
        self,
        user: str,
        action: str,
        target: str,
        command: str,
        result: str,
        undo_of: int | None = None,
        when: float | None = None,
        *,
        argv: Sequence[str] = (),
        ports: Sequence[PortRef] = (),
        nodes: Sequence[str] = (),
        hosts: Sequence[str] = (),
        source: tuple[str, str] = ("", ""),
    ) -> int:
        """Append to the audit log (durable once this returns); returns the entry id. Besides the
        text, what ran (``argv``), on which ports or nodes, and where (``source``: its kind and
        target) are kept as such, so an undo never reads the text back."""
        typed = (
            json.dumps(list(argv)),
            json.dumps([[p.guid, p.port] for p in ports]),
            json.dumps(list(nodes)),
            json.dumps(list(hosts)),
            *source,
        )
        with self._write() as db:
            try:
                cur = db.execute(
                    "INSERT INTO audit_log (time, user, action, target, command, result, undo_of,"
                    " argv, ports, nodes, hosts, source_kind, source_target)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        time.time() if when is None else when,
                        user,
                        action,
                        target,
                        command,
                        result,
                        undo_of,
                        *typed,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"{self.path}: audit entry undoes unknown entry {undo_of}") from exc
            assert cur.lastrowid is not None
            return cur.lastrowid

    def audit_log(self, since: float | None = None) -> list[AuditEntry]:
        """Audit entries from ``since`` on, oldest first."""
        with self._read() as db:
            rows = db.execute(
                "SELECT id, time, user, action, target, command, result, undo_of,"
                " argv, ports, nodes, hosts, source_kind, source_target FROM audit_log"
                " WHERE time >= ? ORDER BY id",
                (since if since is not None else float("-inf"),),
            ).fetchall()
        return [_entry(r) for r in rows]

    # -- schedules ----------------------------------------------------------------------------
    def add_schedule(
        self,
        name: str,
        kind: str,
        *,
        interval_seconds: int | None = None,
        cron: str | None = None,
        args: Mapping[str, Any] | None = None,
        enabled: bool = True,
        next_run: float | None = None,
    ) -> int:
        """A schedule runs ``kind`` ("counters" or "sweep") every ``interval_seconds`` or by ``cron`` text."""
        if (interval_seconds is None) == (cron is None):
            raise StoreError(f"schedule {name!r}: give exactly one of an interval or a cron expression")
        with self._write() as db:
            try:
                cur = db.execute(
                    "INSERT INTO schedules (name, kind, interval_seconds, cron, args, enabled, next_run)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (name, kind, interval_seconds, cron, json.dumps(dict(args or {})), enabled, next_run),
                )
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"{self.path}: cannot add schedule {name!r}: {exc}") from exc
            assert cur.lastrowid is not None
            return cur.lastrowid

    def schedule(self, ref: int | str) -> Schedule:
        """A schedule by id or name; unknown is a StoreError."""
        column = "id" if isinstance(ref, int) else "name"
        with self._read() as db:
            row = db.execute(
                f"SELECT {_SCHEDULE_COLUMNS} FROM schedules WHERE {column} = ?", (ref,)
            ).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no schedule {ref!r}")
        return _schedule(row)

    def list_schedules(self, enabled_only: bool = False) -> list[Schedule]:
        sql = f"SELECT {_SCHEDULE_COLUMNS} FROM schedules"
        if enabled_only:
            sql += " WHERE enabled"
        with self._read() as db:
            return [_schedule(r) for r in db.execute(sql + " ORDER BY name").fetchall()]

    def update_schedule(self, ref: int | str, **changes: Any) -> Schedule:
        """Change some of kind, interval_seconds, cron, args, enabled, next_run."""
        unknown = set(changes) - _SCHEDULE_CHANGES
        if unknown:
            raise StoreError(f"cannot change schedule field(s) {', '.join(sorted(unknown))}")
        if "args" in changes:
            changes["args"] = json.dumps(dict(changes["args"]))
        schedule_id = self.schedule(ref).id
        if changes:
            sets = ", ".join(f"{name} = ?" for name in changes)
            with self._write() as db:
                try:
                    db.execute(f"UPDATE schedules SET {sets} WHERE id = ?", (*changes.values(), schedule_id))
                except sqlite3.IntegrityError as exc:
                    raise StoreError(f"{self.path}: cannot change schedule {ref!r}: {exc}") from exc
        return self.schedule(schedule_id)

    def delete_schedule(self, ref: int | str) -> None:
        schedule_id = self.schedule(ref).id
        with self._write() as db:
            db.execute("DELETE FROM schedules WHERE id = ?", (schedule_id,))

    # -- runs ---------------------------------------------------------------------------------
    def start_run(self, schedule_id: int | None, started: float | None = None) -> int:
        """Record that a run began (schedule_id None: run by hand), by this process; returns the
        run id."""
        with self._write() as db:
            try:
                cur = db.execute(
                    "INSERT INTO runs (schedule_id, started, pid, process) VALUES (?, ?, ?, ?)",
                    (
                        schedule_id,
                        time.time() if started is None else started,
                        os.getpid(),
                        process_identity(),
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"{self.path}: no schedule {schedule_id}") from exc
            assert cur.lastrowid is not None
            return cur.lastrowid

    def finish_run(
        self, run_id: int, ok: bool, error: str | None = None, finished: float | None = None
    ) -> Run:
        """Record how a run ended; also sets its schedule's last_run to the run's start."""
        with self._write() as db:
            end = time.time() if finished is None else finished
            if (
                db.execute(
                    "UPDATE runs SET finished = ?, ok = ?, error = ? WHERE id = ?", (end, ok, error, run_id)
                ).rowcount
                == 0
            ):
                raise StoreError(f"{self.path}: no run {run_id}")
            db.execute(
                "UPDATE schedules SET last_run = (SELECT started FROM runs WHERE id = ?)"
                " WHERE id = (SELECT schedule_id FROM runs WHERE id = ?)",
                (run_id, run_id),
            )
            row = db.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        return _run(row)

    def close_dead_runs(self, now: float | None = None) -> int:
        """Close as killed every open run whose process no longer runs (SIGKILL, a crash, a
        reboot); returns how many. A run of another host, or of an ibfab that recorded no process,
        stays open: nothing here can tell whether it still runs."""
        with self._read() as db:
            open_runs = db.execute(
                "SELECT id, pid, process FROM runs WHERE finished IS NULL AND pid IS NOT NULL AND process IS NOT NULL"
            ).fetchall()
        dead = [(rid, pid) for rid, pid, who in open_runs if process_alive(int(pid), str(who)) is False]
        if not dead:
            return 0
        end = time.time() if now is None else now
        with self._write() as db:
            for rid, pid in dead:
                db.execute(
                    "UPDATE runs SET finished = ?, ok = 0, error = ? WHERE id = ? AND finished IS NULL",
                    (end, f"killed: its process (PID {pid}) ended without recording the end of the run", rid),
                )
        return len(dead)

    def list_runs(self, schedule_id: int | None = None, limit: int = 100) -> list[Run]:
        """The newest runs first (of one schedule, or all)."""
        sql = f"SELECT {_RUN_COLUMNS} FROM runs"
        args: tuple[Any, ...] = ()
        if schedule_id is not None:
            sql += " WHERE schedule_id = ?"
            args = (schedule_id,)
        with self._read() as db:
            rows = db.execute(sql + " ORDER BY started DESC, id DESC LIMIT ?", (*args, limit)).fetchall()
        return [_run(r) for r in rows]


def _schedule(row: tuple[Any, ...]) -> Schedule:
    return Schedule(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]), bool(row[6]), row[7], row[8])


def _run(row: tuple[Any, ...]) -> Run:
    return Run(row[0], row[1], row[2], row[3], None if row[4] is None else bool(row[4]), row[5])


def _entry(row: tuple[Any, ...]) -> AuditEntry:
    argv, ports, nodes, hosts = (json.loads(v) for v in row[8:12])
    entry_id, when, user, action, target, command, result, undo_of = row[:8]
    return AuditEntry(
        entry_id,
        when,
        user,
        action,
        target,
        command,
        result,
        undo_of,
        argv=tuple(argv),
        ports=tuple(PortRef(Guid(g), int(p)) for g, p in ports),
        nodes=tuple(nodes),
        hosts=tuple(hosts),
        source_kind=row[12],
        source_target=row[13],
    )
