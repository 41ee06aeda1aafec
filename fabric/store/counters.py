"""Counter snapshots: every port of the fabric read once, stored whole or not at all.

Values are unsigned 64-bit; SQLite INTEGER is signed 64-bit. A value at or above 2**63 is stored
as ``value - 2**64`` (negative) and restored on load, so :meth:`load_port_counters` gives the exact
value back. In the pandas counter table (Int64, as fields.py specifies) such a value shows as
2**63 - 1: no port counts that far (2**63 words is 23 years of 400 Gb/s traffic), so it can only
be a misread, and clamping keeps deltas non-negative. Negative input values are refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from fabric.core.fields import COUNTER_NAMES, FRAME_COLUMNS, PORT_COUNTER_FIELDS
from fabric.store.captures import CaptureTables, CompressAhead
from fabric.store.records import CaptureInfo, CounterSnapshotInfo, PortCounterRow, RawCapture
from topology.errors import StoreError

if TYPE_CHECKING:
    import pandas as pd

# The order of a row tuple given to save_counter_snapshot (the table's columns after snapshot_id).
_FIRST_COUNTER = PORT_COUNTER_FIELDS.index(COUNTER_NAMES[0])
_INT64_MAX = (1 << 63) - 1
_TWO_64 = 1 << 64
_INSERT = (
    f"INSERT INTO port_counters (snapshot_id, {', '.join(PORT_COUNTER_FIELDS)})"
    f" VALUES ({{snapshot_id}}, {', '.join('?' * len(PORT_COUNTER_FIELDS))})"
)
_ANY_NEGATIVE = " OR ".join(f"{name} < 0" for name in COUNTER_NAMES)
_SNAPSHOT_INFO = "id, taken_at, source, topology_snapshot_id, ports, state"


# Page cache for the save (KiB, as PRAGMA cache_size takes a negative number): a 98,304-port
# snapshot is ~25 MB of table and index pages; SQLite's default 2 MB cache spills pages to the
# WAL in the middle of the transaction.
SAVE_CACHE_KIB = 64 * 1024


class CounterTables(CaptureTables):
    def save_counter_snapshot(
        self,
        taken_at: float,
        source: str,
        topology_id: int | None,
        rows: Iterable[Sequence[Any] | PortCounterRow],
        raw_captures: Iterable[RawCapture] = (),
        *,
        ahead: CompressAhead | None = None,
    ) -> int:
        """Store one snapshot (its raw captures, its port rows, the snapshot row) in ONE transaction.

        A row is a :class:`PortCounterRow` or a tuple in :data:`PORT_COUNTER_FIELDS` order
        (counters in COUNTER_NAMES order, None where not read). Readers never see a part of it: it
        is either complete or absent, even if this process is killed half-way. Large raw captures
        are compressed in a background thread while the rows go in; ``ahead`` may already hold
        some of them (see :class:`~fabric.store.captures.CompressAhead`).
        """
        captures = list(raw_captures)
        with CompressAhead() as local:
            pack = ahead if ahead is not None else local
            for capture in captures:
                pack.add(capture.raw)
            with self._bigger_cache(), self._write() as db:
                cur = db.execute(
                    "INSERT INTO counter_snapshots (taken_at, source, topology_snapshot_id, ports, state)"
                    " VALUES (?, ?, ?, 0, 'writing')",
                    (taken_at, source, topology_id),
                )
                snapshot_id = cur.lastrowid
                assert snapshot_id is not None
                ports = self._insert_port_rows(db, snapshot_id, rows)
                for capture in captures:
                    capture_id = self._insert_capture(db, capture, pack.take(capture.raw))
                    db.execute(
                        "INSERT INTO counter_snapshot_captures (snapshot_id, capture_id) VALUES (?, ?)",
                        (snapshot_id, capture_id),
                    )
                db.execute(
                    "UPDATE counter_snapshots SET ports = ?, state = 'complete' WHERE id = ?",
                    (ports, snapshot_id),
                )
        return snapshot_id

    def _insert_port_rows(
        self, db: sqlite3.Connection, snapshot_id: int, rows: Iterable[Sequence[Any] | PortCounterRow]
    ) -> int:
        # Rows are consumed here, inside the transaction (a generator may be given). The snapshot
        # id goes into the statement's text, so tuple rows are bound as they come: no per-row copy.
        given = rows if isinstance(rows, list | tuple) else list(rows)
        params: Sequence[Sequence[Any]] = (
            given  # type: ignore[assignment]
            if all(type(row) is tuple for row in given)
            else [_params(row) for row in given]
        )
        insert = _INSERT.format(snapshot_id=int(snapshot_id))
        db.execute("SAVEPOINT port_rows")
        try:
            db.executemany(insert, params)
        except OverflowError:
            # Some value >= 2**63: redo this part with two's-complement storage.
            db.execute("ROLLBACK TO port_rows")
            db.executemany(insert, [_wrap_large(p) for p in params])
        else:
            bad = db.execute(
                f"SELECT guid, port FROM port_counters WHERE snapshot_id = ? AND ({_ANY_NEGATIVE}) LIMIT 1",
                (snapshot_id,),
            ).fetchone()
            if bad is not None:
                raise StoreError(f"{self.path}: negative counter value for {bad[0]} port {bad[1]}")
        db.execute("RELEASE port_rows")
        return len(params)

    @contextmanager
    def _bigger_cache(self) -> Iterator[None]:
        """SAVE_CACHE_KIB of page cache while a snapshot is written (pages are only taken as used)."""
        before = self._db.execute("PRAGMA cache_size").fetchone()[0]
        self._db.execute(f"PRAGMA cache_size = -{SAVE_CACHE_KIB}")
        try:
            yield
        finally:
            self._db.execute(f"PRAGMA cache_size = {int(before)}")

    def list_counter_snapshots(
        self, since: float | None = None, until: float | None = None
    ) -> list[CounterSnapshotInfo]:
        """Complete snapshots taken in [since, until], oldest first."""
        where, args = _time_filter(since, until)
        with self._read() as db:
            rows = db.execute(
                f"SELECT {_SNAPSHOT_INFO} FROM counter_snapshots WHERE {where} ORDER BY taken_at, id", args
            ).fetchall()
        return [CounterSnapshotInfo(*row) for row in rows]

    def snapshot_captures(self, snapshot_id: int) -> list[CaptureInfo]:
        """The raw captures a counter snapshot was parsed from (load their text with load_capture)."""
        with self._read() as db:
            rows = db.execute(
                "SELECT c.id, c.kind, c.tool, c.source, c.taken_at, c.parser_version, c.raw_size"
                " FROM captures c JOIN counter_snapshot_captures l ON l.capture_id = c.id"
                " WHERE l.snapshot_id = ? ORDER BY c.id",
                (snapshot_id,),
            ).fetchall()
        return [CaptureInfo(*row) for row in rows]

    def load_port_counters(self, snapshot_id: int) -> list[PortCounterRow]:
        """One snapshot's rows with exact values (sorted by guid, port)."""
        with self._read() as db:
            if (
                db.execute(
                    "SELECT 1 FROM counter_snapshots WHERE id = ? AND state = 'complete'", (snapshot_id,)
                ).fetchone()
                is None
            ):
                raise StoreError(f"{self.path}: no counter snapshot {snapshot_id}")
            rows = db.execute(
                f"SELECT {', '.join(PORT_COUNTER_FIELDS)} FROM port_counters WHERE snapshot_id = ?"
                " ORDER BY guid, port",
                (snapshot_id,),
            ).fetchall()
        return [
            PortCounterRow(
                time=r[7],
                guid=r[0],
                port=r[1],
                lid=r[2],
                peer_guid=r[3],
                peer_port=r[4],
                reachable=bool(r[5]),
                unreachable_reason=r[6],
                counters={
                    name: v + _TWO_64 if v < 0 else v
                    for name, v in zip(COUNTER_NAMES, r[_FIRST_COUNTER:], strict=True)
                    if v is not None
                },
            )
            for r in rows
        ]

    def load_counters(
        self,
        since: float | None = None,
        until: float | None = None,
        guids: Iterable[str] | None = None,
        snapshots: Iterable[int] | None = None,
    ) -> pd.DataFrame:
        """The counter table (fields.py FRAME_COLUMNS, Int64 counters) of complete snapshots taken in
        [since, until], optionally only some node GUIDs or snapshot ids; sorted by snapshot, guid, port.

        Read column-wise (:func:`_read_columns`): a 16,384-HCA fabric's hour of snapshots (2.9 M
        rows) loads in about 9 s where row tuples took 43 s.
        """
        import json

        where, args = _time_filter(since, until, "s.")
        if guids is not None:
            where += " AND p.guid IN (SELECT value FROM json_each(?))"
            args.append(json.dumps(sorted(set(guids))))
        if snapshots is not None:
            where += " AND s.id IN (SELECT value FROM json_each(?))"
            args.append(json.dumps(sorted(set(snapshots))))
        with self._read() as db:
            frame = _read_columns(db, where, args)
            if frame is None:  # text the fast path cannot read back exactly: row by row
                frame = _read_rows(db, where, args)
        return frame

    def load_counter_pieces(
        self, pieces: Sequence[Sequence[int]], since: float | None = None, until: float | None = None
    ) -> Generator[pd.DataFrame, None, None]:
        """``load_counters(since, until, snapshots=piece)`` for each piece of snapshot ids in turn.

        The next piece is read in a background thread, on a connection of its own, while the
        caller works on the current one (SQLite builds the column texts without holding the GIL),
        so at most two pieces are in memory beside the one the caller still holds. Each piece is
        its own read: a snapshot pruned meanwhile is simply absent from the later pieces.
        """
        if len(pieces) < 2 or self._db.in_transaction or not self.path.exists():
            for piece in pieces:
                yield self.load_counters(since, until, snapshots=piece)
            return
        from concurrent.futures import Future, ThreadPoolExecutor

        readers: list[CounterTables] = []  # the worker's own connection (sqlite3: one thread each)

        def load(piece: Sequence[int]) -> pd.DataFrame:
            if not readers:
                readers.append(type(self).open(self.path, create=False))
            return readers[0].load_counters(since, until, snapshots=piece)

        def close() -> None:
            for reader in readers:
                reader.close()

        pool = ThreadPoolExecutor(1, thread_name_prefix="ibfab-counters")
        ahead: Future[pd.DataFrame] = pool.submit(load, pieces[0])
        try:
            for piece in pieces[1:]:
                frame = ahead.result()
                ahead = pool.submit(load, piece)
                yield frame
                del frame
            yield ahead.result()
        finally:
            ahead.cancel()
            pool.submit(close).result()
            pool.shutdown(wait=True)

    def prune_counters(self, before: float) -> int:
        """Delete counter snapshots taken before ``before`` (and their raw captures); returns how many."""
        with self._write() as db:
            doomed = [
                r[0] for r in db.execute("SELECT id FROM counter_snapshots WHERE taken_at < ?", (before,))
            ]
            db.execute(
                "CREATE TEMP TABLE IF NOT EXISTS doomed_captures (id INTEGER PRIMARY KEY)",
            )
            db.execute("DELETE FROM doomed_captures")
            db.execute(
                "INSERT INTO doomed_captures SELECT c.capture_id FROM counter_snapshot_captures c"
                " JOIN counter_snapshots s ON s.id = c.snapshot_id WHERE s.taken_at < ?",
                (before,),
            )
            db.execute("DELETE FROM counter_snapshots WHERE taken_at < ?", (before,))
            db.execute(
                "DELETE FROM captures WHERE id IN (SELECT id FROM doomed_captures)"
                " AND id NOT IN (SELECT capture_id FROM counter_snapshot_captures)"
                " AND id NOT IN (SELECT capture_id FROM topology_snapshots WHERE capture_id IS NOT NULL)"
                " AND id NOT IN (SELECT capture_id FROM probe_results WHERE capture_id IS NOT NULL)"
            )
        return len(doomed)


