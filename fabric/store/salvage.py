"""Reading a damaged store as far as SQLite can, and mending in place what can be mended: the
file's header and the schema's own rows.

SQLite keeps no checksum of its pages, so one flipped byte in the 100-byte header or in the rows
of ``sqlite_master`` (the schema: every table's name, root page and ``CREATE`` statement) stops
every statement on the file. Both are known exactly from this code: the header fields an ibfab
store always has, and the schema its version was built with (:func:`expected_schema`, made by
running the same statements on an empty database). So a damaged header is rewritten field by
field, and a damaged schema row is matched to the row it should be (by name, else by its text,
else by its likeness) and rewritten; its root page, the one thing not known here, is kept.
"""

from __future__ import annotations

import difflib
import functools
import os
import sqlite3
import struct
from dataclasses import dataclass
from pathlib import Path

from fabric.store import schema

HEADER_BYTES = 100
MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True, slots=True)
class HeaderField:
    """A field of SQLite's file header whose value every ibfab store has."""

    offset: int
    size: int
    what: str
    good: bytes
    also: tuple[bytes, ...] = ()  # other values SQLite writes there for a store

    def holds_good(self, header: bytes) -> bool:
        got = header[self.offset : self.offset + self.size]
        return got == self.good or got in self.also


# What a store made by ibfab always holds (WAL journal, UTF-8, schema format 4, no reserved
# bytes, no auto-vacuum, application id "IBFB"); counters and sizes are not judged here.
_FIELDS: tuple[HeaderField, ...] = (
    HeaderField(0, 16, "SQLite's magic string", MAGIC),
    HeaderField(18, 2, "file format versions", b"\x02\x02", (b"\x01\x01",)),
    HeaderField(20, 1, "reserved bytes per page", b"\x00"),
    HeaderField(21, 3, "payload fractions", b"\x40\x20\x20"),
    HeaderField(44, 4, "schema format", struct.pack(">I", 4), tuple(struct.pack(">I", n) for n in (1, 2, 3))),
    HeaderField(52, 4, "auto-vacuum root", b"\x00" * 4),
    HeaderField(56, 4, "text encoding (UTF-8)", struct.pack(">I", 1)),
    HeaderField(64, 4, "incremental vacuum", b"\x00" * 4),
    HeaderField(68, 4, "application id (IBFB)", struct.pack(">I", schema.APPLICATION_ID)),
    HeaderField(72, 20, "reserved space", b"\x00" * 20),
)
_APP_ID = _FIELDS[-2]


def read_header(path: Path) -> bytes:
    try:
        with path.open("rb") as f:
            return f.read(HEADER_BYTES)
    except OSError:
        return b""


def _page_size_ok(header: bytes) -> bool:
    size: int = struct.unpack(">H", header[16:18])[0]
    return size == 1 or (512 <= size <= 32768 and size & (size - 1) == 0)


def looks_like_ours(header: bytes) -> bool:
    """The header carries ibfab's application id, or every other field an ibfab store has (one
    flipped byte cannot make a foreign file look like a store)."""
    if len(header) < HEADER_BYTES:
        return False
    if _APP_ID.holds_good(header):
        return True
    return _page_size_ok(header) and all(f.holds_good(header) for f in _FIELDS if f is not _APP_ID)


def header_problems(header: bytes) -> list[str]:
    """The fields of an ibfab store's header that differ from what every ibfab store holds."""
    if len(header) < HEADER_BYTES:
        return [f"the file is {len(header)} bytes, shorter than SQLite's header"]
    found = [
        f"{f.what} (bytes {f.offset}-{f.offset + f.size - 1})" for f in _FIELDS if not f.holds_good(header)
    ]
    if not _page_size_ok(header):
        found.insert(1, "page size (bytes 16-17)")
    return found


