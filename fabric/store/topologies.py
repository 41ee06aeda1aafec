"""Topology snapshots: `ibfab discover --save`, `ibfab topology diff A B`."""

from __future__ import annotations

import time
import zlib
from collections.abc import Sequence

from fabric.core.warnlog import logger
from fabric.store.captures import REPAIR_HINT, CaptureTables
from fabric.store.core import StoreDamaged, compress, decompress
from fabric.store.records import RawCapture, StoredTopology, TopologySummary
from topology.errors import IbfabError, StoreError
from topology.model import Fabric, NodeKind
from topology.serialize import fabric_from_json, fabric_to_json

_SUMMARY_COLUMNS = "id, capture_id, taken_at, source, label, nodes, switches, hcas, links"
log = logger("fabric.store")


class TopologyTables(CaptureTables):
    def save_topology(
        self,
        fabric: Fabric,
        raw_text: str | bytes,
        tool: str,
        source: str,
        label: str | None = None,
        *,
        taken_at: float | None = None,
        argv: Sequence[str] = (),
        parser_version: str = "",
    ) -> int:
        """Store the tool output and the fabric parsed from it in one transaction; returns the snapshot id."""
        when = time.time() if taken_at is None else taken_at
        switches = sum(1 for n in fabric.nodes.values() if n.kind is NodeKind.SWITCH)
        blob = compress(fabric_to_json(fabric).encode("utf-8"), 6)
        with self._write() as db:
            capture_id = self._insert_capture(
                db, RawCapture("topology", tool, raw_text, when, source, tuple(argv), parser_version)
            )
            cur = db.execute(
                "INSERT INTO topology_snapshots (capture_id, taken_at, source, label, nodes, switches, hcas,"
                " links, fabric_json_zlib, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    capture_id,
                    when,
                    source,
                    label,
                    len(fabric.nodes),
                    switches,
                    len(fabric.nodes) - switches,
                    len(fabric.links),
                    blob,
                    zlib.crc32(blob),
                ),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid

    def resolve_topology(self, ref: int | str) -> int:
        """The snapshot id that ``ref`` names: an id, ``latest``, or a label (the newest with it)."""
        with self._read() as db:
            if isinstance(ref, int) or ref.isdigit():
                row = db.execute("SELECT id FROM topology_snapshots WHERE id = ?", (int(ref),)).fetchone()
            elif ref == "latest":
                row = db.execute("SELECT max(id) FROM topology_snapshots").fetchone()
                row = row if row and row[0] is not None else None
            else:
                row = db.execute(
                    "SELECT id FROM topology_snapshots WHERE label = ? ORDER BY id DESC LIMIT 1", (ref,)
                ).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no topology snapshot {ref!r} (give an id, 'latest' or a label)")
        return int(row[0])

    def load_topology(self, ref: int | str = "latest") -> StoredTopology:
        """The topology snapshot ``ref`` names. A damaged one is a StoreError, except for
        ``latest``: then the newest readable one, with a warning naming those skipped."""
        snapshot_id = self.resolve_topology(ref)
        skipped: list[TopologyDamaged] = []
        while True:
            try:
                stored = self._load_topology(snapshot_id)
            except TopologyDamaged as exc:
                if ref != "latest":
                    raise StoreDamaged(f"{exc}; {REPAIR_HINT}") from None
                skipped.append(exc)
                with self._read() as db:
                    row = db.execute(
                        "SELECT max(id) FROM topology_snapshots WHERE id < ?", (snapshot_id,)
                    ).fetchone()
                if row is None or row[0] is None:
                    raise StoreDamaged(f"{skipped[0]}, and no older one reads; {REPAIR_HINT}") from None
                snapshot_id = int(row[0])
                continue
            for damaged in skipped:
                log.warning("%s; using topology snapshot %d", damaged, snapshot_id)
            return stored

    def _load_topology(self, snapshot_id: int) -> StoredTopology:
        with self._read() as db:
            row = db.execute(
                f"SELECT {_SUMMARY_COLUMNS}, CAST(fabric_json_zlib AS BLOB), crc FROM topology_snapshots WHERE id = ?",
                (snapshot_id,),
            ).fetchone()
        where = f"{self.path}: topology snapshot {snapshot_id}"
        if row is None:  # its id itself read differently a moment ago: a damaged row
            raise TopologyDamaged(where, "its row does not read back")
        summary = TopologySummary(*row[:9])
        if row[10] is not None and zlib.crc32(row[9]) != row[10]:
            raise TopologyDamaged(where, "checksum mismatch")
        try:
            text = decompress(row[9])
        except zlib.error as exc:
            raise TopologyDamaged(where, f"does not decompress: {exc}") from exc
        try:
            fabric = fabric_from_json(text, f"{self.path} topology {snapshot_id}")
        except (IbfabError, ValueError, KeyError, TypeError) as exc:
            raise TopologyDamaged(where, f"does not read back: {exc}") from exc
        return StoredTopology(summary, fabric)

    def list_topologies(self) -> list[TopologySummary]:
        """Every topology snapshot, oldest first."""
        with self._read() as db:
            rows = db.execute(f"SELECT {_SUMMARY_COLUMNS} FROM topology_snapshots ORDER BY id").fetchall()
        return [TopologySummary(*row) for row in rows]


class TopologyDamaged(Exception):
    """A stored topology that fails its checksum or does not read back."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where} is damaged ({reason})")
        self.reason = reason
