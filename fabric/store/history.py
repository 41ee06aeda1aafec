"""Link down/up events and the day-by-day findings history (for repeat offenders)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fabric.store.core import StoreBase
from fabric.store.records import FindingRecord, FindingSubject
from topology.diff import LinkEvent
from topology.model import LinkKey


class HistoryTables(StoreBase):
    def add_link_events(self, events: Iterable[LinkEvent]) -> int:
        """Append events; returns how many."""
        rows = [
            (e.time, e.link[0][0], e.link[0][1], e.link[1][0], e.link[1][1], e.kind, e.source) for e in events
        ]
        with self._write() as db:
            db.executemany(
                "INSERT INTO link_events (time, a_guid, a_port, b_guid, b_port, kind, source)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
        return len(rows)

    def load_link_events(
        self, since: float | None = None, until: float | None = None, link: LinkKey | None = None
    ) -> list[LinkEvent]:
        """Events in [since, until] (optionally of one link), oldest first."""
        where, args = ["1"], list[Any]()
        if since is not None:
            where.append("time >= ?")
            args.append(since)
        if until is not None:
            where.append("time <= ?")
            args.append(until)
        if link is not None:
            where.append("a_guid = ? AND a_port = ? AND b_guid = ? AND b_port = ?")
            args.extend((link[0][0], link[0][1], link[1][0], link[1][1]))
        with self._read() as db:
            rows = db.execute(
                "SELECT time, a_guid, a_port, b_guid, b_port, kind, source FROM link_events"
                f" WHERE {' AND '.join(where)} ORDER BY time, id",
                args,
            ).fetchall()
        return [LinkEvent(r[0], ((r[1], r[2]), (r[3], r[4])), r[5], r[6]) for r in rows]

    def last_link_event(self, guid: str, port: int) -> LinkEvent | None:
        """The newest event of any link with ``guid``/``port`` at either end: who its peer was
        when it was last seen going down or coming up (None when it never changed)."""
        with self._read() as db:
            row = db.execute(
                "SELECT time, a_guid, a_port, b_guid, b_port, kind, source FROM link_events"
                " WHERE (a_guid = ? AND a_port = ?) OR (b_guid = ? AND b_port = ?)"
                " ORDER BY time DESC, id DESC LIMIT 1",
                (guid, port, guid, port),
            ).fetchone()
        return (
            None if row is None else LinkEvent(row[0], ((row[1], row[2]), (row[3], row[4])), row[5], row[6])
        )

    def record_findings(self, day: str, items: Iterable[tuple[FindingSubject, str, str]]) -> int:
        """Record the day's findings as (subject, kind, status); a second call for the same
        (day, subject, kind) replaces its status. ``day`` is YYYY-MM-DD."""
        rows = [(day, s.key, kind, status, *_subject_columns(s)) for s, kind, status in items]
        with self._write() as db:
            db.executemany(
                "INSERT INTO findings_history (day, subject, kind, status, a_guid, a_port, b_guid, b_port, node)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (day, subject, kind) DO UPDATE SET status = excluded.status",
                rows,
            )
        return len(rows)

    def load_findings_history(self, since: str | None = None) -> list[FindingRecord]:
        """Findings from day ``since`` (YYYY-MM-DD) on, by day then subject."""
        with self._read() as db:
            rows = db.execute(
                "SELECT day, subject, kind, status, a_guid, a_port, b_guid, b_port, node FROM findings_history"
                " WHERE day >= ? ORDER BY day, subject, kind",
                (since or "",),
            ).fetchall()
        return [FindingRecord(r[0], r[1], r[2], r[3], _subject_of(*r[4:])) for r in rows]


def _subject_columns(s: FindingSubject) -> tuple[str | None, int | None, str | None, int | None, str | None]:
    if s.link is not None:
        (a_guid, a_port), (b_guid, b_port) = s.link
        return a_guid, a_port, b_guid, b_port, None
    return None, None, None, None, s.node


def _subject_of(
    a_guid: str | None, a_port: int | None, b_guid: str | None, b_port: int | None, node: str | None
) -> FindingSubject | None:
    if a_guid is not None and a_port is not None and b_guid is not None and b_port is not None:
        return FindingSubject.of_link(((a_guid, a_port), (b_guid, b_port)))
    return FindingSubject.of_node(node) if node is not None else None