def mend_header(path: Path) -> list[str]:
    """Rewrite the fields of the header that differ from an ibfab store's; returns what it
    rewrote. Only for a file SQLite cannot open or that says it is not ours: nobody else has it
    open then."""
    header = read_header(path)
    if len(header) < HEADER_BYTES or not looks_like_ours(header):
        return []
    fixed = bytearray(header)
    mended = []
    for f in _FIELDS:
        if not f.holds_good(bytes(fixed)):
            fixed[f.offset : f.offset + f.size] = f.good
            mended.append(f.what)
    if not _page_size_ok(bytes(fixed)):
        size = _page_size_from_file(path)
        if size is None:
            return mended  # SQLite will say what it makes of it
        fixed[16:18] = struct.pack(">H", 1 if size == 65536 else size)
        mended.append("page size")
    if mended:
        with path.open("r+b") as out:
            out.write(bytes(fixed))
            os.fsync(out.fileno())
    return mended


def _page_size_from_file(path: Path) -> int | None:
    """The page size a damaged header lost: the power of two at which page 2 starts with a
    b-tree page type (every store has the meta table's root there)."""
    with path.open("rb") as f:
        head = f.read(65536 + 1)
    for size in (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512):
        if len(head) > size and head[size] in (0x02, 0x05, 0x0A, 0x0D):
            return size
    return None


# -- the schema ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SchemaRow:
    """A row of ``sqlite_master`` (its root page left out: that is the file's, not the schema's)."""

    type: str
    name: str
    tbl_name: str
    sql: str | None


@functools.cache
def expected_schema(version: int) -> tuple[SchemaRow, ...]:
    """The ``sqlite_master`` rows of a store of schema ``version``, made as ibfab makes a store."""
    db = sqlite3.connect(":memory:")
    try:
        for statement in schema.BASE_SCHEMA:
            db.execute(statement)
        for step in schema.MIGRATIONS:
            if step.to_version > version:
                break
            for statement in step.statements:
                db.execute(statement)
            if step.run is not None:
                step.run(db)
        rows = db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall()
    finally:
        db.close()
    return tuple(SchemaRow(*r) for r in rows)


@functools.cache
def expected_columns(version: int) -> dict[str, tuple[tuple[str, str], ...]]:
    """Each table's (column, declared type) of a store of schema ``version``."""
    return {t: tuple((c.name, c.type) for c in cols) for t, cols in expected_table_columns(version).items()}


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str  # declared: INTEGER, REAL, TEXT, BLOB
    not_null: bool


@functools.cache
def expected_table_columns(version: int) -> dict[str, tuple[Column, ...]]:
    """Each table's columns in a store of schema ``version``."""
    db = sqlite3.connect(":memory:")
    try:
        for row in expected_schema(version):
            if row.type == "table" and row.sql:
                db.execute(row.sql)
        return {
            row.name: tuple(
                Column(str(c[1]), str(c[2]).upper(), bool(c[3]) or bool(c[5]))
                for c in db.execute(f'PRAGMA table_info("{row.name}")')
            )
            for row in expected_schema(version)
            if row.type == "table"
        }
    finally:
        db.close()


def schema_problems(db: sqlite3.Connection, version: int, *, tables_only: bool = False) -> list[str]:
    """How the schema SQLite read from the file differs from the one of ``version`` (tables and
    their columns, indexes); empty when it is whole. Column types and names are compared, not the
    statements' text (their comments may differ between the versions of ibfab that wrote them)."""
    want = {r.name: r for r in expected_schema(version)}
    have = {r.name: r for r in read_schema(db)}
    problems = [f"{row.type} {name} missing" for name, row in want.items() if name not in have]
    for name, row in want.items():
        if row.type == "table" and name in have:
            got = tuple(
                (_text(c[0]), _text(c[1]))
                for c in db.execute(
                    "SELECT CAST(name AS BLOB), CAST(type AS BLOB) FROM pragma_table_info(?)", (name,)
                )
            )
            if got != expected_columns(version)[name]:
                problems.append(f"table {name}: its columns are not those of schema version {version}")
    if tables_only:  # (what an open needs: a damaged index costs speed, not a read)
        return [p for p in problems if p.startswith("table ")]
    for name, row in want.items():  # an index whose statement no longer parses is not used
        if row.type == "index" and name in have and row.tbl_name in have:
            parsed = {
                _text(r[0])
                for r in db.execute("SELECT CAST(name AS BLOB) FROM pragma_index_list(?)", (row.tbl_name,))
            }
            if name not in parsed:
                problems.append(f"index {name} does not parse")
    problems += [
        f"{row.type} {name!r} is not of schema version {version}"
        for name, row in have.items()
        if name not in want
    ]
    return problems


