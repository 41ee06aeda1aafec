"""Opening the store: where it lives, pragmas, the schema version check, transactions.

Journal and durability: WAL, so the daemon can write while the TUI and CLI read (readers see the
last committed snapshot and never block the writer), and ``synchronous=FULL``. With WAL,
``NORMAL`` is already safe against a killed process (the file never corrupts, a commit is either
there or not); ``FULL`` adds that a commit also survives a power cut or kernel crash. The store
is written in few, large transactions (a counter snapshot every few minutes, an audit entry per
isolation), so the one extra fsync per commit costs little, and an audit entry for a change made
to the fabric must not vanish after it was reported as recorded.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Self

from fabric.core.paths import store_path
from fabric.core.warnlog import logger
from fabric.store import schema
from fabric.store.salvage import (
    HEADER_BYTES,
    expected_schema,
    header_problems,
    looks_like_ours,
    mend_header,
    read_header,
    read_schema,
    schema_problems,
)
from topology.errors import StoreError

log = logger("fabric.store")

BUSY_TIMEOUT_SECONDS = 30.0
# Level 1: tool output is repetitive text, so even the fastest level shrinks it several times,
# and ingest of a 50,000-port snapshot must stay well under two seconds.
RAW_ZLIB_LEVEL = 1


class StoreDamaged(StoreError):
    """Something stored cannot be read back as it was stored (`ibfab store repair` sets it aside)."""


class HeaderDamaged(StoreError):
    """The file's 100-byte header differs from an ibfab store's (`ibfab store repair` rewrites it)."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        super().__init__(
            f"{path}: the store's header is damaged ({', '.join(problems)}); `ibfab store repair` rewrites it"
        )
        self.problems = problems


class _SchemaDamaged(Exception):
    """The schema SQLite read is not the store's whole schema (open what can be read)."""


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)


