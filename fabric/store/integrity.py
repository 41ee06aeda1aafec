"""A store that heals: every blob checked, damaged snapshots set aside in a quarantine.

:meth:`IntegrityTables.check` reads everything once (SQLite's own page check, then every
topology, capture, port set and counter block against its CRC-32 and by decoding it) and says
what is damaged; :meth:`IntegrityTables.set_aside` moves those rows into ``quarantine`` (their
blobs kept as they were, never read again) so that nothing warns about them any more. Readers
already skip damaged snapshots on their own; this only makes it final.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence

from fabric.store.captures import blob_damage
from fabric.store.codec import BlockCodec, Damaged
from fabric.store.counters import CounterTables
from fabric.store.records import Damage, QuarantineEntry
from fabric.store.topologies import TopologyDamaged, TopologyTables


class IntegrityTables(TopologyTables, CounterTables):
    def check(self, *, pages: bool = True) -> list[Damage]:
        """Everything damaged in the store, oldest first within each kind (empty: all readable).

        ``pages``: also run SQLite's integrity check over every page (seconds per GB)."""
        found: list[Damage] = []
        if pages:
            try:
                problems = [str(r[0]) for r in self._db.execute("PRAGMA integrity_check(20)")]
            except sqlite3.DatabaseError as exc:  # too damaged for SQLite to list the problems
                problems = [str(exc)]
            if problems != ["ok"]:
                found.append(Damage("file", None, None, "; ".join(problems)))
        try:
            found += self._check_blobs()
        except sqlite3.DatabaseError as exc:  # pages too damaged to read the rows at all
            found.append(Damage("file", None, None, f"cannot read every row: {exc}"))
        return found

    def _check_blobs(self) -> list[Damage]:
        found: list[Damage] = []
        with self._read() as db:
            for sid, taken_at, blob, crc in db.execute(
                "SELECT id, taken_at, fabric_json_zlib, crc FROM topology_snapshots ORDER BY id"
            ).fetchall():
                why = blob_damage(blob, crc)
                if why is None:
                    try:
                        self._load_topology(sid)
                    except TopologyDamaged as exc:
                        why = exc.reason
                if why is not None:
                    found.append(Damage("topology", sid, taken_at, why))
            for cid, taken_at, blob, crc, size in db.execute(
                "SELECT id, taken_at, raw_zlib, crc, raw_size FROM captures ORDER BY id"
            ).fetchall():
                why = blob_damage(blob, crc, size)
                if why is not None:
                    found.append(Damage("capture", cid, taken_at, why))
            codec = BlockCodec(str(self.path))  # nothing kept from earlier reads
            for pid in [r[0] for r in db.execute("SELECT id FROM port_sets ORDER BY id")]:
                try:
                    codec.port_set(db, pid)
                except Damaged as exc:
                    found.append(Damage("port set", pid, None, str(exc)))
            snapshots = dict(db.execute("SELECT id, taken_at FROM counter_snapshots ORDER BY id").fetchall())
            for _ in codec.decode(db, snapshots, warn=False):
                pass
            missing = db.execute(
                "SELECT id FROM counter_snapshots WHERE id NOT IN (SELECT snapshot_id FROM counter_blocks)"
            ).fetchall()
        for (sid,) in missing:
            codec.damaged.setdefault(sid, "its block is missing")
        for sid in sorted(codec.damaged):
            found.append(Damage("counter snapshot", sid, snapshots.get(sid), codec.damaged[sid]))
        return found

    def set_aside(self, damage: Sequence[Damage]) -> int:
        """Move the damaged rows into the quarantine, in one transaction; returns how many moved.

        A counter snapshot goes with its block (its raw captures stay, named in its row); a topology
        leaves the counter snapshots that named it without one; a capture leaves what named it
        without its raw text. Damage of the file itself is not something a row move can mend."""
        now = time.time()
        moved = 0
        with self._write() as db:
            doomed: list[int] = []
            for d in damage:
                if d.ref is None:
                    continue
                if d.kind == "counter snapshot":
                    moved += self._quarantine_snapshot(db, d, now)
                    doomed.append(d.ref)
                elif d.kind == "port set":
                    moved += self._quarantine_row(db, "port_sets", "data", d, now)
                elif d.kind == "topology":
                    db.execute(
                        "UPDATE counter_snapshots SET topology_snapshot_id = NULL WHERE topology_snapshot_id = ?",
                        (d.ref,),
                    )
                    moved += self._quarantine_row(db, "topology_snapshots", "fabric_json_zlib", d, now)
                elif d.kind == "capture":
                    db.execute("DELETE FROM counter_snapshot_captures WHERE capture_id = ?", (d.ref,))
                    db.execute(
                        "UPDATE topology_snapshots SET capture_id = NULL WHERE capture_id = ?", (d.ref,)
                    )
                    db.execute("UPDATE probe_results SET capture_id = NULL WHERE capture_id = ?", (d.ref,))
                    moved += self._quarantine_row(db, "captures", "raw_zlib", d, now)
            self._delete_snapshots(db, doomed, keep_captures=True)
            gone = [d.ref for d in damage if d.kind == "port set" and d.ref is not None]
            db.execute(
                "DELETE FROM port_sets WHERE id IN (SELECT value FROM json_each(?))"
                " AND id NOT IN (SELECT port_set_id FROM counter_blocks)",
                (json.dumps(gone),),
            )
        self._block_codec = BlockCodec(str(self.path))  # forget what was decoded before
        return moved

    def _quarantine_snapshot(self, db: sqlite3.Connection, d: Damage, now: float) -> int:
        head = db.execute(
            "SELECT taken_at, source, topology_snapshot_id, ports FROM counter_snapshots WHERE id = ?",
            (d.ref,),
        ).fetchone()
        if head is None:
            return 0
        block = db.execute(
            "SELECT port_set_id, base_id, chain, data, crc FROM counter_blocks WHERE snapshot_id = ?",
            (d.ref,),
        ).fetchone()
        captures = [
            r[0]
            for r in db.execute(
                "SELECT capture_id FROM counter_snapshot_captures WHERE snapshot_id = ? ORDER BY capture_id",
                (d.ref,),
            )
        ]
        row = {
            "taken_at": head[0],
            "source": head[1],
            "topology_snapshot_id": head[2],
            "ports": head[3],
            "captures": captures,
        }
        if block is not None:
            row |= {"port_set_id": block[0], "base_id": block[1], "chain": block[2], "crc": block[4]}
        db.execute(
            "INSERT INTO quarantine (time, kind, ref, taken_at, reason, row, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (now, d.kind, d.ref, head[0], d.reason, json.dumps(row), None if block is None else block[3]),
        )
        return 1

    def _quarantine_row(self, db: sqlite3.Connection, table: str, blob: str, d: Damage, now: float) -> int:
        cur = db.execute(f"SELECT * FROM {table} WHERE id = ?", (d.ref,))
        values = cur.fetchone()
        if values is None:
            return 0
        names = [c[0] for c in cur.description]
        row = {n: v for n, v in zip(names, values, strict=True) if n != blob and not isinstance(v, bytes)}
        data = values[names.index(blob)]
        db.execute(
            "INSERT INTO quarantine (time, kind, ref, taken_at, reason, row, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (now, d.kind, d.ref, row.get("taken_at"), d.reason, json.dumps(row), data),
        )
        db.execute(f"DELETE FROM {table} WHERE id = ?", (d.ref,))
        return 1

    def list_quarantine(self) -> list[QuarantineEntry]:
        """What was set aside, oldest first (without the blobs)."""
        with self._read() as db:
            rows = db.execute(
                "SELECT id, time, kind, ref, taken_at, reason, length(data) FROM quarantine ORDER BY id"
            ).fetchall()
        return [QuarantineEntry(*r) for r in rows]
