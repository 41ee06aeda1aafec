"""Raw tool output, kept byte-exact with the parser version that read it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import TypeVar

from fabric.store.core import StoreBase, compress, decompress
from fabric.store.records import Capture, CaptureInfo, RawCapture
from topology.errors import StoreError

T = TypeVar("T")

_INFO_COLUMNS = "id, kind, tool, source, taken_at, parser_version, raw_size"


class CaptureTables(StoreBase):
    def save_capture(self, capture: RawCapture) -> int:
        """Store one capture; returns its id."""
        with self._write() as db:
            return self._insert_capture(db, capture)

    def _insert_capture(self, db: sqlite3.Connection, capture: RawCapture) -> int:
        is_text = isinstance(capture.raw, str)
        data = capture.raw.encode("utf-8", "surrogateescape") if isinstance(capture.raw, str) else capture.raw
        cur = db.execute(
            "INSERT INTO captures (kind, tool, argv, source, taken_at, parser_version, raw_is_text, raw_size,"
            " raw_zlib) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                capture.kind,
                capture.tool,
                json.dumps(list(capture.argv)),
                capture.source,
                capture.taken_at,
                capture.parser_version,
                int(is_text),
                len(data),
                compress(data),
            ),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def load_capture(self, capture_id: int) -> Capture:
        """The capture with its raw output exactly as saved; an unknown id is a StoreError."""
        with self._read() as db:
            row = db.execute(
                "SELECT id, kind, tool, argv, source, taken_at, parser_version, raw_is_text, raw_size,"
                " raw_zlib FROM captures WHERE id = ?",
                (capture_id,),
            ).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no capture {capture_id}")
        data = decompress(row[9])
        raw: str | bytes = data.decode("utf-8", "surrogateescape") if row[7] else data
        return Capture(
            id=row[0],
            kind=row[1],
            tool=row[2],
            argv=tuple(json.loads(row[3])),
            source=row[4],
            taken_at=row[5],
            parser_version=row[6],
            raw=raw,
            size=row[8],
        )

    def list_captures(
        self, kind: str | None = None, tool: str | None = None, parser_version: str | None = None
    ) -> list[CaptureInfo]:
        """Captures (without text), oldest first; e.g. every perfquery capture read by an old parser."""
        where, args = [], []
        for column, value in (("kind", kind), ("tool", tool), ("parser_version", parser_version)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = f"SELECT {_INFO_COLUMNS} FROM captures"
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self._read() as db:
            rows = db.execute(sql + " ORDER BY id", args).fetchall()
        return [CaptureInfo(*row) for row in rows]

    def reparse(self, capture_id: int, parser: Callable[[str, str], T]) -> tuple[T, Capture]:
        """Re-read an old capture with today's parser: ``parser(text, source)``.

        Returns what the parser made of it and the capture (whose ``parser_version`` says which
        parser read it at the time), so a caller can compare and decide what to rewrite::

            rows, cap = store.reparse(42, parse_perfquery)
        """
        capture = self.load_capture(capture_id)
        return parser(capture.text, capture.source or f"capture {capture_id}"), capture
