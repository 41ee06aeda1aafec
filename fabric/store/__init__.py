"""The one SQLite store of everything ibfab measures, raw tool output kept beside parsed data.

>>> import tempfile, pathlib
>>> with Store.open(pathlib.Path(tempfile.mkdtemp()) / "ibfab.db") as store:
...     store.audit("alice", "isolate", "0x0002c903006e29b0/5", "ibportstate 12 5 disable", "ok")
1

One module per group of tables; :class:`Store` puts them together. Open one Store per thread
(sqlite3 connections stay in the thread that made them); several processes may share a file.
"""

from __future__ import annotations

from fabric.core.fields import PORT_COUNTER_FIELDS
from fabric.core.paths import default_db_path, store_path
from fabric.store.core import BUSY_TIMEOUT_SECONDS, HeaderDamaged, StoreDamaged
from fabric.store.counters import CounterTables
from fabric.store.history import HistoryTables
from fabric.store.mending import MendingTables
from fabric.store.operations import OperationTables
from fabric.store.probes import ProbeTables
from fabric.store.records import (
    AuditEntry,
    Capture,
    CaptureInfo,
    CompactResult,
    CounterSnapshotInfo,
    Damage,
    FindingRecord,
    FindingSubject,
    HourlyCounters,
    PortCounterRow,
    ProbeResultRow,
    ProbeSweep,
    QuarantineEntry,
    RawCapture,
    Run,
    Schedule,
    StoredSweep,
    StoredTopology,
    TopologySummary,
    link_subject,
)
from fabric.store.retention import Retention, RetentionTables
from fabric.store.routes import RouteTables
from fabric.store.schema import schema_version
from fabric.store.topologies import TopologyTables
from topology.errors import StoreError


class Store(
    RouteTables,
    MendingTables,
    RetentionTables,
    TopologyTables,
    CounterTables,
    HistoryTables,
    ProbeTables,
    OperationTables,
):
    """Open with :meth:`Store.open` (a context manager); every method is one transaction."""


__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "PORT_COUNTER_FIELDS",
    "AuditEntry",
    "Capture",
    "CaptureInfo",
    "CompactResult",
    "CounterSnapshotInfo",
    "Damage",
    "FindingRecord",
    "FindingSubject",
    "HeaderDamaged",
    "HourlyCounters",
    "PortCounterRow",
    "ProbeResultRow",
    "ProbeSweep",
    "QuarantineEntry",
    "RawCapture",
    "Retention",
    "Run",
    "Schedule",
    "Store",
    "StoreDamaged",
    "StoreError",
    "StoredSweep",
    "StoredTopology",
    "TopologySummary",
    "default_db_path",
    "link_subject",
    "schema_version",
    "store_path",
]