def read_schema(db: sqlite3.Connection) -> list[SchemaRow]:
    """The rows of ``sqlite_master`` as stored, whatever bytes they hold (U+FFFD for a byte that
    is not UTF-8)."""
    return [r for _, _, r in _stored_rows(db)]


def _stored_rows(db: sqlite3.Connection) -> list[tuple[int, int | None, SchemaRow]]:
    rows = db.execute(
        "SELECT rowid, rootpage, CAST(type AS BLOB), CAST(name AS BLOB), CAST(tbl_name AS BLOB),"
        " CAST(sql AS BLOB) FROM sqlite_master"
    ).fetchall()
    return [
        (
            int(r[0]),
            r[1] if isinstance(r[1], int) else None,
            SchemaRow(_text(r[2]), _text(r[3]), _text(r[4]), _opt(r[5])),
        )
        for r in rows
    ]


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def _opt(value: object) -> str | None:
    return None if value is None else _text(value)


def _likeness(a: SchemaRow, b: SchemaRow) -> float:
    """1.0 for the same row; a row with one byte flipped (in its name, its text or its type) is
    still well above 0.9, another table's row well below."""
    if a.name == b.name and a.type == b.type:
        return 1.0 if a == b else 0.99
    if a.sql is not None and a.sql == b.sql:
        return 0.98
    left = f"{a.type}|{a.name}|{a.tbl_name}|{a.sql or ''}"
    right = f"{b.type}|{b.name}|{b.tbl_name}|{b.sql or ''}"
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    return matcher.ratio() if matcher.real_quick_ratio() > 0.9 and matcher.quick_ratio() > 0.9 else 0.0


def mend_schema(db: sqlite3.Connection, version: int) -> list[str]:
    """Rewrite the rows of ``sqlite_master`` that differ from the schema of ``version`` (each
    matched to the row it should be; its root page kept); returns what it rewrote.

    ``db`` must have ``PRAGMA writable_schema = ON`` and be in a write transaction."""
    stored = _stored_rows(db)
    want = [r for r in expected_schema(version)]
    exact = {r for _, _, r in stored} & set(want)
    todo = [r for r in want if r not in exact]
    loose = [(rowid, row) for rowid, _, row in stored if row not in exact]
    pairs = sorted(
        ((_likeness(w, row), i, j) for i, w in enumerate(todo) for j, (_, row) in enumerate(loose)),
        reverse=True,
    )
    mended: list[str] = []
    done_w: set[int] = set()
    done_s: set[int] = set()
    for score, i, j in pairs:
        if score < 0.9 or i in done_w or j in done_s:
            continue
        done_w.add(i)
        done_s.add(j)
        w = todo[i]
        db.execute(
            "UPDATE sqlite_master SET type = ?, name = ?, tbl_name = ?, sql = ? WHERE rowid = ?",
            (w.type, w.name, w.tbl_name, w.sql, loose[j][0]),
        )
        mended.append(f"{w.type} {w.name}")
    # Gone without a trace: made anew (its rows, if any, are lost), tables before their indexes.
    for i, w in sorted(enumerate(todo), key=lambda iw: iw[1].type != "table"):
        if i not in done_w and w.sql is not None and w.type in ("table", "index"):
            db.execute(w.sql)
            mended.append(f"{w.type} {w.name} (made anew, empty)")
    if mended:
        cookie = int(db.execute("PRAGMA schema_version").fetchone()[0])
        db.execute(f"PRAGMA schema_version = {cookie + 1}")
    return mended
