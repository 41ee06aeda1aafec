"""Counter blocks on one SQLite connection: encode, decode, checksum and chain each snapshot's
block of changes (see :mod:`fabric.store.blocks`), with a few decoded snapshots kept.

Apart from the store classes so that a schema migration can convert old rows with it.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Iterator

from fabric.core.warnlog import logger
from fabric.store import blocks
from fabric.store.blocks import KEY_EVERY, PortSet, Values

log = logger("fabric.store")

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
        row = db.execute(
            "SELECT id, crc, CAST(data AS BLOB) FROM port_sets WHERE digest = ?", (digest,)
        ).fetchone()
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
            row = db.execute(
                "SELECT CAST(data AS BLOB), crc FROM port_sets WHERE id = ?", (port_set_id,)
            ).fetchone()
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
                try:
                    row = db.execute(
                        "SELECT base_id, crc, port_set_id FROM counter_blocks WHERE snapshot_id = ?", (sid,)
                    ).fetchone()
                except sqlite3.DatabaseError as exc:  # on a page that does not read
                    self._fail(sid, f"damaged (does not read: {exc})", warn)
                    return None
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
        try:
            row = db.execute(
                "SELECT CAST(data AS BLOB) FROM counter_blocks WHERE snapshot_id = ?", (sid,)
            ).fetchone()
        except sqlite3.DatabaseError as exc:  # its pages do not read
            return self._fail(sid, f"damaged (does not read: {exc})", warn)
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
