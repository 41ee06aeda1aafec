"""A store that heals: every blob checked, damaged snapshots set aside in a quarantine.

:meth:`IntegrityTables.check` reads everything once (SQLite's own page check, then every
topology, capture, port set, counter block, stored forwarding table and its lanes against its
CRC-32 and by decoding it) and says
what is damaged; :meth:`IntegrityTables.set_aside` moves those rows into ``quarantine`` (their
blobs kept as they were, never read again) so that nothing warns about them any more. Readers
already skip damaged snapshots on their own; this only makes it final.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from typing import Any

from fabric.store.captures import blob_damage
from fabric.store.codec import BlockCodec, Damaged
from fabric.store.counters import CounterTables
from fabric.store.rebuild import readable_rowids
from fabric.store.records import Damage, QuarantineEntry
from fabric.store.salvage import expected_table_columns, schema_problems
from fabric.store.topologies import TopologyDamaged, TopologyTables
from fabric.store.values import mend_value, mistyped_values, raw_value
from topology.errors import StoreError


class IntegrityTables(TopologyTables, CounterTables):
    def check(self, *, pages: bool = True) -> list[Damage]:
        """Everything damaged in the store, oldest first within each kind (empty: all readable).

        ``pages``: also run SQLite's integrity check over every page (seconds per GB)."""
        found: list[Damage] = []
        if self.header_note is not None and not self.mending:
            found.append(Damage("header", None, None, self.header_note))
        try:
            problems = schema_problems(self._db, self.version)
        except sqlite3.DatabaseError as exc:
            problems = [f"sqlite_master does not read ({exc})"]
        if problems or self.damage_note is not None:
            found.append(Damage("schema", None, None, "; ".join(problems) or str(self.damage_note)))
        if pages:
            found += self.page_damage()
        try:
            found += [
                Damage("value", bad.rowid, None, bad.why, bad.table, bad.column)
                for bad in mistyped_values(self._db, self.version)
            ]
            found += self._check_blobs(gaps=not pages)
        except sqlite3.DatabaseError as exc:  # pages too damaged to read the rows at all
            found.append(Damage("file", None, None, f"cannot read every row: {exc}"))
        except StoreError as exc:  # a table the damaged schema lost
            found.append(Damage("file" if self.damage_note is None else "schema", None, None, exc.one_line()))
        return found

    def page_damage(self) -> list[Damage]:
        """SQLite's own check of every page, one entry per table or index it names."""
        try:
            problems = [str(r[0]) for r in self._db.execute("PRAGMA integrity_check(100)")]
        except (sqlite3.DatabaseError, UnicodeDecodeError):  # too damaged to list them: table by table
            return self._page_damage_by_table()
        if problems == ["ok"]:
            return []
        try:
            roots = {
                int(r[1]): str(r[0])
                for r in self._db.execute("SELECT name, rootpage FROM sqlite_master")
                if isinstance(r[1], int)
            }
        except (sqlite3.DatabaseError, UnicodeDecodeError):
            roots = {}
        by_object: dict[str | None, list[str]] = {}
        for line in problems:
            by_object.setdefault(_named(line, roots), []).append(line)
        return [
            Damage(
                "file",
                None,
                None,
                "; ".join(lines[:3]) + (f" (and {len(lines) - 3} more)" if len(lines) > 3 else ""),
                name,
            )
            for name, lines in by_object.items()
        ]

    def _page_damage_by_table(self) -> list[Damage]:
        """SQLite's page check of each table (with its indexes) on its own: the ones it cannot
        finish are named with its error."""
        found: list[Damage] = []
        for table in expected_table_columns(self.version):
            try:
                problems = [str(r[0]) for r in self._db.execute(f'PRAGMA integrity_check("{table}")')]
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                why = str(exc) if isinstance(exc, sqlite3.Error) else "its pages do not read"
                found.append(Damage("file", None, None, why, table))
                continue
            if problems != ["ok"]:
                found.append(Damage("file", None, None, "; ".join(problems[:3]), table))
        return found or [Damage("file", None, None, "SQLite's page check does not finish")]

    def _check_blobs(self, *, gaps: bool) -> list[Damage]:
        found: list[Damage] = []
        with self._read() as db:
            for sid, taken_at, blob, crc in _each_row(
                db, "topology_snapshots", "id, taken_at, CAST(fabric_json_zlib AS BLOB), crc", found, gaps
            ):
                why = blob_damage(blob, crc)
                if why is None:
                    try:
                        self._load_topology(sid)
                    except TopologyDamaged as exc:
                        why = exc.reason
                if why is not None:
                    found.append(Damage("topology", sid, taken_at, why))
            for cid, taken_at, blob, crc, size in _each_row(
                db, "captures", "id, taken_at, CAST(raw_zlib AS BLOB), crc, raw_size", found, gaps
            ):
                why = blob_damage(blob, crc, size)
                if why is not None:
                    found.append(Damage("capture", cid, taken_at, why))
            for table, kind in (("route_tables", "route tables"), ("route_lanes", "route lanes")):
                for sid, blob, crc in _each_row(
                    db, table, "snapshot_id, CAST(data AS BLOB), crc", found, gaps
                ):
                    why = blob_damage(blob, crc)
                    if why is not None:
                        found.append(Damage(kind, sid, None, why))
            codec = BlockCodec(str(self.path))  # nothing kept from earlier reads
            for (pid,) in _each_row(db, "port_sets", "id", found, gaps):
                try:
                    codec.port_set(db, pid)
                except Damaged as exc:
                    found.append(Damage("port set", pid, None, str(exc)))
            snapshots = dict(_each_row(db, "counter_snapshots", "id, taken_at", found, gaps))
            for _ in codec.decode(db, snapshots, warn=False):
                pass
            blocks = {r[0] for r in _each_row(db, "counter_blocks", "snapshot_id", found, gaps)}
        for sid in snapshots:
            if sid not in blocks:
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
            damage = [*self._mend_values(db, damage, now), *(d for d in damage if d.kind != "value")]
            for d in damage:
                if d.ref is None:
                    continue
                if d.kind == "row" and d.table is not None:
                    moved += self._quarantine_row(db, d.table, None, d, now)
                elif d.kind == "counter snapshot":
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
                elif d.kind in ("route tables", "route lanes"):
                    # lanes are of their tables: tables set aside take theirs along
                    why = d.reason if d.kind == "route lanes" else f"its route tables: {d.reason}"
                    lanes = Damage("route lanes", d.ref, None, why)
                    moved += self._quarantine_row(db, "route_lanes", "data", lanes, now)
                    if d.kind == "route tables":
                        moved += self._quarantine_row(db, "route_tables", "data", d, now)
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

    def _quarantine_row(
        self, db: sqlite3.Connection, table: str, blob: str | None, d: Damage, now: float
    ) -> int:
        """Move one row into the quarantine: its columns that read (as JSON), its blob as stored
        (None when its pages do not read), then delete it."""
        row: dict[str, object] = {"table": table} if blob is None else {}
        found = False
        for col in expected_table_columns(self.version)[table]:
            what = f'CAST("{col.name}" AS BLOB)' if col.type in ("BLOB", "TEXT") else f'"{col.name}"'
            try:
                got = db.execute(f"SELECT {what} FROM {table} WHERE rowid = ?", (d.ref,)).fetchone()
            except sqlite3.DatabaseError:
                continue
            if got is None:
                return 0
            found = True
            value = got[0]
            if col.name != blob:
                row[col.name] = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if not found:
            return 0
        data: object = None
        if blob is not None:
            try:
                data = db.execute(
                    f"SELECT CAST({blob} AS BLOB) FROM {table} WHERE rowid = ?", (d.ref,)
                ).fetchone()[0]
            except sqlite3.DatabaseError:
                data = None
        taken = row.get("taken_at")
        db.execute(
            "INSERT INTO quarantine (time, kind, ref, taken_at, reason, row, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                now,
                d.kind,
                d.ref,
                taken if isinstance(taken, float | int) else None,
                d.reason,
                json.dumps(row),
                data,
            ),
        )
        db.execute(f"DELETE FROM {table} WHERE rowid = ?", (d.ref,))
        return 1

    def _mend_values(self, db: sqlite3.Connection, damage: Sequence[Damage], now: float) -> list[Damage]:
        """Put back the bad values that can be (a blob stored as text); keep the others' bytes in
        the quarantine and clear them, or, in a column that must hold a value, set the whole row
        aside (returned as the damage of its row)."""
        rows: list[Damage] = []
        bad = {(b.table, b.rowid, b.column): b for b in mistyped_values(db, self.version)}
        for d in damage:
            if d.kind != "value" or d.ref is None:
                continue
            b = bad.get((d.table or "", d.ref, d.column or ""))
            if b is None or mend_value(db, b):
                continue
            if not b.not_null:
                db.execute(
                    "INSERT INTO quarantine (time, kind, ref, taken_at, reason, row, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        now,
                        "value",
                        b.rowid,
                        None,
                        b.why,
                        json.dumps({"table": b.table, "column": b.column}),
                        raw_value(db, b),
                    ),
                )
                db.execute(f'UPDATE "{b.table}" SET "{b.column}" = NULL WHERE rowid = ?', (b.rowid,))
                continue
            kind = _KIND_OF_TABLE.get(b.table, "row")
            rows.append(Damage(kind, b.rowid, None, b.why, b.table, b.column))
        return rows

    def list_quarantine(self) -> list[QuarantineEntry]:
        """What was set aside, oldest first (without the blobs)."""
        with self._read() as db:
            rows = db.execute(
                "SELECT id, time, kind, ref, taken_at, reason, length(data) FROM quarantine ORDER BY id"
            ).fetchall()
        return [QuarantineEntry(*r) for r in rows]


