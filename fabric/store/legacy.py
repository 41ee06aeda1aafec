"""Upgrading a version-1 store: its ``port_counters`` rows become counter blocks.

Run once, by the schema migration to version 2, inside its transaction: either every snapshot
is converted and the rows' table dropped, or (killed, or an error) the store stays as it was.
Values at or above 2**63 were stored two's-complement (negative) and come back as they were read.
"""

from __future__ import annotations

import sqlite3

from fabric.core.fields import COUNTER_NAMES, PORT_COUNTER_FIELDS
from fabric.store import blocks
from fabric.store.codec import BlockCodec

_TWO_64 = 1 << 64
_FIRST_COUNTER = PORT_COUNTER_FIELDS.index(COUNTER_NAMES[0])


def blocks_from_rows(db: sqlite3.Connection) -> None:
    """Convert every snapshot's rows to a block, oldest first (each a change against the one
    before, as new snapshots are), then drop the rows."""
    where = str(db.execute("PRAGMA database_list").fetchone()[2] or "store")
    codec = BlockCodec(where)
    select = f"SELECT {', '.join(PORT_COUNTER_FIELDS)} FROM port_counters WHERE snapshot_id = ?"
    ids = [r[0] for r in db.execute("SELECT id FROM counter_snapshots ORDER BY id").fetchall()]
    for sid in ids:
        rows = [
            (
                *r[:_FIRST_COUNTER],
                *(v + _TWO_64 if type(v) is int and v < 0 else v for v in r[_FIRST_COUNTER:]),
            )
            for r in db.execute(select, (sid,))
        ]
        ports, values = blocks.from_rows(rows, f"{where}: counter snapshot {sid}")
        codec.append(db, sid, ports, values)
        db.execute("UPDATE counter_snapshots SET ports = ? WHERE id = ?", (len(ports), sid))
    db.execute("DROP TABLE port_counters")
