"""An ibdiagnet output directory as a source: the Fabric from ``ibdiagnet2.db_csv``, and the
run's port counters (PM_INFO, else ``ibdiagnet2.pm``) stored as a counter snapshot.

Sites keep ibdiagnet's output directory (``ibdiagnet2.db_csv``, ``.cables``, ``.pm``, ...); files
may carry a prefix (``run1-ibdiagnet2.db_csv``). ``DIR`` may also be the db_csv file itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabric.app.discovery.ibdiag_files import IbdiagFiles, ibdiagnet_files
from topology.diff import diff_fabrics
from topology.errors import ParseError, UsageError
from topology.ibdiag_csv import db_csv_sections, parse_db_csv_fabric, read_db_csv, run_time
from topology.ibdiag_state import IbdiagState, parse_db_csv_state
from topology.model import Guid, PortRef
from topology.textfile import read_input_text

if TYPE_CHECKING:
    from fabric.app.session import StoreAccess
    from fabric.store import Store

# Names the parser that read a stored ibdiagnet counter capture (a parser fix can find them).
COUNTERS_PARSER_VERSION = "ibdiagnet-pm/1"


def ibdiagnet_state(path: str | Path) -> tuple[IbdiagState, str]:
    """The switch and SM state of one ibdiagnet run (AR_INFO, SM_INFO, FEC, temperatures) and the
    db_csv file it came from."""
    files = ibdiagnet_files(path)
    return parse_db_csv_state(read_db_csv(files.db_csv), str(files.db_csv)), str(files.db_csv)


# -- the run's counters into the store ------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StoredRun:
    """What :func:`store_ibdiagnet_run` stored (or found already stored)."""

    source: str  # the db_csv path: the snapshots' source
    taken_at: float
    time_from: str  # "run" (RUN_INFO's date) or "file" (the db_csv's modification time)
    counters_from: str  # the file the counters were read from
    counter_snapshot_id: int
    already_stored: bool  # this run was stored before: nothing new was written
    topology_id: int
    topology_saved: bool  # its cabling differs from the newest stored topology (or there was none)
    ports: int
    problems: int  # counter rows that could not be read (kept in the raw capture)
    modules: int = 0  # cable inventory records kept (ibdiagnet2.cables; 0 without one)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "taken_at": self.taken_at,
            "time_from": self.time_from,
            "counters_from": self.counters_from,
            "snapshot_id": self.counter_snapshot_id,
            "already_stored": self.already_stored,
            "topology_id": self.topology_id,
            "topology_saved": self.topology_saved,
            "ports_read": self.ports,
            "problems": self.problems,
            "modules": self.modules,
        }


def _counter_text(files: IbdiagFiles, db_csv_text: str) -> tuple[str, str]:
    """The text the run's counters are read from and its file: PM_INFO of the db_csv (the same
    run as the fabric, by construction), else the ``.pm`` file beside it."""
    if "PM_INFO" in db_csv_sections(db_csv_text, str(files.db_csv), ("PM_INFO",), bad_rows=[]):
        return db_csv_text, str(files.db_csv)
    if files.pm is not None:
        return read_input_text(files.pm, "ibdiagnet pm"), str(files.pm)
    raise UsageError(
        f"{files.db_csv}: the run read no port counters (no PM_INFO section and no ibdiagnet2.pm; "
        "was ibdiagnet run with --skip pm?)"
    )


def store_ibdiagnet_run(store: Store, path: str | Path) -> StoredRun:
    """Store an ibdiagnet run's port counters as one counter snapshot taken at the run's time,
    and keep its cable inventory (:func:`fabric.app.discovery.cables.keep_inventory`).

    Its fabric becomes a topology snapshot only when its cabling differs from the newest stored
    one (else the snapshot refers to that one). No link events are derived: the run may be older
    than what the store holds. A run already stored (same db_csv, same time) is not stored twice.
    """
    from fabric.app.discovery.cables import keep_inventory
    from fabric.counters.merge import sample_row
    from fabric.counters.parse import parse_ibdiagnet_pm
    from fabric.store import RawCapture

    files = ibdiagnet_files(path)
    text = read_db_csv(files.db_csv)
    source = str(files.db_csv)
    fabric = parse_db_csv_fabric(text, source)
    started = run_time(text, source)
    time_from = "run" if started is not None else "file"
    taken_at = started if started is not None else files.db_csv.stat().st_mtime
    counter_text, counters_from = _counter_text(files, text)

    for info in store.list_counter_snapshots(taken_at, taken_at):
        if info.source == source:
            topology_id = info.topology_id if info.topology_id is not None else 0
            return StoredRun(
                source, taken_at, time_from, counters_from, info.id, True, topology_id, False, info.ports, 0
            )
    problems: list[ParseError] = []
    samples = parse_ibdiagnet_pm(counter_text, counters_from, problems=problems)
    latest = store.load_topology("latest") if store.list_topologies() else None
    if latest is not None and diff_fabrics(latest.fabric, fabric).empty:
        topology_id, saved = latest.id, False
    else:
        topology_id = store.save_topology(
            fabric, text, tool="ibdiagnet", source=source, taken_at=taken_at, parser_version="db_csv/1"
        )
        saved = True
    peers: dict[tuple[Guid, int], PortRef] = {}
    for lk in fabric.links:
        peers[(lk.a.guid, lk.a.port)] = lk.b
        peers[(lk.b.guid, lk.b.port)] = lk.a
    rows = [
        sample_row(s, peers.get((s.guid, s.port)), taken_at)
        for s in samples
        if s.guid is not None and not s.summed
    ]
    capture = RawCapture("counters", "ibdiagnet", counter_text, taken_at, source, (), COUNTERS_PARSER_VERSION)
    snapshot_id = store.save_counter_snapshot(taken_at, source, topology_id, rows, [capture])
    modules = len(keep_inventory(store, files.db_csv).cables)
    return StoredRun(
        source,
        taken_at,
        time_from,
        counters_from,
        snapshot_id,
        False,
        topology_id,
        saved,
        len(rows),
        len(problems),
        modules,
    )


def import_ibdiagnet_run(stored: StoreAccess, path: str | Path) -> StoredRun:
    """``ibfab counters collect --ibdiagnet DIR``: :func:`store_ibdiagnet_run` into the store."""
    with stored.write() as store:
        return store_ibdiagnet_run(store, path)
