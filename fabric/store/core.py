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

import os
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Self

from fabric.store import schema
from topology.errors import StoreError

BUSY_TIMEOUT_SECONDS = 30.0
# Level 1: tool output is repetitive text, so even the fastest level shrinks it several times,
# and ingest of a 50,000-port snapshot must stay well under two seconds.
RAW_ZLIB_LEVEL = 1


class StoreDamaged(StoreError):
    """Something stored cannot be read back as it was stored (`ibfab store repair` sets it aside)."""


def default_db_path() -> Path:
    """``$IBFAB_DATA_DIR/ibfab.db``, else ``$XDG_DATA_HOME/ibfab/ibfab.db``,
    else ``~/.local/share/ibfab/ibfab.db``."""
    data_dir = os.environ.get("IBFAB_DATA_DIR")
    if data_dir:
        return Path(data_dir) / "ibfab.db"
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "ibfab" / "ibfab.db"


def store_path(db: str | Path | None) -> Path:
    """The store file a ``--db`` value names: the value itself, else :func:`default_db_path`."""
    return Path(db) if db else default_db_path()


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

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path | None = None, create: bool = True) -> Self:
        """Open (and create or upgrade) the store at ``path`` (default: :func:`default_db_path`)."""
        where = store_path(path)
        if not where.exists():
            if not create:
                raise StoreError(f"{where}: no ibfab store there")
            try:
                where.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"{where}: cannot create its directory: {exc.strerror}") from exc
        try:
            db = sqlite3.connect(where, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"{where}: cannot open: {exc}") from exc
        store = cls(db, where)
        try:
            store._prepare(create)
        except BaseException:
            db.close()
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
            except sqlite3.DatabaseError as exc:
                if "not a database" in str(exc):
                    raise StoreError(f"{self.path}: not an SQLite database ({exc})") from exc
                if "malformed" in str(exc):
                    raise StoreError(
                        f"{self.path}: a damaged SQLite database ({exc}); restore it from a copy"
                    ) from exc
                raise
            if str(mode).lower() != "wal":
                raise StoreError(f"{self.path}: cannot switch to WAL journal (got {mode})")
            self._db.execute("PRAGMA synchronous = FULL")
            self._db.execute("PRAGMA foreign_keys = ON")
            version = self._stored_version()
            if version == schema.schema_version():
                self._check_tables()
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

    def _check_tables(self) -> None:
        """Every table of the schema is there (a cheap check at each open; `ibfab store check`
        reads everything)."""
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = [t for t in schema.TABLES if t not in tables]
        if missing:
            raise StoreError(
                f"{self.path}: a damaged ibfab store: table {', '.join(missing)} missing "
                f"(schema version {schema.schema_version()})"
            )

    def _stored_version(self) -> int | None:
        """The schema version in the file; None for an empty database. Raises on anything not ours."""
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return None
        app_id = self._db.execute("PRAGMA application_id").fetchone()[0]
        if "meta" not in tables or app_id != schema.APPLICATION_ID:
            raise StoreError(f"{self.path}: an SQLite database, but not an ibfab store")
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        text = row[0] if row else None
        current = schema.schema_version()
        if text is None or not str(text).isdigit() or int(text) < 1:
            raise StoreError(
                f"{self.path}: unknown store schema version {text!r} (this ibfab uses {current})"
            )
        version = int(text)
        if version > current:
            raise StoreError(
                f"{self.path}: store schema version {version} is newer than this ibfab understands "
                f"({current}); upgrade ibfab"
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
            raise StoreError(f"{self.path}: {what}: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {what}: {exc}") from exc