def _named(line: str, roots: dict[int, str]) -> str | None:
    """The table or index a line of SQLite's integrity check is about (None: the file's own)."""
    tree = re.search(r"\bTree (\d+)", line)
    if tree is not None:
        return roots.get(int(tree.group(1)), f"tree {tree.group(1)}")
    index = re.search(r"\bindex (\S+)", line)
    return index.group(1) if index is not None else None


def _each_row(
    db: sqlite3.Connection, table: str, columns: str, found: list[Damage], gaps: bool
) -> Iterator[tuple[Any, ...]]:
    """Every row of ``table`` that reads, in rowid order: at once when the table reads whole, else
    row by row around its damaged pages (named in ``found`` when ``gaps``, else left to the page
    check) and its rows that do not read (named as damage of their kind's blob)."""
    try:
        rows = db.execute(f"SELECT {columns} FROM {table} ORDER BY rowid").fetchall()
    except sqlite3.DatabaseError:
        pass
    else:
        yield from rows
        return
    for item in readable_rowids(db, table):
        if isinstance(item, tuple):
            if gaps:
                found.append(Damage("file", None, None, f"rows after {item[0]} do not read", table))
            continue
        try:
            row = db.execute(f"SELECT {columns} FROM {table} WHERE rowid = ?", (item,)).fetchone()
        except sqlite3.DatabaseError as exc:
            kind = _KIND_OF_TABLE.get(table)
            if kind is not None:
                found.append(Damage(kind, item, None, f"does not read ({exc})", table))
            continue
        if row is not None:
            yield row


_KIND_OF_TABLE = {
    "topology_snapshots": "topology",
    "captures": "capture",
    "port_sets": "port set",
    "counter_snapshots": "counter snapshot",
    "counter_blocks": "counter snapshot",
    "route_tables": "route tables",
    "route_lanes": "route lanes",
}