def _params(row: Sequence[Any] | PortCounterRow) -> tuple[Any, ...]:
    if isinstance(row, PortCounterRow):
        values = row.counters
        return (
            row.guid,
            row.port,
            row.lid,
            row.peer_guid,
            row.peer_port,
            row.reachable,
            row.unreachable_reason,
            row.time,
            *[values.get(name) for name in COUNTER_NAMES],
        )
    return tuple(row)


def _wrap_large(params: Sequence[Any]) -> tuple[Any, ...]:
    counters = []
    for v in params[_FIRST_COUNTER:]:
        if v is not None and (v < 0 or v >= _TWO_64):
            raise StoreError(
                f"counter value {v} of {params[0]} port {params[1]} is not an unsigned 64-bit value"
            )
        counters.append(v - _TWO_64 if v is not None and v > _INT64_MAX else v)
    return (*params[:_FIRST_COUNTER], *counters)


def _time_filter(since: float | None, until: float | None, prefix: str = "") -> tuple[str, list[Any]]:
    where, args = [f"{prefix}state = 'complete'"], []
    if since is not None:
        where.append(f"{prefix}taken_at >= ?")
        args.append(since)
    if until is not None:
        where.append(f"{prefix}taken_at <= ?")
        args.append(until)
    return " AND ".join(where), args


