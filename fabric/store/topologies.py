"""Topology snapshots: `ibfab discover --save`, `ibfab topology diff A B`."""

from __future__ import annotations

import time
from collections.abc import Sequence

from fabric.store.captures import CaptureTables
from fabric.store.core import compress, decompress
from fabric.store.records import RawCapture, StoredTopology, TopologySummary
from topology.errors import StoreError
from topology.model import Fabric, NodeKind
from topology.serialize import fabric_from_json, fabric_to_json

_SUMMARY_COLUMNS = "id, capture_id, taken_at, source, label, nodes, switches, hcas, links"


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
                " links, fabric_json_zlib) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        snapshot_id = self.resolve_topology(ref)
        with self._read() as db:
            row = db.execute(
                f"SELECT {_SUMMARY_COLUMNS}, fabric_json_zlib FROM topology_snapshots WHERE id = ?",
                (snapshot_id,),
            ).fetchone()
        summary = TopologySummary(*row[:9])
        fabric = fabric_from_json(decompress(row[9]), f"{self.path} topology {snapshot_id}")
        return StoredTopology(summary, fabric)

    def list_topologies(self) -> list[TopologySummary]:
        """Every topology snapshot, oldest first."""
        with self._read() as db:
            rows = db.execute(f"SELECT {_SUMMARY_COLUMNS} FROM topology_snapshots ORDER BY id").fetchall()
        return [TopologySummary(*row) for row in rows]
