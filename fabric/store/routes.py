"""Forwarding tables stored beside their topology snapshot (the same id): ``ibfab routes --save``.

The array (switches x LIDs, one byte per entry) is kept zlib'd with a CRC-32, the switches and
what the dump named beside it as JSON, and the dump's text as a capture when it is small enough
to keep (a 16,384-HCA fabric's dump_lfts is 1.8 GB of text for a 23 MB array). The lanes given
with them (SL2VL tables, path records) are kept in ``route_lanes`` in the same transaction
(:mod:`fabric.store.route_lanes`); tables stored again without lanes lose the old ones.
"""

from __future__ import annotations

import json
import time
import zlib
from typing import TYPE_CHECKING, Any

from fabric.store.captures import CaptureTables
from fabric.store.core import StoreDamaged
from fabric.store.records import RawCapture
from fabric.store.route_lanes import decode_lanes, encode_lanes
from topology.errors import StoreError
from topology.model import Guid

if TYPE_CHECKING:
    from topology.credit_loops_vl import Lanes
    from topology.lft import Lfts

RAW_KEEP_BYTES = 64 << 20  # a dump up to this size is kept as text too
PARSER_VERSION = "lft/1"


class RouteTables(CaptureTables):
    def save_routes(
        self,
        snapshot_id: int,
        lfts: Lfts,
        raw_text: str | None = None,
        *,
        source: str = "",
        taken_at: float | None = None,
        lanes: Lanes | None = None,
        keep_lanes: bool = False,
    ) -> None:
        """Store ``lfts`` with topology snapshot ``snapshot_id`` (replacing tables stored with it),
        and ``lanes`` beside them (None: none; lanes stored before with the snapshot go, unless
        ``keep_lanes``: the same tables stored again)."""
        import numpy as np

        when = time.time() if taken_at is None else taken_at
        lane_row = None
        if lanes is not None:  # encoded (and refused when too large) before the write lock
            lane_row = encode_lanes(lanes, f"{self.path}: routes of topology snapshot {snapshot_id}")
        meta = {
            "switches": list(lfts.switches),
            "switch_lids": list(lfts.switch_lids),
            "names": list(lfts.names),
            "destinations": {
                str(lid): [d.kind, d.port_guid, d.description] for lid, d in lfts.destinations.items()
            },
            "notes": list(lfts.notes),
            "source": lfts.source,
        }
        data = zlib.compress(np.ascontiguousarray(lfts.ports, np.uint8).tobytes(), 1)
        with self._write() as db:
            if db.execute("SELECT 1 FROM topology_snapshots WHERE id = ?", (snapshot_id,)).fetchone() is None:
                raise StoreError(f"{self.path}: no topology snapshot {snapshot_id} to store routes with")
            kept = None
            if keep_lanes and lane_row is None:
                kept = db.execute(
                    "SELECT meta, data, crc FROM route_lanes WHERE snapshot_id = ?", (snapshot_id,)
                ).fetchone()
            capture_id = None
            if raw_text is not None and len(raw_text) <= RAW_KEEP_BYTES:
                capture_id = self._insert_capture(
                    db, RawCapture("routes", lfts.format, raw_text, when, source, (), PARSER_VERSION)
                )
            db.execute(
                "INSERT OR REPLACE INTO route_tables (snapshot_id, capture_id, taken_at, source, format,"
                " switches, lids, meta, data, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    snapshot_id,
                    capture_id,
                    when,
                    source or lfts.source,
                    lfts.format,
                    len(lfts.switches),
                    int(lfts.ports.shape[1]),
                    json.dumps(meta),
                    data,
                    zlib.crc32(data),
                ),
            )
            db.execute("DELETE FROM route_lanes WHERE snapshot_id = ?", (snapshot_id,))
            if lane_row is not None:
                kept = (*lane_row, zlib.crc32(lane_row[1]))
            if kept is not None:
                db.execute(
                    "INSERT INTO route_lanes (snapshot_id, meta, data, crc) VALUES (?, ?, ?, ?)",
                    (snapshot_id, *kept),
                )

    def has_routes(self, snapshot_id: int) -> bool:
        with self._read() as db:
            row = db.execute("SELECT 1 FROM route_tables WHERE snapshot_id = ?", (snapshot_id,)).fetchone()
        return row is not None

    def routes_stamp(self, snapshot_id: int) -> tuple[float, int] | None:
        """(when, CRC) of the tables stored with snapshot ``snapshot_id`` and their lanes, None
        when it has none: what a reader compares to know they changed without loading them."""
        with self._read() as db:
            row = db.execute(
                "SELECT t.taken_at, t.crc, l.crc FROM route_tables t"
                " LEFT JOIN route_lanes l ON l.snapshot_id = t.snapshot_id WHERE t.snapshot_id = ?",
                (snapshot_id,),
            ).fetchone()
        if row is None:
            return None
        return float(row[0]), int(row[1]) << 33 | (0 if row[2] is None else 1 << 32 | int(row[2]))

    def load_route_lanes(self, snapshot_id: int) -> Lanes | None:
        """The lanes stored with the tables of snapshot ``snapshot_id``; None when none are."""
        with self._read() as db:
            row = db.execute(
                "SELECT meta, data, crc FROM route_lanes WHERE snapshot_id = ?", (snapshot_id,)
            ).fetchone()
        if row is None:
            return None
        meta, data, crc = row
        where = f"{self.path}: lanes of the routes of topology snapshot {snapshot_id}"
        if zlib.crc32(data) != crc:
            raise StoreDamaged(f"{where} are damaged (checksum mismatch)")
        try:
            return decode_lanes(meta, data, where)
        except (zlib.error, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise StoreDamaged(f"{where} do not read back ({exc})") from exc

    def load_routes(self, snapshot_id: int) -> Lfts | None:
        """The tables stored with snapshot ``snapshot_id``; None when it has none."""
        import numpy as np

        from topology.lft import Destination, Lfts

        with self._read() as db:
            row = db.execute(
                "SELECT format, switches, lids, meta, data, crc, source FROM route_tables WHERE snapshot_id = ?",
                (snapshot_id,),
            ).fetchone()
        if row is None:
            return None
        fmt, switches, lids, meta_text, data, crc, source = row
        where = f"{self.path}: routes of topology snapshot {snapshot_id}"
        if zlib.crc32(data) != crc:
            raise StoreDamaged(f"{where} are damaged (checksum mismatch)")
        try:
            ports = np.frombuffer(zlib.decompress(data), np.uint8).reshape(int(switches), int(lids))
            meta: dict[str, Any] = json.loads(meta_text)
            dests = {
                int(k): Destination(v[0], Guid(v[1]), v[2]) for k, v in meta.get("destinations", {}).items()
            }
            return Lfts(
                str(meta.get("source") or source),
                str(fmt),
                tuple(Guid(g) for g in meta["switches"]),
                ports.copy(),
                tuple(meta.get("switch_lids", ())),
                tuple(meta.get("names", ())),
                (),
                dests,
                tuple(meta.get("notes", ())),
            )
        except (zlib.error, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise StoreDamaged(f"{where} do not read back ({exc})") from exc
