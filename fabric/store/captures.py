"""Raw tool output, kept byte-exact with the parser version that read it."""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Self, TypeVar

from fabric.store.core import StoreBase, StoreDamaged, compress, decompress
from fabric.store.records import Capture, CaptureInfo, RawCapture
from topology.errors import StoreError

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

T = TypeVar("T")

_INFO_COLUMNS = "id, kind, tool, source, taken_at, parser_version, raw_size"
# Below this many bytes a capture is compressed in line: a thread costs more than it saves.
AHEAD_MIN_BYTES = 1 << 20


REPAIR_HINT = "`ibfab store repair` sets it aside"


def blob_damage(blob: bytes, crc: int | None, size: int | None = None) -> str | None:
    """Why a stored zlib blob cannot be trusted, or None: its CRC-32 (when it has one) and its
    decompression (and length, when known) are checked."""
    if crc is not None and zlib.crc32(blob) != crc:
        return "checksum mismatch"
    try:
        data = zlib.decompress(blob)
    except zlib.error as exc:
        return f"does not decompress: {exc}"
    if size is not None and len(data) != size:
        return f"{len(data)} bytes where {size} were stored"
    return None


def _encode(raw: str | bytes) -> bytes:
    return raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else raw


class CompressAhead:
    """Raw capture texts compressed in a background thread while the caller goes on.

    zlib releases the GIL while it deflates, so on a second core a fabric-wide capture (66 MB of
    ibqueryerrors text for 98,304 ports, ~0.35 s at level 1) costs no wall time while the text is
    parsed or the port rows are inserted. :meth:`add` texts as soon as they arrive and hand this
    object to the save, which :meth:`take` s the blobs of the captures it stores (matched by
    identity, else by equal content) and compresses any other in line as before. Use as a context
    manager: leaving it waits for the worker and drops what was not taken.
    """

    def __init__(self, min_bytes: int = AHEAD_MIN_BYTES) -> None:
        self.min_bytes = min_bytes
        self._jobs: list[tuple[str | bytes, Future[tuple[int, bytes]]]] = []
        self._pool: ThreadPoolExecutor | None = None

    def add(self, raw: str | bytes) -> None:
        """Start compressing ``raw`` (texts under ``min_bytes`` are left to the save)."""
        if len(raw) < self.min_bytes or self._find(raw) is not None:
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            # one worker: the caller's thread keeps the other core
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ibfab-compress")
        self._jobs.append((raw, self._pool.submit(_pack, raw)))

    def take(self, raw: str | bytes) -> tuple[int, bytes] | None:
        """(size in bytes, zlib blob) of ``raw`` if it was added (waiting for it), else None."""
        i = self._find(raw)
        if i is None:
            return None
        _, future = self._jobs.pop(i)
        return future.result()

    def _find(self, raw: str | bytes) -> int | None:
        for i, (job, _) in enumerate(self._jobs):
            if job is raw:
                return i
        for i, (job, _) in enumerate(self._jobs):
            if type(job) is type(raw) and len(job) == len(raw) and job == raw:
                return i
        return None

    def close(self) -> None:
        for _, future in self._jobs:
            future.cancel()
        self._jobs.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pack(raw: str | bytes) -> tuple[int, bytes]:
    data = _encode(raw)
    return len(data), compress(data)


class CaptureTables(StoreBase):
    def save_capture(self, capture: RawCapture) -> int:
        """Store one capture; returns its id."""
        with self._write() as db:
            return self._insert_capture(db, capture)

    def _insert_capture(
        self, db: sqlite3.Connection, capture: RawCapture, packed: tuple[int, bytes] | None = None
    ) -> int:
        """Insert one capture; ``packed`` is its (size, zlib blob) when already compressed."""
        is_text = isinstance(capture.raw, str)
        if packed is None:
            data = _encode(capture.raw)
            packed = (len(data), compress(data))
        cur = db.execute(
            "INSERT INTO captures (kind, tool, argv, source, taken_at, parser_version, raw_is_text, raw_size,"
            " raw_zlib, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                capture.kind,
                capture.tool,
                json.dumps(list(capture.argv)),
                capture.source,
                capture.taken_at,
                capture.parser_version,
                int(is_text),
                packed[0],
                packed[1],
                zlib.crc32(packed[1]),
            ),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def load_capture(self, capture_id: int) -> Capture:
        """The capture with its raw output exactly as saved; an unknown or damaged id is a StoreError."""
        with self._read() as db:
            row = db.execute(
                "SELECT id, kind, tool, argv, source, taken_at, parser_version, raw_is_text, raw_size,"
                " CAST(raw_zlib AS BLOB), crc FROM captures WHERE id = ?",
                (capture_id,),
            ).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no capture {capture_id}")
        damage = "checksum mismatch" if row[10] is not None and zlib.crc32(row[9]) != row[10] else None
        try:
            data = decompress(row[9]) if damage is None else b""
        except zlib.error as exc:
            damage = f"does not decompress: {exc}"
        if damage is not None:
            raise StoreDamaged(f"{self.path}: capture {capture_id} is damaged ({damage}); {REPAIR_HINT}")
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