# -- reading the counter table ------------------------------------------------------------------
# Python's sqlite3 makes an object per value: 2.9 M rows x 25 columns cost ~20 s to fetch and as
# much again to turn into a frame. Instead SQLite joins each column into one text (group_concat)
# and numpy parses it; error counters, zero on almost every row, travel only for the rows where
# one of them is not zero. Every value comes back exact: integers as decimal text, times scaled by
# 2**22 to integers (exact for epoch seconds; checked in the same query, else fetched as floats).
_FROM = "FROM counter_snapshots s JOIN port_counters p ON p.snapshot_id = s.id"
_SPARSE = COUNTER_NAMES[:12]  # the error counters (fields.ERROR_COUNTERS)
_DENSE = COUNTER_NAMES[12:]  # xmit_wait and the data counters move on every port
_NA = -(1 << 63)  # INTEGER NULL in the texts (never a stored counter, LID or port)
_TIME_SCALE = 1 << 22  # a double below 2**31 has no bit finer than 2**-22
_GUID_SEP, _NO_GUID = "\x1f", "\x1e"


def _stored(name: str) -> str:
    return f"CASE WHEN p.{name} < 0 THEN {_INT64_MAX} ELSE p.{name} END"


_INT_COLUMNS = (
    "p.rowid",
    "p.snapshot_id",
    "p.port",
    f"ifnull(p.lid, {_NA})",
    f"ifnull(p.peer_port, {_NA})",
    "p.reachable != 0",
    *(f"ifnull({_stored(n)}, {_NA})" for n in _DENSE),
)
_ANY_ERROR = f"ifnull({' | '.join(f'p.{n}' for n in _SPARSE)}, 1) != 0"
_SPARSE_ROW = " || ',' || ".join(["p.rowid", *(f"ifnull({_stored(n)}, {_NA})" for n in _SPARSE)])
_COLUMNS_SQL = (
    "SELECT count(*), "
    + ", ".join(f"group_concat({c})" for c in _INT_COLUMNS)
    + f", group_concat(CAST(p.time * {_TIME_SCALE} AS INTEGER))"
    + f", sum(p.time * {_TIME_SCALE} != CAST(p.time * {_TIME_SCALE} AS INTEGER))"
    + ", group_concat(p.guid, char(31)), group_concat(ifnull(p.peer_guid, char(30)), char(31))"
    + f", group_concat(CASE WHEN {_ANY_ERROR} THEN {_SPARSE_ROW} END)"
    + f" {_FROM} WHERE {{where}}"
)


