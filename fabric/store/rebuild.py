"""What SQLite can still read of a store with damaged pages, copied into a new file.

A damaged b-tree page cannot be mended in place (SQLite keeps no copy of it) and stops every
statement that walks over it, deletes and ``VACUUM`` included. So each table is walked by rowid,
stepping over the stretch a damaged page holds (found by seeking past it, then narrowing down to
the first row that reads), and every row that reads is copied into a fresh file of the same
schema. A row whose blob sits on a damaged overflow page is copied with that blob empty: its
checksum then fails and it is set aside like any damaged blob. The caller keeps the damaged file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fabric.store import schema
from fabric.store.salvage import Column, expected_schema, expected_table_columns

_BATCH = 4096
_TOP = (1 << 63) - 1


@dataclass
class Rebuilt:
    """What the copy kept and what it could not read."""

    rows: dict[str, int] = field(default_factory=dict)  # table -> rows copied
    lost: list[str] = field(default_factory=list)  # "table: rows ... unreadable"
    emptied: list[str] = field(default_factory=list)  # "table row N: column ... unreadable"


def readable_rowids(db: sqlite3.Connection, table: str) -> Iterator[int | tuple[int, int]]:
    """Every rowid of ``table`` SQLite can read, in order; a stretch it cannot read comes as a
    (last read, next read) pair in between (next read = 2**63-1 when nothing reads after it)."""
    last = -_TOP - 1
    while True:
        got = 0
        try:
            for (rowid,) in db.execute(
                f'SELECT rowid FROM main."{table}" WHERE rowid > ? ORDER BY rowid LIMIT {_BATCH}', (last,)
            ):
                last = int(rowid)
                got += 1
                yield last
        except sqlite3.DatabaseError:
            nxt = _next_readable(db, table, last)
            yield (last, _TOP if nxt is None else nxt)
            if nxt is None:
                return
            last = nxt - 1
            continue
        if got < _BATCH:
            return


def _seeks(db: sqlite3.Connection, table: str, at: int) -> bool:
    try:
        db.execute(
            f'SELECT rowid FROM main."{table}" WHERE rowid >= ? ORDER BY rowid LIMIT 1', (at,)
        ).fetchall()
    except sqlite3.DatabaseError:
        return False
    return True


def _next_readable(db: sqlite3.Connection, table: str, last: int) -> int | None:
    """The smallest rowid past ``last`` from which the table reads again (None: nothing does)."""
    bad, step = last + 1, 1
    while True:  # double the step until a seek lands on a page that reads
        probe = min(_TOP, last + 1 + step)
        if _seeks(db, table, probe):
            break
        bad = probe
        if probe == _TOP:
            return None
        step *= 2
    good = probe
    while good - bad > 1:  # then narrow down between the last seek that failed and this one
        mid = (good + bad) // 2
        if _seeks(db, table, mid):
            good = mid
        else:
            bad = mid
    row = db.execute(
        f'SELECT rowid FROM main."{table}" WHERE rowid >= ? ORDER BY rowid LIMIT 1', (good,)
    ).fetchone()
    return None if row is None else int(row[0])


def copy_readable(src: sqlite3.Connection, dest: Path, version: int) -> Rebuilt:
    """Make ``dest`` a store of schema ``version`` holding every row of ``src`` that reads.

    Rows go through Python (values as their type and bytes, so text that is not UTF-8 and a blob
    stored as text are copied as they are): a statement that meets a damaged page may leave an
    SQLite transaction that spans both files unable to commit."""
    fresh = sqlite3.connect(dest, isolation_level=None)
    out = Rebuilt()
    try:
        fresh.execute("PRAGMA journal_mode = WAL")
        fresh.execute("BEGIN")
        for row in sorted(expected_schema(version), key=lambda r: r.type != "table"):
            if row.sql is not None:
                fresh.execute(row.sql)
        fresh.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
        for table, columns in expected_table_columns(version).items():
            if not src.execute("SELECT count(*) FROM pragma_table_info(?, 'main')", (table,)).fetchone()[0]:
                out.lost.append(f"{table}: not in the schema SQLite reads: its rows are lost")
                out.rows[table] = 0
                continue
            _copy_table(src, fresh, table, columns, out)
        fresh.execute("COMMIT")
        fresh.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        if fresh.in_transaction:
            fresh.execute("ROLLBACK")
        fresh.close()
    return out


def _reads(columns: tuple[Column, ...]) -> str:
    """Each column as (its type, its value; text and blobs as bytes)."""
    return ", ".join(
        f'typeof("{c.name}"), CAST("{c.name}" AS BLOB)' if c.type in ("TEXT", "BLOB") else f'NULL, "{c.name}"'
        for c in columns
    )


def _writes(columns: tuple[Column, ...]) -> str:
    return ", ".join(
        "CASE ? WHEN 'text' THEN CAST(? AS TEXT) ELSE ? END" if c.type in ("TEXT", "BLOB") else "?"
        for c in columns
    )


def _params(columns: tuple[Column, ...], row: tuple[object, ...]) -> list[object]:
    out: list[object] = []
    for i, c in enumerate(columns):
        kind, value = row[2 * i], row[2 * i + 1]
        out += [kind, value, value] if c.type in ("TEXT", "BLOB") else [value]
    return out


def _copy_table(
    src: sqlite3.Connection, fresh: sqlite3.Connection, table: str, columns: tuple[Column, ...], out: Rebuilt
) -> None:
    names = ", ".join(f'"{c.name}"' for c in columns)
    select = f'SELECT {_reads(columns)} FROM main."{table}"'
    insert = f'INSERT INTO "{table}" ({names}) VALUES ({_writes(columns)})'
    batch = 64 if any(c.type == "BLOB" for c in columns) else _BATCH
    copied = 0
    pending: list[int] = []

    def flush() -> None:
        nonlocal copied
        if not pending:
            return
        try:
            rows = src.execute(f"{select} WHERE rowid BETWEEN ? AND ?", (pending[0], pending[-1])).fetchall()
        except sqlite3.DatabaseError:
            rows = [r for r in (_read_row(src, table, columns, select, rowid, out) for rowid in pending) if r]
        fresh.executemany(insert, [_params(columns, r) for r in rows])
        copied += len(rows)
        pending.clear()

    try:
        for item in readable_rowids(src, table):
            if isinstance(item, tuple):
                flush()
                first, nxt = item
                upto = "the end" if nxt == _TOP else f"row {nxt}"
                start = "its start" if first < -(1 << 62) else f"row {first}"
                out.lost.append(f"{table}: the rows after {start} up to {upto} are on pages that do not read")
                continue
            pending.append(item)
            if len(pending) >= batch:
                flush()
        flush()
    except sqlite3.DatabaseError as exc:  # the table's root page itself does not read
        out.lost.append(f"{table}: does not read at all ({exc})")
    out.rows[table] = copied


def _read_row(
    src: sqlite3.Connection, table: str, columns: tuple[Column, ...], select: str, rowid: int, out: Rebuilt
) -> tuple[object, ...] | None:
    """One row, column by column when the whole row does not read (a damaged overflow page)."""
    try:
        got = src.execute(f"{select} WHERE rowid = ?", (rowid,)).fetchone()
        return None if got is None else tuple(got)
    except sqlite3.DatabaseError:
        pass
    values: list[object] = []
    for col in columns:
        try:
            got = src.execute(
                f'SELECT {_reads((col,))} FROM main."{table}" WHERE rowid = ?', (rowid,)
            ).fetchone()
            values += [None, None] if got is None else list(got)
        except sqlite3.DatabaseError:
            if col.type == "BLOB":
                values += ["blob", b""]  # fails its checksum: set aside with the blobs
            elif col.not_null:
                out.lost.append(f"{table} row {rowid}: column {col.name} does not read")
                return None
            else:
                values += [None, None]
            out.emptied.append(f"{table} row {rowid}: column {col.name} does not read")
    return tuple(values)
