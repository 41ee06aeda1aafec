"""Mending a store opened by `ibfab store repair` (``Store.open(..., mend=True)``): its header's
mark, its schema's rows, its indexes, and, for damaged table pages, a copy of what reads."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from fabric.store import schema
from fabric.store.integrity import IntegrityTables
from fabric.store.rebuild import Rebuilt, copy_readable
from fabric.store.salvage import expected_schema, mend_schema
from topology.errors import StoreError


class MendingTables(IntegrityTables):
    def _mending_only(self) -> None:
        if not self.mending:
            raise StoreError(f"{self.path}: mending needs the store opened by `ibfab store repair`")

    def mend_header_mark(self) -> bool:
        """Write ibfab's application id back into a header whose mark is damaged."""
        self._mending_only()
        if self._db.execute("PRAGMA application_id").fetchone()[0] == schema.APPLICATION_ID:
            return False
        with self._write() as db:
            db.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
        return True

    def mend_schema(self) -> list[str]:
        """Rewrite the damaged rows of the schema (each from the one it should be); returns what
        was rewritten. Reopen the store afterwards to read with the mended schema."""
        self._mending_only()
        self._db.execute("PRAGMA writable_schema = ON")  # left on: the store is reopened after
        with self._write() as db:
            return mend_schema(db, self.version)

    def reindex(self, names: list[str]) -> bool:
        """Build these indexes anew from their tables; False when SQLite cannot (then only a copy
        of what reads mends the file)."""
        self._mending_only()
        indexes = {r.name for r in expected_schema(self.version) if r.type == "index"}
        try:
            with self._write() as db:
                for name in names:
                    if name in indexes:
                        db.execute(f'REINDEX "{name}"')
        except (StoreError, sqlite3.DatabaseError):
            return False
        return True

    def copy_readable(self, dest: Path) -> Rebuilt:
        """Copy every row that reads into a new store at ``dest`` (see fabric.store.rebuild)."""
        self._mending_only()
        if dest.exists():
            dest.unlink()
        # A connection of its own: this one may hold a schema a failed mend left half-read.
        src = sqlite3.connect(self.path, isolation_level=None)
        try:
            src.execute("PRAGMA writable_schema = ON")
            with contextlib.suppress(sqlite3.DatabaseError, UnicodeDecodeError):
                src.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return copy_readable(src, dest, self.version)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot copy what reads into {dest}: {exc}") from exc
        finally:
            src.close()
