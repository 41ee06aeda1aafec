"""The store's tables, its schema version and the migration steps between versions.

A new store is built the same way an old one is upgraded: the version-1 tables, then every step
in :data:`MIGRATIONS`, all in one transaction. To change the schema, append a step (never edit
one that has shipped) and bump nothing else: :data:`SCHEMA_VERSION` follows the list.

Version 1 kept one ``port_counters`` row per port and snapshot (values at or above 2**63 stored
two's-complement, as SQLite INTEGER is signed); version 2 converts them to the columnar blocks of
``fabric.store.blocks`` (see ``fabric.store.legacy``) and drops that table.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from fabric.core.fields import COUNTER_NAMES

# PRAGMA application_id marks the file as an ibfab store ("IBFB").
APPLICATION_ID = 0x49424642

_COUNTER_COLUMNS = ",\n    ".join(f"{name} INTEGER" for name in COUNTER_NAMES)

BASE_SCHEMA: tuple[str, ...] = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE captures (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    tool TEXT NOT NULL,
    argv TEXT NOT NULL,               -- JSON list
    source TEXT NOT NULL,             -- host or file the output came from
    taken_at REAL NOT NULL,           -- seconds since the epoch
    parser_version TEXT NOT NULL,
    raw_is_text INTEGER NOT NULL,     -- 1: raw was a str (UTF-8), 0: bytes
    raw_size INTEGER NOT NULL,        -- bytes before compression
    raw_zlib BLOB NOT NULL
)""",
    "CREATE INDEX captures_by_tool ON captures (tool, parser_version)",
    """CREATE TABLE topology_snapshots (
    id INTEGER PRIMARY KEY,
    capture_id INTEGER REFERENCES captures (id),
    taken_at REAL NOT NULL,
    source TEXT NOT NULL,
    label TEXT,
    nodes INTEGER NOT NULL,
    switches INTEGER NOT NULL,
    hcas INTEGER NOT NULL,
    links INTEGER NOT NULL,
    fabric_json_zlib BLOB NOT NULL
)""",
    "CREATE INDEX topology_by_label ON topology_snapshots (label)",
    """CREATE TABLE counter_snapshots (
    id INTEGER PRIMARY KEY,
    taken_at REAL NOT NULL,
    source TEXT NOT NULL,
    topology_snapshot_id INTEGER REFERENCES topology_snapshots (id),
    ports INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('writing', 'complete'))
)""",
    "CREATE INDEX counter_snapshots_by_time ON counter_snapshots (taken_at)",
    """CREATE TABLE counter_snapshot_captures (
    snapshot_id INTEGER NOT NULL REFERENCES counter_snapshots (id) ON DELETE CASCADE,
    capture_id INTEGER NOT NULL REFERENCES captures (id),
    PRIMARY KEY (snapshot_id, capture_id)
)""",
    f"""CREATE TABLE port_counters (
    snapshot_id INTEGER NOT NULL REFERENCES counter_snapshots (id) ON DELETE CASCADE,
    guid TEXT NOT NULL,
    port INTEGER NOT NULL,
    lid INTEGER,
    peer_guid TEXT,
    peer_port INTEGER,
    reachable INTEGER NOT NULL,
    unreachable_reason TEXT,
    time REAL NOT NULL,
    {_COUNTER_COLUMNS},
    PRIMARY KEY (snapshot_id, guid, port)
)""",
    """CREATE TABLE link_events (
    id INTEGER PRIMARY KEY,
    time REAL NOT NULL,
    a_guid TEXT NOT NULL,
    a_port INTEGER NOT NULL,
    b_guid TEXT NOT NULL,
    b_port INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('down', 'up')),
    source TEXT NOT NULL
)""",
    "CREATE INDEX link_events_by_time ON link_events (time)",
    """CREATE TABLE probe_sweeps (
    id INTEGER PRIMARY KEY,
    started REAL NOT NULL,
    finished REAL,
    pattern TEXT NOT NULL,
    source TEXT NOT NULL
)""",
    """CREATE TABLE probe_results (
    id INTEGER PRIMARY KEY,
    sweep_id INTEGER NOT NULL REFERENCES probe_sweeps (id) ON DELETE CASCADE,
    client_host TEXT NOT NULL,
    client_device TEXT NOT NULL,
    server_host TEXT NOT NULL,
    server_device TEXT NOT NULL,
    gbps REAL,
    line_rate_gbps REAL,
    ok INTEGER NOT NULL,
    error TEXT,
    capture_id INTEGER REFERENCES captures (id)
)""",
    "CREATE INDEX probe_results_by_sweep ON probe_results (sweep_id)",
    """CREATE TABLE findings_history (
    day TEXT NOT NULL,                -- YYYY-MM-DD
    subject TEXT NOT NULL,            -- link (a_guid/a_port-b_guid/b_port) or node GUID
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    PRIMARY KEY (day, subject, kind)
)""",
    """CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY,
    time REAL NOT NULL,
    user TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    command TEXT NOT NULL,
    result TEXT NOT NULL,
    undo_of INTEGER REFERENCES audit_log (id)
)""",
    """CREATE TABLE schedules (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('counters', 'sweep')),
    interval_seconds INTEGER CHECK (interval_seconds > 0),
    cron TEXT,
    args TEXT NOT NULL,               -- JSON object
    enabled INTEGER NOT NULL,
    last_run REAL,
    next_run REAL,
    CHECK ((interval_seconds IS NULL) <> (cron IS NULL))
)""",
    """CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    schedule_id INTEGER REFERENCES schedules (id) ON DELETE SET NULL,
    started REAL NOT NULL,
    finished REAL,
    ok INTEGER,
    error TEXT
)""",
    "CREATE INDEX runs_by_schedule ON runs (schedule_id, started)",
)


