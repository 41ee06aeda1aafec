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
import logging
import sqlite3
import zlib
from collections import OrderedDict
from collections.abc import Generator, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from fabric.core.fields import COUNTER_NAMES, FRAME_COLUMNS
from fabric.store import blocks
from fabric.store.blocks import KEY_EVERY, PortSet, Values
from fabric.store.captures import CaptureTables, CompressAhead
from fabric.store.core import StoreDamaged
from fabric.store.records import CaptureInfo, CounterSnapshotInfo, PortCounterRow, RawCapture
from topology.errors import StoreError

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger("fabric.store")

_INT64_MAX = (1 << 63) - 1
_SNAPSHOT_INFO = "id, taken_at, source, topology_snapshot_id, ports, state"
# Decoded snapshots kept per store (the base of the next save, the last of the previous piece):
# each is ~9 MB at 50,000 ports.
DECODED_KEPT = 4


class Damaged(Exception):
    """A stored block or port set that fails its checksum or does not decode."""


class BlockCodec:
    """Reads and writes counter blocks on one connection, keeping a few decoded snapshots."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._values: OrderedDict[int, tuple[int, Values]] = OrderedDict()  # sid -> (crc, values)
        self._port_sets: dict[int, PortSet] = {}
        self.damaged: dict[int, str] = {}  # snapshot id -> why it cannot be read
        self._warned: set[int] = set()
        self._root: dict[int, int] = {}  # snapshot id -> the damaged snapshot its chain hangs on

    # -- writing ------------------------------------------------------------------------------
    def append(self, db: sqlite3.Connection, snapshot_id: int, ports: PortSet, values: Values) -> None:
        """Store ``values`` as the block of ``snapshot_id``: against the newest block of the same
        port set when its chain is short and it reads back, else as a key block."""
        port_set_id = self._port_set_id(db, ports)
        prev = db.execute(
            "SELECT snapshot_id, chain FROM counter_blocks WHERE port_set_id = ?"
            " ORDER BY snapshot_id DESC LIMIT 1",
            (port_set_id,),
        ).fetchone()
        base: Values | None = None
        if prev is not None and prev[1] + 1 < KEY_EVERY:
            got = next(iter(self.decode(db, [prev[0]], warn=False)), None)
            base = None if got is None else got[1]  # damaged: start a new chain
        blob = blocks.encode(values, base)
        if base is not None and base.exact_time != values.exact_time:
            base = None
        crc = blocks.checksum(blob)
        db.execute(
            "INSERT INTO counter_blocks (snapshot_id, port_set_id, base_id, chain, data, crc)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                snapshot_id,
                port_set_id,
                None if base is None else prev[0],
                0 if base is None else prev[1] + 1,
                blob,
                crc,
            ),
        )
        self._keep(snapshot_id, crc, values)

    def rekey(self, db: sqlite3.Connection, snapshot_id: int) -> None:
        """Rewrite a block as a key block (before its base is deleted)."""
        got = list(self.decode(db, [snapshot_id], warn=False))
        if not got:
            return
        blob = blocks.encode(got[0][1], None)
        crc = blocks.checksum(blob)
        db.execute(
            "UPDATE counter_blocks SET base_id = NULL, chain = 0, data = ?, crc = ? WHERE snapshot_id = ?",
            (blob, crc, snapshot_id),
        )
        self._keep(snapshot_id, crc, got[0][1])

    def rebase(self, db: sqlite3.Connection, snapshot_id: int, base_id: int) -> None:
        """Store a block as the change against ``base_id`` (an older snapshot of the same ports)
        when that one's chain leaves room; else leave it as it is."""
        rows = dict(
            (r[0], r[1:])
            for r in db.execute(
                "SELECT snapshot_id, port_set_id, chain FROM counter_blocks WHERE snapshot_id IN (?, ?)",
                (snapshot_id, base_id),
            )
        )
        if len(rows) != 2 or rows[snapshot_id][0] != rows[base_id][0] or rows[base_id][1] + 1 >= KEY_EVERY:
            return
        got = {sid: values for sid, values, _ in self.decode(db, [base_id, snapshot_id], warn=False)}
        if len(got) != 2 or got[base_id].exact_time != got[snapshot_id].exact_time:
            return
        blob = blocks.encode(got[snapshot_id], got[base_id])
        crc = blocks.checksum(blob)
        db.execute(
            "UPDATE counter_blocks SET base_id = ?, chain = ?, data = ?, crc = ? WHERE snapshot_id = ?",
            (base_id, rows[base_id][1] + 1, blob, crc, snapshot_id),
        )
        self._keep(snapshot_id, crc, got[snapshot_id])

    def _port_set_id(self, db: sqlite3.Connection, ports: PortSet) -> int:
        blob, digest = ports.encode()
        row = db.execute("SELECT id, crc, data FROM port_sets WHERE digest = ?", (digest,)).fetchone()
        if row is not None:
            if row[1] != blocks.checksum(row[2]):  # damaged since: these ports say what it held
                db.execute(
                    "UPDATE port_sets SET data = ?, crc = ? WHERE id = ?",
                    (blob, blocks.checksum(blob), row[0]),
                )
                self._port_sets[int(row[0])] = ports
            return int(row[0])
        cur = db.execute(
            "INSERT INTO port_sets (digest, ports, data, crc) VALUES (?, ?, ?, ?)",
            (digest, len(ports), blob, blocks.checksum(blob)),
        )
        assert cur.lastrowid is not None
        self._port_sets[cur.lastrowid] = ports
        return cur.lastrowid

    def _keep(self, snapshot_id: int, crc: int, values: Values) -> None:
        self._values[snapshot_id] = (crc, values)
        self._values.move_to_end(snapshot_id)
        while len(self._values) > DECODED_KEPT:
            self._values.popitem(last=False)

    # -- reading ------------------------------------------------------------------------------
    def port_set(self, db: sqlite3.Connection, port_set_id: int) -> PortSet:
        ports = self._port_sets.get(port_set_id)
        if ports is None:
            row = db.execute("SELECT data, crc FROM port_sets WHERE id = ?", (port_set_id,)).fetchone()
            if row is None:
                raise Damaged(f"port set {port_set_id} is missing")
            if blocks.checksum(row[0]) != row[1]:
                raise Damaged(f"port set {port_set_id} fails its checksum")
            try:
                ports = PortSet.decode(row[0])
            except (ValueError, KeyError, TypeError, zlib.error) as exc:
                raise Damaged(f"port set {port_set_id} does not decode ({exc})") from exc
            self._port_sets[port_set_id] = ports
        return ports

    def decode(
        self, db: sqlite3.Connection, snapshot_ids: Iterable[int], *, warn: bool = True
    ) -> Iterator[tuple[int, Values, int]]:
        """(snapshot id, values, port set id) of each readable snapshot of ``snapshot_ids``, by id.

        Each delta block is decoded on top of its base, from the nearest key block or kept
        snapshot; unreadable ones are left out (and, with ``warn``, named in a warning once)."""
        targets = sorted(set(snapshot_ids))
        meta: dict[int, tuple[int | None, int, int]] = {}  # sid -> (base, crc, port set)

        def info(sid: int) -> tuple[int | None, int, int] | None:
            if sid not in meta:
                row = db.execute(
                    "SELECT base_id, crc, port_set_id FROM counter_blocks WHERE snapshot_id = ?", (sid,)
                ).fetchone()
                if row is None:
                    return None
                meta[sid] = (row[0], row[1], row[2])
            return meta[sid]

        def kept(sid: int) -> Values | None:
            got = self._values.get(sid)
            m = info(sid)
            return got[1] if got is not None and m is not None and got[0] == m[1] else None

        need: set[int] = set()
        for target in targets:
            sid: int | None = target
            while sid is not None and sid not in need and kept(sid) is None:
                m = info(sid)
                if m is None:
                    break
                need.add(sid)
                sid = m[0]
        users: dict[int, int] = {}
        for sid in need:
            base = meta[sid][0]
            if base is not None:
                users[base] = users.get(base, 0) + 1
        wanted = set(targets)
        live: dict[int, Values] = {}
        for sid in sorted(need | wanted):
            m = info(sid)
            if m is None:
                continue
            base = m[0]
            if sid in need:
                base_values = None if base is None else (live[base] if base in live else kept(base))
                values = self._decode_one(db, sid, m, base_values, warn)
            else:
                values = kept(sid)
            if values is not None and sid in need:
                live[sid] = values
            if base is not None and base in users:
                users[base] -= 1
                if not users[base]:
                    live.pop(base, None)
            if values is not None and sid in wanted:
                yield sid, values, m[2]
        if live:
            last = max(live)
            self._keep(last, meta[last][1], live[last])

    def _decode_one(
        self,
        db: sqlite3.Connection,
        sid: int,
        m: tuple[int | None, int, int],
        base: Values | None,
        warn: bool,
    ) -> Values | None:
        base_id, crc, port_set_id = m
        if base_id is not None and base is None:
            root = self._root.get(base_id, base_id)
            self._root[sid] = root
            why = f"stored as a change against snapshot {base_id}"
            if root in self.damaged:
                why += (
                    f", which hangs on snapshot {root}: {self.damaged[root]}"
                    if root != base_id
                    else (f", which is {self.damaged[root]}")
                )
            return self._fail(sid, why, warn)
        row = db.execute("SELECT data FROM counter_blocks WHERE snapshot_id = ?", (sid,)).fetchone()
        if blocks.checksum(row[0]) != crc:
            return self._fail(sid, "damaged (checksum mismatch)", warn)
        try:
            values = blocks.decode(row[0], base)
            if values.ports != len(self.port_set(db, port_set_id)):
                raise ValueError("port count differs from its port set")
        except Damaged as exc:
            return self._fail(sid, f"damaged ({exc})", warn)
        except (ValueError, KeyError, TypeError, zlib.error) as exc:
            return self._fail(sid, f"damaged (does not decode: {exc})", warn)
        return values

    def _fail(self, sid: int, why: str, warn: bool) -> Values | None:
        self.damaged[sid] = why
        if warn and sid not in self._warned:
            self._warned.add(sid)
            log.warning("%s: counter snapshot %d skipped: %s", self.where, sid, why)
        return None


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
        with self._read() as db:
            ids = [r[0] for r in db.execute(f"SELECT id FROM counter_snapshots WHERE {where}", args)]
            parts = []
            for sid, values, port_set_id in self._codec.decode(db, ids):
                try:
                    ports = self._codec.port_set(db, port_set_id)
                except Damaged:
                    continue  # decode() already named it
                parts.append((sid, ports, values))
        return _frame(parts, wanted)

    def load_counter_pieces(
        self, pieces: Sequence[Sequence[int]], since: float | None = None, until: float | None = None
    ) -> Generator[pd.DataFrame, None, None]:
        """``load_counters(since, until, snapshots=piece)`` for each piece of snapshot ids in turn.

        The next piece is read in a background thread, on a connection of its own, while the
        caller works on the current one (zlib and numpy decode the blocks mostly without the GIL),
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
                self._codec.damaged.update(reader._codec.damaged)
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
