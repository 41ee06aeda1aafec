"""Retention: raw snapshots for a week, hourly points for a season, findings for a year.

Counters are cumulative, so an hour of snapshots is summed exactly by its last one: compaction
keeps the last snapshot of each hour (an *hourly point*, stored like any snapshot, so health reads
it unchanged, and its deltas against the point before telescope to the hour's sums) and deletes
the others, after recording per port and counter what a point cannot tell: the sum of the hour's
increments counting a reset as a fresh start, the largest single increment (the peak rate), how
many counters reset, and how many snapshots the hour had (table ``hourly_counters``). The first
snapshot of a set of ports is kept too (the baseline its first hour is counted from).

Each hour is compacted in its own short transaction (the write lock is held for one hour's
blocks, so a collector waits a fraction of a second at most) and the deletion of an hour's raw
snapshots commits together with its point and aggregates: a compaction killed at any moment loses
nothing, and the next one goes on where it stopped.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import fields
from typing import TYPE_CHECKING

import numpy as np

from fabric.core.fields import COUNTER_NAMES, COUNTERS
from fabric.store import blocks
from fabric.store.blocks import KEY_EVERY, Values
from fabric.store.counters import CounterTables
from fabric.store.history import HistoryTables
from fabric.store.records import DAY_S, CompactResult, HourlyCounters, Retention, Span, StoreInfo
from topology.errors import StoreError

if TYPE_CHECKING:
    from numpy.typing import NDArray

HOUR_S = 3600.0
_GROUP_ROWS = 200  # snapshots deleted per transaction when whole spans expire
# Counters whose hourly sums are kept. The 64-bit data counters are left out: their sum is the
# point's own change (telescoping), a reset inside the hour aside (the resets row says when), and
# at 50,000 ports they would double the size of a point.
SUMMED: tuple[str, ...] = tuple(n for n in COUNTER_NAMES if COUNTERS[n][0] < 64)
# hourly_counters.data rows: sums of SUMMED, maxima of every counter, then resets and intervals
AGGREGATE_ROWS: tuple[str, ...] = (
    *(f"sum_{n}" for n in SUMMED),
    *(f"max_{n}" for n in COUNTER_NAMES),
    "resets",
    "intervals",
)


class RetentionTables(CounterTables, HistoryTables):
    # -- the policy ---------------------------------------------------------------------------
    def retention(self) -> Retention:
        """The saved policy (``ibfab store compact --save``), else the defaults."""
        with self._read() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'retention'").fetchone()
        if row is None:
            return Retention()
        try:
            return Retention(**{k: float(v) for k, v in json.loads(row[0]).items()})
        except (ValueError, TypeError) as exc:
            raise StoreError(f"{self.path}: saved retention policy unreadable ({exc})") from exc

    def set_retention(self, policy: Retention) -> None:
        text = json.dumps({f.name: getattr(policy, f.name) for f in fields(policy)})
        with self._write() as db:
            db.execute(
                "INSERT INTO meta (key, value) VALUES ('retention', ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (text,),
            )

    # -- compaction ---------------------------------------------------------------------------
    def compact(
        self, policy: Retention | None = None, *, now: float | None = None, budget_s: float | None = None
    ) -> CompactResult:
        """Apply ``policy`` (default: :meth:`retention`) as of ``now``, oldest first, each hour in its
        own transaction; with ``budget_s``, stop starting new hours after that long (``done`` False:
        the next call goes on)."""
        policy = policy or self.retention()
        now = time.time() if now is None else now
        started = time.monotonic()
        expired = self._expire(now - policy.hourly_s)
        hours = points = deleted = 0
        done = True
        for group in self._raw_groups(now - policy.raw_s):
            if budget_s is not None and (hours or deleted) and time.monotonic() - started > budget_s:
                done = False
                break
            with self._write() as db:
                made, gone = self._compact_hour(db, group)
            hours += 1 if made else 0
            points += made
            deleted += gone
        captures, events, findings, runs = self._trim(now, policy)
        return CompactResult(hours, points, deleted + expired, captures, events, findings, runs, done)

    def _expire(self, before: float) -> int:
        """Delete every counter snapshot (point or raw) taken before ``before``, a group at a time."""
        total = 0
        while True:
            with self._write() as db:
                ids = [
                    r[0]
                    for r in db.execute(
                        "SELECT id FROM counter_snapshots WHERE taken_at < ? ORDER BY taken_at, id LIMIT ?",
                        (before, _GROUP_ROWS),
                    )
                ]
                self._delete_snapshots(db, ids)
            total += len(ids)
            if len(ids) < _GROUP_ROWS:
                return total

    def _raw_groups(self, before: float) -> list[list[tuple[int, float, int]]]:
        """Raw snapshots taken before ``before``, grouped by (hour, port set), oldest hour first."""
        with self._read() as db:
            rows = db.execute(
                "SELECT s.id, s.taken_at, b.port_set_id FROM counter_snapshots s"
                " JOIN counter_blocks b ON b.snapshot_id = s.id"
                " WHERE s.taken_at < ? AND s.state = 'complete'"
                " AND s.id NOT IN (SELECT snapshot_id FROM hourly_counters)"
                " ORDER BY s.taken_at, s.id",
                (before,),
            ).fetchall()
        groups: dict[tuple[int, int], list[tuple[int, float, int]]] = {}
        for sid, taken, port_set in rows:
            groups.setdefault((int(taken // HOUR_S), port_set), []).append((sid, taken, port_set))
        return [groups[k] for k in sorted(groups)]

    def _compact_hour(
        self, db: sqlite3.Connection, group: Sequence[tuple[int, float, int]]
    ) -> tuple[int, int]:
        """One hour of one port set's raw snapshots -> its hourly point and aggregates (in the
        caller's transaction). Returns (points made, snapshots deleted)."""
        ids = [sid for sid, _, _ in group]
        alive = {
            r[0]
            for r in db.execute(
                "SELECT id FROM counter_snapshots WHERE id IN (SELECT value FROM json_each(?))"
                " AND id NOT IN (SELECT snapshot_id FROM hourly_counters)",
                (json.dumps(ids),),
            )
        }
        group = [g for g in group if g[0] in alive]  # another compactor may have been first
        if not group:
            return 0, 0
        port_set = group[0][2]
        first_taken = group[0][1]
        before = db.execute(
            "SELECT s.id FROM counter_snapshots s JOIN counter_blocks b ON b.snapshot_id = s.id"
            " WHERE b.port_set_id = ? AND (s.taken_at < ? OR (s.taken_at = ? AND s.id < ?))"
            " ORDER BY s.taken_at DESC, s.id DESC LIMIT 1",
            (port_set, first_taken, first_taken, group[0][0]),
        ).fetchone()
        prev = None if before is None else int(before[0])
        wanted = [sid for sid, _, _ in group] + ([] if prev is None else [prev])
        decoded = {sid: values for sid, values, _ in self._codec.decode(db, wanted)}
        order = [sid for sid, _, _ in group if sid in decoded]
        if not order:  # every snapshot of the hour is damaged: left for `ibfab store repair`
            return 0, 0
        keep = order[-1]
        points = [keep]
        if prev is None or prev not in decoded:
            # the first readable snapshot of these ports: the baseline the hour is counted from
            if len(order) > 1:
                points.insert(0, order[0])
            series = [decoded[sid] for sid in order]
        else:
            series = [decoded[prev], *(decoded[sid] for sid in order)]
        hour = math.floor(first_taken / HOUR_S) * HOUR_S
        for point in points:
            upto = series if point == keep else series[:1]
            blob = blocks.pack_rows(_aggregate(upto))
            db.execute(
                "INSERT INTO hourly_counters (snapshot_id, hour, samples, first_taken, port_set_id, data, crc)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    point,
                    hour,
                    len(order) if point == keep else 1,
                    first_taken,
                    port_set,
                    blob,
                    blocks.checksum(blob),
                ),
            )
        # a damaged snapshot stays as it is, for `ibfab store repair` to set aside with its blob
        doomed = [sid for sid in order if sid not in points]
        self._delete_snapshots(db, doomed)
        base = points[0] if len(points) > 1 else prev
        if base is not None and base < keep:
            self._codec.rebase(db, keep, base)
        return len(points), len(doomed)

    def _trim(self, now: float, policy: Retention) -> tuple[int, int, int, int]:
        """Raw captures, link events, findings and runs past their span: (captures, events, findings, runs)."""
        with self._write() as db:
            db.execute("CREATE TEMP TABLE IF NOT EXISTS doomed_captures (id INTEGER PRIMARY KEY)")
            db.execute("DELETE FROM doomed_captures")
            db.execute(
                "INSERT OR IGNORE INTO doomed_captures SELECT l.capture_id FROM counter_snapshot_captures l"
                " JOIN counter_snapshots s ON s.id = l.snapshot_id WHERE s.taken_at < ?",
                (now - policy.captures_s,),
            )
            db.execute(
                "DELETE FROM counter_snapshot_captures WHERE capture_id IN (SELECT id FROM doomed_captures)"
            )
            captures = db.execute(
                "DELETE FROM captures WHERE id IN (SELECT id FROM doomed_captures)"
                " AND id NOT IN (SELECT capture_id FROM counter_snapshot_captures)"
                " AND id NOT IN (SELECT capture_id FROM topology_snapshots WHERE capture_id IS NOT NULL)"
                " AND id NOT IN (SELECT capture_id FROM probe_results WHERE capture_id IS NOT NULL)"
            ).rowcount
            events = db.execute("DELETE FROM link_events WHERE time < ?", (now - policy.hourly_s,)).rowcount
            oldest_day = time.strftime("%Y-%m-%d", time.gmtime(now - policy.findings_s))
            findings = db.execute("DELETE FROM findings_history WHERE day < ?", (oldest_day,)).rowcount
            runs = db.execute(
                "DELETE FROM runs WHERE finished IS NOT NULL AND started < ?", (now - policy.findings_s,)
            ).rowcount
        return captures, events, findings, runs

    # -- what the store holds ---------------------------------------------------------------------
    def info(self, *, now: float | None = None, horizon_s: float = 30 * DAY_S) -> StoreInfo:
        """Sizes, spans, the collection rate and the size projected under the retention policy."""
        now = time.time() if now is None else now
        policy = self.retention()
        with self._read() as db:
            raw = db.execute(
                "SELECT count(*), min(s.taken_at), max(s.taken_at), total(length(b.data)) FROM counter_snapshots s"
                " JOIN counter_blocks b ON b.snapshot_id = s.id"
                " WHERE s.id NOT IN (SELECT snapshot_id FROM hourly_counters)"
            ).fetchone()
            hourly = db.execute(
                "SELECT count(*), min(s.taken_at), max(s.taken_at), total(length(b.data) + length(h.data))"
                " FROM hourly_counters h JOIN counter_snapshots s ON s.id = h.snapshot_id"
                " JOIN counter_blocks b ON b.snapshot_id = s.id"
            ).fetchone()
            captures = db.execute(
                "SELECT count(*), total(length(c.raw_zlib)), count(DISTINCT l.snapshot_id) FROM captures c"
                " JOIN counter_snapshot_captures l ON l.capture_id = c.id"
            ).fetchone()
            all_captures = db.execute("SELECT count(*), total(length(raw_zlib)) FROM captures").fetchone()
            port_sets = db.execute("SELECT count(*), total(length(data)) FROM port_sets").fetchone()
            topologies = db.execute(
                "SELECT count(*), total(length(fabric_json_zlib)) FROM topology_snapshots"
            ).fetchone()
            findings = db.execute("SELECT count(*), min(day), max(day) FROM findings_history").fetchone()
            events = db.execute("SELECT count(*), min(time) FROM link_events").fetchone()
            quarantined = db.execute("SELECT count(*), total(length(data)) FROM quarantine").fetchone()
            page = db.execute("PRAGMA page_size").fetchone()[0]
            pages, free = (
                db.execute("PRAGMA page_count").fetchone()[0],
                db.execute("PRAGMA freelist_count").fetchone()[0],
            )
        wal = self.path.with_name(self.path.name + "-wal")
        file_bytes = self.path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
        count, oldest, newest, raw_bytes = raw
        per_day = (count - 1) * DAY_S / (newest - oldest) if count > 1 and newest > oldest else 0.0
        block = raw_bytes / count if count else 0.0
        capture = captures[1] / captures[2] if captures[2] else 0.0
        point = hourly[3] / hourly[0] if hourly[0] else block
        # rows, indexes, topologies, findings: what does not grow with the counters
        other = float(page * pages - raw_bytes - hourly[3] - all_captures[1] - free * page)

        def projected(span: float) -> float:
            rate = per_day / DAY_S
            hourly_span = max(0.0, min(policy.hourly_s, span) - policy.raw_s)
            return float(
                rate * min(policy.raw_s, span) * block
                + rate * min(policy.captures_s, span) * capture
                + hourly_span / HOUR_S * point * max(1, int(port_sets[0]))
                + max(0.0, other)
            )

        return StoreInfo(
            path=str(self.path),
            file_bytes=file_bytes,
            free_bytes=free * page,
            policy=policy,
            raw=Span(count, oldest, newest, int(raw_bytes)),
            hourly=Span(hourly[0], hourly[1], hourly[2], int(hourly[3])),
            capture_count=int(all_captures[0]),
            capture_bytes=int(all_captures[1]),
            port_set_bytes=int(port_sets[1]),
            topologies=int(topologies[0]),
            topology_bytes=int(topologies[1]),
            findings=int(findings[0]),
            findings_days=(findings[1], findings[2]),
            link_events=int(events[0]),
            quarantined=int(quarantined[0]),
            snapshots_per_day=per_day,
            bytes_per_snapshot=block + capture,
            horizon_s=horizon_s,
            projected_horizon_bytes=projected(horizon_s),
            projected_steady_bytes=projected(max(policy.hourly_s, policy.findings_s)),
        )

    def load_hourly(self, snapshot_id: int) -> HourlyCounters:
        """The aggregates kept with an hourly point (per port, in the port set's order)."""
        with self._read() as db:
            row = db.execute(
                "SELECT hour, samples, first_taken, port_set_id, CAST(data AS BLOB), crc FROM hourly_counters"
                " WHERE snapshot_id = ?",
                (snapshot_id,),
            ).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: snapshot {snapshot_id} is not an hourly point")
            if blocks.checksum(row[4]) != row[5]:
                raise StoreError(f"{self.path}: hourly aggregates of snapshot {snapshot_id} are damaged")
            ports = self._codec.port_set(db, row[3])
        rows = blocks.unpack_rows(row[4])
        names = ports.name_objects()[ports.guid].tolist()
        keys = tuple(zip(names, ports.port.tolist(), strict=True))
        k, m = len(SUMMED), len(COUNTER_NAMES)
        return HourlyCounters(
            snapshot_id=snapshot_id,
            hour=row[0],
            samples=row[1],
            first_taken=row[2],
            ports=keys,
            sums={n: rows[i].tolist() for i, n in enumerate(SUMMED)},
            maxima={n: rows[k + i].tolist() for i, n in enumerate(COUNTER_NAMES)},
            resets=rows[k + m].tolist(),
            intervals=rows[k + m + 1].tolist(),
        )

    def is_hourly(self, snapshot_ids: Sequence[int]) -> set[int]:
        """Which of these snapshots are hourly points."""
        with self._read() as db:
            return {
                r[0]
                for r in db.execute(
                    "SELECT snapshot_id FROM hourly_counters WHERE snapshot_id IN (SELECT value FROM json_each(?))",
                    (json.dumps(list(snapshot_ids)),),
                )
            }