def _ints(text: str | None, n: int) -> Any:
    import numpy as np

    if n == 0:
        return np.zeros(0, dtype=np.int64)
    try:
        values = np.fromstring(text or "", dtype=np.int64, sep=",")
    except ValueError:  # a value stored as REAL or TEXT
        return None
    return values if values.size == n else None


def _read_columns(db: Any, where: str, args: list[Any]) -> pd.DataFrame | None:
    """The counter table from one aggregate query; None if some stored value does not read back exactly."""
    import numpy as np
    import pandas as pd

    row = db.execute(_COLUMNS_SQL.format(where=where), args).fetchone()
    n = int(row[0])
    k = len(_INT_COLUMNS)
    ints = [_ints(text, n) for text in row[1 : k + 2]]
    if any(v is None for v in ints):
        return None
    rowid, snapshot, port, lid, peer_port, reachable, *dense = ints[:-1]
    if row[k + 2]:  # some time is not a multiple of 2**-22 (or too large): fetch those as floats
        times = dict(db.execute(f"SELECT p.rowid, p.time {_FROM} WHERE {where}", args).fetchall())
        time = np.array([times[r] for r in rowid.tolist()], dtype=np.float64)
    else:
        time = ints[-1].astype(np.float64) / _TIME_SCALE
    guid = (row[k + 3] or "").split(_GUID_SEP) if n else []
    peer = (row[k + 4] or "").split(_GUID_SEP) if n else []
    if len(guid) != n or len(peer) != n:
        return None
    errors = np.zeros((len(_SPARSE), n), dtype=np.int64)  # one contiguous row per counter
    sparse = _ints(row[k + 5], 0 if not row[k + 5] else row[k + 5].count(",") + 1)
    if sparse is None or sparse.size % (len(_SPARSE) + 1):
        return None
    if sparse.size:
        sparse = sparse.reshape(-1, len(_SPARSE) + 1)
        by_rowid = np.argsort(rowid, kind="stable")
        errors[:, by_rowid[np.searchsorted(rowid, sparse[:, 0], sorter=by_rowid)]] = sparse[:, 1:].T
    guid_arr = np.array(guid, dtype=object)
    peer_arr = np.array(peer, dtype=object)
    peer_arr[peer_arr == _NO_GUID] = None
    codes, _ = pd.factorize(guid_arr, sort=True)  # code order = SQLite's text order (UTF-8 bytes)
    # SQLite walks the primary key index, so the rows usually come sorted already
    order = None if _sorted(snapshot, codes, port) else np.lexsort((port, codes, snapshot))

    def put(values: Any) -> Any:
        return values if order is None else values[order]

    def nullable(values: Any) -> Any:
        values = put(values)
        missing = values == _NA
        if missing.any():
            values = np.where(missing, 0, values)
        return pd.arrays.IntegerArray(values, missing)

    columns: dict[str, Any] = {
        "snapshot": put(snapshot),
        "time": put(time),
        "guid": pd.Series(put(guid_arr), dtype=object, copy=False),
        "port": put(port),
        "lid": nullable(lid),
        "peer_guid": pd.Series(put(peer_arr), dtype=object, copy=False),
        "peer_port": nullable(peer_port),
        "reachable": put(reachable).astype(bool),
    }
    for i, name in enumerate(_SPARSE):
        columns[name] = nullable(errors[i])
    for name, values in zip(_DENSE, dense, strict=True):
        columns[name] = nullable(values)
    return pd.DataFrame(columns, columns=list(FRAME_COLUMNS), copy=False)


