"""Counter snapshots: every port of the fabric read once, stored whole or not at all.

Each snapshot is one columnar block (:mod:`fabric.store.blocks`): mostly the change since the
previous snapshot of the same ports, a key block every ``KEY_EVERY`` snapshots. Values are exact
unsigned 64-bit integers (:meth:`load_port_counters` gives them back as stored). In the pandas
counter table (Int64, as fields.py specifies) a value at or above 2**63 shows as 2**63 - 1: no
port counts that far (2**63 words is 23 years of 400 Gb/s traffic), so it can only be a misread,
and clamping keeps deltas non-negative. Negative input values are refused.

Every block and port set carries a CRC-32; a block that fails it (or does not decode) is skipped
with a warning naming its snapshot, as are the snapshots stored as changes against it, and the
next snapshot saved starts a new key block: a damaged snapshot never stops collections.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from fabric.core.fields import COUNTER_NAMES, FRAME_COLUMNS
from fabric.core.warnlog import logger
from fabric.store import blocks
from fabric.store.blocks import PortSet, Values
from fabric.store.captures import CaptureTables, CompressAhead
from fabric.store.codec import BlockCodec, Damaged
from fabric.store.core import StoreDamaged
from fabric.store.records import CaptureInfo, CounterSnapshotInfo, PortCounterRow, RawCapture
from topology.errors import StoreError

if TYPE_CHECKING:
    import pandas as pd

log = logger("fabric.store")

_INT64_MAX = (1 << 63) - 1
_Piece = TypeVar("_Piece")
_SNAPSHOT_INFO = "id, taken_at, source, topology_snapshot_id, ports, state"


class CounterTables(CaptureTables):
    @property
    def _codec(self) -> BlockCodec:
        codec: BlockCodec | None = getattr(self, "_block_codec", None)
        if codec is None:
            codec = BlockCodec(str(self.path))
            self._block_codec = codec
        return codec

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
        """Store one snapshot (its raw captures, its block, the snapshot row) in ONE transaction.

        A row is a :class:`PortCounterRow` or a tuple in :data:`PORT_COUNTER_FIELDS` order
        (counters in COUNTER_NAMES order, None where not read). Readers never see a part of it: it
        is either complete or absent, even if this process is killed half-way. Large raw captures
        are compressed in a background thread while the rows are packed; ``ahead`` may already
        hold some of them (see :class:`~fabric.store.captures.CompressAhead`).
        """
        captures = list(raw_captures)
        with CompressAhead() as local:
            pack = ahead if ahead is not None else local
            for capture in captures:
                pack.add(capture.raw)
            given = rows if isinstance(rows, list | tuple) else list(rows)
            ports, values = blocks.from_rows(given, str(self.path))
            with self._write() as db:
                cur = db.execute(
                    "INSERT INTO counter_snapshots (taken_at, source, topology_snapshot_id, ports, state)"
                    " VALUES (?, ?, ?, ?, 'writing')",
                    (taken_at, source, topology_id, len(ports)),
                )
                snapshot_id = cur.lastrowid
                assert snapshot_id is not None
                self._codec.append(db, snapshot_id, ports, values)
                for capture in captures:
                    capture_id = self._insert_capture(db, capture, pack.take(capture.raw))
                    db.execute(
                        "INSERT INTO counter_snapshot_captures (snapshot_id, capture_id) VALUES (?, ?)",
                        (snapshot_id, capture_id),
                    )
                db.execute("UPDATE counter_snapshots SET state = 'complete' WHERE id = ?", (snapshot_id,))
        return snapshot_id

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
            got = list(self._codec.decode(db, [snapshot_id]))
            if not got:
                why = self._codec.damaged.get(snapshot_id, "unreadable")
                raise StoreDamaged(f"{self.path}: counter snapshot {snapshot_id} is {why}")
            _, values, port_set_id = got[0]
            return blocks.to_rows(self._codec.port_set(db, port_set_id), values)

    def load_counters(
        self,
        since: float | None = None,
        until: float | None = None,
        guids: Iterable[str] | None = None,
        snapshots: Iterable[int] | None = None,
    ) -> pd.DataFrame:
        """The counter table (fields.py FRAME_COLUMNS, Int64 counters) of complete snapshots taken in
        [since, until], optionally only some node GUIDs or snapshot ids; sorted by snapshot, guid, port.

        A damaged snapshot (and those stored as changes against it) is left out with a warning.
        """
        where, args = _time_filter(since, until)
        if snapshots is not None:
            where += " AND id IN (SELECT value FROM json_each(?))"
            args.append(json.dumps(sorted(set(snapshots))))
        wanted = None if guids is None else set(guids)
        return _frame(self._decoded(where, args), wanted)

    def load_counter_blocks(
        self, snapshots: Iterable[int], since: float | None = None, until: float | None = None
    ) -> list[tuple[int, PortSet, Values]]:
        """The decoded blocks of the complete snapshots ``snapshots`` taken in [since, until], by id:
        (snapshot id, its port set, its values), the columns ``load_counters`` builds its table
        from (values exact, not clamped). Damaged snapshots are left out as there."""
        where, args = _time_filter(since, until)
        where += " AND id IN (SELECT value FROM json_each(?))"
        args.append(json.dumps(sorted(set(snapshots))))
        return self._decoded(where, args)

    def _decoded(self, where: str, args: list[Any]) -> list[tuple[int, PortSet, Values]]:
        with self._read() as db:
            ids = [r[0] for r in db.execute(f"SELECT id FROM counter_snapshots WHERE {where}", args)]
            parts = []
            for sid, values, port_set_id in self._codec.decode(db, ids):
                try:
                    ports = self._codec.port_set(db, port_set_id)
                except Damaged:
                    continue  # decode() already named it
                parts.append((sid, ports, values))
        return parts

    def load_counter_pieces(
        self, pieces: Sequence[Sequence[int]], since: float | None = None, until: float | None = None
    ) -> Generator[pd.DataFrame, None, None]:
        """``load_counters(since, until, snapshots=piece)`` for each piece of snapshot ids in turn.

        The next piece is read in a background thread, on a connection of its own, while the
        caller works on the current one (zlib and numpy decode the blocks mostly without the GIL),
        so at most two pieces are in memory beside the one the caller still holds. Each piece is
        its own read: a snapshot pruned meanwhile is simply absent from the later pieces.
        """
        return self._read_ahead(
            pieces, lambda store, piece: store.load_counters(since, until, snapshots=piece)
        )

    def load_counter_block_pieces(
        self, pieces: Sequence[Sequence[int]], since: float | None = None, until: float | None = None
    ) -> Generator[list[tuple[int, PortSet, Values]], None, None]:
        """``load_counter_blocks(piece, since, until)`` for each piece in turn, read ahead as
        :meth:`load_counter_pieces` does (health's columnar path)."""
        return self._read_ahead(pieces, lambda store, piece: store.load_counter_blocks(piece, since, until))

    def _read_ahead(
        self, pieces: Sequence[Sequence[int]], load: Callable[[CounterTables, Sequence[int]], _Piece]
    ) -> Generator[_Piece, None, None]:
        """``load(store, piece)`` of each piece in turn, the next one read in a background thread
        on a connection of its own."""
        if len(pieces) < 2 or self._db.in_transaction or not self.path.exists():
            for piece in pieces:
                yield load(self, piece)
            return
        from concurrent.futures import Future, ThreadPoolExecutor

        readers: list[CounterTables] = []  # the worker's own connection (sqlite3: one thread each)

        def read(piece: Sequence[int]) -> _Piece:
            if not readers:
                readers.append(type(self).open(self.path, create=False))
            return load(readers[0], piece)

        def close() -> None:
            for reader in readers:
                self._codec.damaged.update(reader._codec.damaged)
                reader.close()

        pool = ThreadPoolExecutor(1, thread_name_prefix="ibfab-counters")
        ahead: Future[_Piece] = pool.submit(read, pieces[0])
        try:
            for piece in pieces[1:]:
                got = ahead.result()
                ahead = pool.submit(read, piece)
                yield got
                del got
            yield ahead.result()
        finally:
            ahead.cancel()
            pool.submit(close).result()
            pool.shutdown(wait=True)

    def prune_counters(self, before: float) -> int:
        """Delete counter snapshots taken before ``before`` (and their raw captures); returns how many.

        A kept snapshot stored as a change against a deleted one is first rewritten whole."""
        with self._write() as db:
            doomed = [
                r[0] for r in db.execute("SELECT id FROM counter_snapshots WHERE taken_at < ?", (before,))
            ]
            self._delete_snapshots(db, doomed)
        return len(doomed)

    def _delete_snapshots(
        self, db: sqlite3.Connection, doomed: Sequence[int], *, keep_captures: bool = False
    ) -> None:
        """Delete these counter snapshots, their blocks and (unless ``keep_captures``) their raw
        captures, in the caller's transaction."""
        if not doomed:
            return
        ids = json.dumps(sorted(set(doomed)))
        for (sid,) in db.execute(
            "SELECT snapshot_id FROM counter_blocks WHERE base_id IN (SELECT value FROM json_each(?))"
            " AND snapshot_id NOT IN (SELECT value FROM json_each(?)) ORDER BY snapshot_id",
            (ids, ids),
        ).fetchall():
            self._codec.rekey(db, sid)
        db.execute("CREATE TEMP TABLE IF NOT EXISTS doomed_captures (id INTEGER PRIMARY KEY)")
        db.execute("DELETE FROM doomed_captures")
        if not keep_captures:
            db.execute(
                "INSERT OR IGNORE INTO doomed_captures SELECT capture_id FROM counter_snapshot_captures"
                " WHERE snapshot_id IN (SELECT value FROM json_each(?))",
                (ids,),
            )
        # a change against a deleted snapshot that could not be rewritten was unreadable already
        db.execute(
            "UPDATE counter_blocks SET base_id = NULL WHERE base_id IN (SELECT value FROM json_each(?))"
            " AND snapshot_id NOT IN (SELECT value FROM json_each(?))",
            (ids, ids),
        )
        # the blocks go with their snapshots (ON DELETE CASCADE), whole chains in one statement
        db.execute("DELETE FROM counter_snapshots WHERE id IN (SELECT value FROM json_each(?))", (ids,))
        db.execute("DELETE FROM port_sets WHERE id NOT IN (SELECT port_set_id FROM counter_blocks)")
        db.execute(
            "DELETE FROM captures WHERE id IN (SELECT id FROM doomed_captures)"
            " AND id NOT IN (SELECT capture_id FROM counter_snapshot_captures)"
            " AND id NOT IN (SELECT capture_id FROM topology_snapshots WHERE capture_id IS NOT NULL)"
            " AND id NOT IN (SELECT capture_id FROM probe_results WHERE capture_id IS NOT NULL)"
        )


def _time_filter(since: float | None, until: float | None, prefix: str = "") -> tuple[str, list[Any]]:
    where, args = [f"{prefix}state = 'complete'"], []
    if since is not None:
        where.append(f"{prefix}taken_at >= ?")
        args.append(since)
    if until is not None:
        where.append(f"{prefix}taken_at <= ?")
        args.append(until)
    return " AND ".join(where), args


# -- the counter table -----------------------------------------------------------------------------
def _frame(parts: Sequence[tuple[int, PortSet, Values]], guids: set[str] | None) -> pd.DataFrame:
    """The counter table of decoded snapshots (in the order given), optionally only some GUIDs.

    Every column is allocated once at its full length and filled snapshot by snapshot."""
    import pandas as pd

    picks: list[Any] = []
    for _, ports, _ in parts:
        if guids is None:
            picks.append(None)
        else:
            index = [i for i, name in enumerate(ports.names) if name in guids]
            picks.append(np.flatnonzero(np.isin(ports.guid, index)))
    sizes = [
        len(ports) if pick is None else len(pick) for (_, ports, _), pick in zip(parts, picks, strict=True)
    ]
    total = sum(sizes)
    nullable = ("lid", "peer_port", *COUNTER_NAMES)
    ints = {name: np.empty(total, dtype=np.int64) for name in ("snapshot", "port", *nullable)}
    na = {name: np.empty(total, dtype=bool) for name in nullable}
    time = np.empty(total, dtype=np.float64)
    reachable = np.empty(total, dtype=bool)
    guid = np.empty(total, dtype=object)
    peer = np.empty(total, dtype=object)
    clamp = np.uint64(_INT64_MAX)
    at = 0
    for (sid, ports, values), pick, size in zip(parts, picks, sizes, strict=True):
        part = slice(at, at + size)
        at += size

        def take(row: Any, pick: Any = pick) -> Any:
            return row if pick is None else row[pick]

        names = ports.name_objects()
        ints["snapshot"][part] = sid
        ints["port"][part] = take(ports.port)
        time[part] = take(values.times())
        guid[part] = names[take(ports.guid)]
        peer[part] = names[take(values.signed("peer"))]
        reachable[part] = take(values.row("reachable")) != 0
        for name in ("lid", "peer_port"):
            ints[name][part] = take(values.signed(name))
        for name in COUNTER_NAMES:
            np.minimum(take(values.row(name)), clamp, out=ints[name][part].view(np.uint64))
        for name in nullable:
            na[name][part] = take(values.na(name))
    out: dict[str, Any] = {
        "snapshot": ints["snapshot"],
        "time": time,
        "guid": pd.Series(guid, dtype=object, copy=False),
        "port": ints["port"],
        "lid": pd.arrays.IntegerArray(ints["lid"], na["lid"]),
        "peer_guid": pd.Series(peer, dtype=object, copy=False),
        "peer_port": pd.arrays.IntegerArray(ints["peer_port"], na["peer_port"]),
        "reachable": reachable,
    }
    for name in COUNTER_NAMES:
        out[name] = pd.arrays.IntegerArray(ints[name], na[name])
    return pd.DataFrame(out, columns=list(FRAME_COLUMNS), copy=False)