def _sqlite_message(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        # SQLite quoted damaged bytes of the schema in its message, which Python cannot decode.
        return "malformed database schema: SQLite's message quotes bytes that are not text"
    return str(exc)


def _read_header(path: Path) -> bytes:
    """The file's header, read through a descriptor this process already holds on it when there
    is one (another thread's connection, the daemon's own store). Closing any descriptor of a
    file drops every POSIX lock this process holds on it, SQLite's included (fcntl locks belong
    to the process and the file, not to the descriptor), so a header read with open()/close()
    while a connection here holds the store let another process take it for its own: it
    checkpointed and removed the WAL under that connection, whose writes then failed with "disk
    I/O error" (a daemon's every job, while a reader polled its store). A held descriptor is read
    with pread (its offset untouched) and never closed here; only when none is held is the file
    opened and closed (then there is no lock to lose)."""
    try:
        st = path.stat()
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return read_header(path)
    for name in fds:
        fd = int(name)
        try:
            if _same_file(os.fstat(fd), st):
                data = os.pread(fd, HEADER_BYTES, 0)
                if _same_file(os.fstat(fd), st):  # not closed and reused meanwhile by another thread
                    return data
        except OSError:  # closed meanwhile, or not readable: another one, or the file itself
            continue
    return read_header(path)


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _header_check(path: Path, mend: bool) -> str | None:
    """Damage in the header of a file that is an ibfab store: rewritten when mending (returns
    what was), else a :class:`HeaderDamaged`. Another file's header is left for SQLite to judge;
    a damaged application id alone is judged once the tables can be read."""
    header = _read_header(path)
    if len(header) < HEADER_BYTES or not looks_like_ours(header):
        return None
    problems = [p for p in header_problems(header) if not p.startswith("application id")]
    if not problems:
        return None
    if not mend:
        raise HeaderDamaged(path, problems)
    mended = mend_header(path)
    return f"header rewritten: {', '.join(mended)}" if mended else None


def compress(data: bytes, level: int = RAW_ZLIB_LEVEL) -> bytes:
    return zlib.compress(data, level)


def decompress(blob: bytes) -> bytes:
    return zlib.decompress(blob)


class StoreBase:
    """The connection and its transactions; the table modules add methods on top (see fabric.store)."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db = db
        self.path = path
        self._write_depth = 0
        self.version = schema.schema_version()
        self.mending = False  # opened by `ibfab store repair`: writable whatever the damage
        self.damage_note: str | None = None  # why nothing is written: its schema is damaged
        self.header_note: str | None = None  # its header's damage, or what mending rewrote there

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path | None = None, create: bool = True, *, mend: bool = False) -> Self:
        """Open (and create or upgrade) the store at ``path`` (default: :func:`default_db_path`).

        A store whose header or schema is damaged opens to read what SQLite can still read, and
        refuses every write (:attr:`damage_note` says why); ``mend`` (`ibfab store repair`) opens it
        writable instead, after rewriting a damaged header."""
        where = store_path(path)
        if not where.exists():
            if not create:
                raise StoreError(f"{where}: no ibfab store there")
            try:
                where.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"{where}: cannot create its directory: {exc.strerror}") from exc
        header_note = _header_check(where, mend)
        try:
            db = _connect(where)
        except sqlite3.Error as exc:
            raise StoreError(f"{where}: cannot open: {exc}") from exc
        store = cls(db, where)
        store.mending = mend
        store.header_note = header_note
        try:
            store._prepare(create)
        except BaseException:
            store._db.close()
            raise
        return store

    @classmethod
    def existing(cls, path: str | Path | None = None) -> Self | None:
        """The store at ``path`` opened to read, None when there is none: what only reads never
        creates one (an operator's typo in --db leaves no stray file)."""
        where = store_path(path)
        return cls.open(where, create=False) if where.exists() else None

    def _prepare(self, create: bool) -> None:
        with self._errors("open"):
            try:
                self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
                mode = self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreError(f"{self.path}: cannot switch to WAL journal (got {mode})")
                self._db.execute("PRAGMA synchronous = FULL")
                self._db.execute("PRAGMA foreign_keys = ON")
                version = self._stored_version()
                if version == schema.schema_version() or (version is not None and self.mending):
                    self.version = version
                    problems = schema_problems(self._db, version, tables_only=True)
                    if problems:
                        raise _SchemaDamaged("; ".join(problems))
                    return
            except _SchemaDamaged as exc:
                self._salvage(str(exc))
                return
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                why = _sqlite_message(exc)
                if "not a database" in why:
                    raise StoreError(f"{self.path}: not an SQLite database ({why})") from exc
                self._salvage(why)
                return
            if version is None and not create:
                raise StoreError(f"{self.path}: empty database, not an ibfab store")
            with self._write() as db:
                # Re-read under the write lock: another process may have created or upgraded it.
                version = self._stored_version()
                if version is None:
                    for statement in schema.BASE_SCHEMA:
                        db.execute(statement)
                    db.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
                    db.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '1')")
                    version = 1
                for step in schema.MIGRATIONS:
                    if step.to_version > version:
                        for statement in step.statements:
                            db.execute(statement)
                        if step.run is not None:
                            step.run(db)
                        version = step.to_version
                db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
            self.version = version

    def _salvage(self, why: str) -> None:
        """Reopen a store whose schema SQLite cannot read whole: the schema rows that parse are
        used (``writable_schema``: SQLite's own way to read around a damaged one), nothing is
        written unless mending."""
        self._db.close()
        self._db = _connect(self.path)
        db = self._db
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        db.execute("PRAGMA writable_schema = ON")
        # The first statement reports the damage; the next ones use what parsed.
        with contextlib.suppress(sqlite3.DatabaseError, UnicodeDecodeError):
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        try:
            names = {row.name for row in read_schema(db)}
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise StoreError(
                f"{self.path}: a damaged SQLite database ({_sqlite_message(exc)}); restore it from a copy"
            ) from exc
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        if app_id != schema.APPLICATION_ID and not names & {
            "meta",
            "counter_snapshots",
            "topology_snapshots",
        }:
            raise StoreError(f"{self.path}: a damaged SQLite database ({why}); restore it from a copy")
        version = schema.schema_version()
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is not None and str(row[0]).isdigit() and 1 <= int(row[0]) <= version:
                version = int(row[0])
        except (sqlite3.DatabaseError, UnicodeDecodeError):
            pass  # the meta table is damaged too: read it as this version's
        self.version = version
        problems = schema_problems(db, version)
        self.damage_note = f"its schema is damaged ({'; '.join(problems) or why})"
        if not self.mending:
            db.execute("PRAGMA query_only = ON")
            log.warning(
                "%s: %s: reading what can be read, writing nothing; `ibfab store repair` mends it",
                self.path,
                self.damage_note,
            )

    def _stored_version(self) -> int | None:
        """The schema version in the file; None for an empty database. Raises on anything not ours."""
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return None
        app_id = self._db.execute("PRAGMA application_id").fetchone()[0]
        ours = app_id == schema.APPLICATION_ID
        if "meta" not in tables:
            if ours:
                raise _SchemaDamaged("table meta missing")
            raise StoreError(f"{self.path}: an SQLite database, but not an ibfab store")
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        text = row[0] if row else None
        current = schema.schema_version()
        if text is None or not str(text).isdigit() or int(text) < 1:
            if not ours:
                raise StoreError(f"{self.path}: an SQLite database, but not an ibfab store")
            raise StoreError(
                f"{self.path}: unknown store schema version {text!r} (this ibfab uses {current})"
            )
        version = int(text)
        if version > current:
            raise StoreError(
                f"{self.path}: store schema version {version} is newer than this ibfab understands "
                f"({current}); upgrade ibfab"
            )
        if not ours:
            # Every table of a store of its version: ibfab's, with the mark in its header damaged.
            if not {r.name for r in expected_schema(version) if r.type == "table"} <= tables:
                raise StoreError(f"{self.path}: an SQLite database, but not an ibfab store")
            self.header_note = (
                f"application id {app_id:#x} where an ibfab store has {schema.APPLICATION_ID:#x}"
            )
            if not self.mending:
                log.warning(
                    "%s: its header is damaged (%s); `ibfab store repair` mends it",
                    self.path,
                    self.header_note,
                )
        return version

    # -- life cycle ---------------------------------------------------------------------------
    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0])

    def integrity_check(self) -> str:
        """``ok``, or SQLite's first complaint."""
        with self._errors("integrity check"):
            return str(self._db.execute("PRAGMA integrity_check").fetchone()[0])

    # -- transactions -------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE: take the write lock up front, waiting up to the
        busy timeout, so a read never has to be upgraded mid-way). Nested uses join the outer one."""
        if self._write_depth:
            self._write_depth += 1
            try:
                yield self._db
            finally:
                self._write_depth -= 1
            return
        if self.damage_note is not None and not self.mending:
            raise StoreError(f"{self.path}: not written: {self.damage_note}; `ibfab store repair` mends it")
        with self._errors("write"):
            self._db.execute("BEGIN IMMEDIATE")
            self._write_depth = 1
            try:
                yield self._db
            except BaseException:
                self._write_depth = 0
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            self._write_depth = 0
            try:
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A consistent view over several SELECTs (one read transaction)."""
        if self._write_depth or self._db.in_transaction:
            yield self._db
            return
        with self._errors("read"):
            self._db.execute("BEGIN")
            try:
                yield self._db
            finally:
                if self._db.in_transaction:
                    self._db.execute("COMMIT")

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreError(
                    f"{self.path}: {what}: store busy for more than {BUSY_TIMEOUT_SECONDS:g} s ({exc})"
                ) from exc
            raise StoreError(f"{self.path}: {what}: {exc}{_damage_hint(exc)}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {what}: {exc}{_damage_hint(exc)}") from exc
        except UnicodeDecodeError as exc:  # damaged text (SQLite's message quoting it, or a value)
            raise StoreError(
                f"{self.path}: {what}: {_sqlite_message(exc)}; `ibfab store check` names the damage"
            ) from exc


def _damage_hint(exc: sqlite3.Error) -> str:
    text = str(exc)
    if "malformed" in text or "Could not decode" in text or "no such" in text:
        return "; `ibfab store check` names the damage"
    return ""