def _aggregate(series: Sequence[Values]) -> list[NDArray[np.uint64]]:
    """Sums (of SUMMED) and maxima of each counter's increments along ``series`` (a reset counts
    the new value as the increment, as deltas do), how many resets, how many intervals:
    AGGREGATE_ROWS."""
    n = series[0].ports
    k = len(COUNTER_NAMES)
    sums = [np.zeros(n, dtype=np.uint64) for _ in range(k)]
    maxima = [np.zeros(n, dtype=np.uint64) for _ in range(k)]
    resets = np.zeros(n, dtype=np.uint64)
    intervals = np.zeros(n, dtype=np.uint64)
    last = [series[0].row(name).copy() for name in COUNTER_NAMES]
    seen = [~series[0].na(name) for name in COUNTER_NAMES]
    for values in series[1:]:
        any_valid = np.zeros(n, dtype=bool)
        for i, name in enumerate(COUNTER_NAMES):
            v, ok = values.row(name), ~values.na(name)
            both = ok & seen[i]
            went_down = both & (v < last[i])
            inc = np.where(went_down, v, v - last[i])
            inc[~both] = 0
            sums[i] += inc
            np.maximum(maxima[i], inc, out=maxima[i])
            resets += went_down
            any_valid |= both
            last[i] = np.where(ok, v, last[i])
            seen[i] |= ok
        intervals += any_valid
    return [*(sums[COUNTER_NAMES.index(n)] for n in SUMMED), *maxima, resets, intervals]


__all__ = ["AGGREGATE_ROWS", "KEY_EVERY", "Retention", "RetentionTables"]