def _sorted(snapshot: Any, guid_code: Any, port: Any) -> bool:
    """Whether rows are in strictly increasing (snapshot, guid, port) order."""
    import numpy as np

    ds, dg, dp = np.diff(snapshot), np.diff(guid_code), np.diff(port)
    return bool(np.all((ds > 0) | ((ds == 0) & ((dg > 0) | ((dg == 0) & (dp > 0))))))


def _read_rows(db: Any, where: str, args: list[Any]) -> pd.DataFrame:
    """The counter table from row tuples (slow; for stores whose values the column path cannot read)."""
    import pandas as pd

    counters = ", ".join(_stored(n) for n in COUNTER_NAMES)
    sql = (
        "SELECT p.snapshot_id, p.time, p.guid, p.port, p.lid, p.peer_guid, p.peer_port, p.reachable, "
        f"{counters} {_FROM} WHERE {where} ORDER BY p.snapshot_id, p.guid, p.port"
    )
    rows = db.execute(sql, args).fetchall()
    frame = pd.DataFrame.from_records(rows, columns=list(FRAME_COLUMNS))
    frame = frame.astype({"snapshot": "int64", "time": "float64", "port": "int64", "reachable": "bool"})
    frame = frame.astype({name: "Int64" for name in ("lid", "peer_port", *COUNTER_NAMES)})
    frame["guid"] = frame["guid"].astype(object)
    frame["peer_guid"] = frame["peer_guid"].astype(object)
    return frame