@dataclass(frozen=True, slots=True)
class Migration:
    """SQL statements that take a store from ``to_version - 1`` to ``to_version``, then ``run``
    (Python, on the same connection, in the same transaction) for what SQL cannot do."""

    to_version: int
    statements: tuple[str, ...]
    run: Callable[[sqlite3.Connection], None] | None = None


def _blocks_from_rows(db: sqlite3.Connection) -> None:
    from fabric.store.legacy import blocks_from_rows

    blocks_from_rows(db)


def _checksum_blobs(db: sqlite3.Connection) -> None:
    """CRC-32 of every topology and capture blob already stored (a blob damaged before this
    upgrade still fails to decompress, and is found by ``ibfab store check`` all the same)."""
    import zlib

    for table, column in (("topology_snapshots", "fabric_json_zlib"), ("captures", "raw_zlib")):
        rows = db.execute(f"SELECT id, {column} FROM {table}").fetchall()
        db.executemany(f"UPDATE {table} SET crc = ? WHERE id = ?", [(zlib.crc32(b), i) for i, b in rows])


def _typed_records(db: sqlite3.Connection) -> None:
    from fabric.store.legacy import typed_records

    typed_records(db)


# Append steps here; version 1 is BASE_SCHEMA.
MIGRATIONS: tuple[Migration, ...] = (
    # 2: counter snapshots as columnar blocks (fabric.store.blocks), 1/7 of the rows' size; the
    # rows of older snapshots are converted, then their table goes.
    Migration(
        2,
        (
            """CREATE TABLE port_sets (
    id INTEGER PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,      -- sha256 of the uncompressed JSON
    ports INTEGER NOT NULL,
    data BLOB NOT NULL,               -- zlib'd JSON: names, guid (index into names), port
    crc INTEGER NOT NULL              -- CRC-32 of data
)""",
            """CREATE TABLE counter_blocks (
    snapshot_id INTEGER PRIMARY KEY REFERENCES counter_snapshots (id) ON DELETE CASCADE,
    port_set_id INTEGER NOT NULL REFERENCES port_sets (id),
    base_id INTEGER REFERENCES counter_blocks (snapshot_id),  -- NULL: a key block
    chain INTEGER NOT NULL,           -- blocks since the last key block (0: this is one)
    data BLOB NOT NULL,               -- fabric.store.blocks.encode
    crc INTEGER NOT NULL              -- CRC-32 of data
)""",
            "CREATE INDEX counter_blocks_by_port_set ON counter_blocks (port_set_id, snapshot_id)",
            "CREATE INDEX counter_blocks_by_base ON counter_blocks (base_id)",
        ),
        _blocks_from_rows,
    ),
    # 3: a store that heals: a CRC-32 on every blob, checked on read, and a quarantine where
    # `ibfab store repair` sets damaged snapshots aside (kept, never read again).
    Migration(
        3,
        (
            "ALTER TABLE topology_snapshots ADD COLUMN crc INTEGER",  # NULL: not checked
            "ALTER TABLE captures ADD COLUMN crc INTEGER",
            """CREATE TABLE quarantine (
    id INTEGER PRIMARY KEY,
    time REAL NOT NULL,               -- when it was set aside
    kind TEXT NOT NULL,               -- 'counter snapshot', 'port set', 'topology', 'capture'
    ref INTEGER NOT NULL,             -- its id where it was
    taken_at REAL,
    reason TEXT NOT NULL,
    row TEXT NOT NULL,                -- its other columns, JSON
    data BLOB                         -- its stored blob as it was
)""",
        ),
        _checksum_blobs,
    ),
    # 4: retention: raw snapshots older than a week become hourly points (the hour's last
    # snapshot) with what a point cannot tell kept beside it (fabric.store.retention).
    Migration(
        4,
        (
            """CREATE TABLE hourly_counters (
    snapshot_id INTEGER PRIMARY KEY REFERENCES counter_snapshots (id) ON DELETE CASCADE,
    hour REAL NOT NULL,               -- start of the hour (epoch seconds)
    samples INTEGER NOT NULL,         -- snapshots the hour had
    first_taken REAL NOT NULL,
    port_set_id INTEGER NOT NULL REFERENCES port_sets (id),
    data BLOB NOT NULL,               -- fabric.store.blocks.pack_rows of retention.AGGREGATE_ROWS
    crc INTEGER NOT NULL
)""",
            "CREATE INDEX hourly_counters_by_hour ON hourly_counters (hour)",
        ),
    ),
    # 5: forwarding tables stored beside the topology snapshot they were read with (same id).
    Migration(
        5,
        (
            """CREATE TABLE route_tables (
    snapshot_id INTEGER PRIMARY KEY REFERENCES topology_snapshots (id) ON DELETE CASCADE,
    capture_id INTEGER REFERENCES captures (id),  -- the dump as read (NULL: too large to keep)
    taken_at REAL NOT NULL,
    source TEXT NOT NULL,
    format TEXT NOT NULL,             -- topology.lft's name of the dump form
    switches INTEGER NOT NULL,
    lids INTEGER NOT NULL,            -- columns: LIDs 0 up to the largest listed
    meta TEXT NOT NULL,               -- JSON: switches, their LIDs and names, destinations, notes
    data BLOB NOT NULL,               -- zlib'd uint8 array switches x lids (fabric.store.routes)
    crc INTEGER NOT NULL              -- CRC-32 of data
)""",
        ),
    ),
    # 6: which process a run belongs to (PID and fabric.core.processes.process_identity), so a
    # run whose process died without recording its end (SIGKILL, power cut) can be closed.
    Migration(
        6,
        (
            "ALTER TABLE runs ADD COLUMN pid INTEGER",
            "ALTER TABLE runs ADD COLUMN process TEXT",
        ),
    ),
    # 7: typed records beside the text: an audit entry's command line, its switch ports or Slurm
    # nodes and where it ran; a finding's link ends or node. Older rows get them from their text,
    # once, here (fabric.store.legacy); nothing reads the text back after.
    Migration(
        7,
        (
            "ALTER TABLE audit_log ADD COLUMN argv TEXT NOT NULL DEFAULT '[]'",  # JSON list
            "ALTER TABLE audit_log ADD COLUMN ports TEXT NOT NULL DEFAULT '[]'",  # JSON [[guid, port]]
            "ALTER TABLE audit_log ADD COLUMN nodes TEXT NOT NULL DEFAULT '[]'",  # Slurm nodes, JSON
            "ALTER TABLE audit_log ADD COLUMN hosts TEXT NOT NULL DEFAULT '[]'",  # their fabric hosts
            "ALTER TABLE audit_log ADD COLUMN source_kind TEXT NOT NULL DEFAULT ''",  # '': not recorded
            "ALTER TABLE audit_log ADD COLUMN source_target TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE findings_history ADD COLUMN a_guid TEXT",  # a link's ends (NULL: a node)
            "ALTER TABLE findings_history ADD COLUMN a_port INTEGER",
            "ALTER TABLE findings_history ADD COLUMN b_guid TEXT",
            "ALTER TABLE findings_history ADD COLUMN b_port INTEGER",
            "ALTER TABLE findings_history ADD COLUMN node TEXT",  # a node's GUID (NULL: a link)
        ),
        _typed_records,
    ),
    # 8: the lanes of stored forwarding tables (SL2VL tables, the SM's path records), so that a
    # snapshot's credit loops are judged per VL as the live check was (fabric.store.route_lanes).
    Migration(
        8,
        (
            """CREATE TABLE route_lanes (
    snapshot_id INTEGER PRIMARY KEY REFERENCES route_tables (snapshot_id) ON DELETE CASCADE,
    meta TEXT NOT NULL,               -- JSON: where the tables and path records came from, rows
    data BLOB NOT NULL,               -- zlib'd arrays (fabric.store.route_lanes.encode_lanes)
    crc INTEGER NOT NULL              -- CRC-32 of data
)""",
        ),
    ),
)


# The tables a store of the current version has (checked at every open).
TABLES: tuple[str, ...] = (
    "meta",
    "captures",
    "topology_snapshots",
    "counter_snapshots",
    "counter_snapshot_captures",
    "port_sets",
    "counter_blocks",
    "link_events",
    "probe_sweeps",
    "probe_results",
    "findings_history",
    "audit_log",
    "schedules",
    "runs",
    "quarantine",
    "hourly_counters",
    "route_tables",
    "route_lanes",
)


def schema_version() -> int:
    """The version this code writes: 1 plus one per migration step."""
    return 1 + len(MIGRATIONS)
