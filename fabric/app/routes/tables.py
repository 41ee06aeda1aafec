"""Where a fabric's forwarding tables come from, for every source ibfab knows.

* ``--tables FILE`` (any dump form, beside any topology source; ``-`` for stdin);
* live: ``dump_fts`` run where the source runs tools (this machine, an SSH management host, a
  lab: the real diag tool against the simulator);
* an ibdiagnet run's ``ibdiagnet2.fdbs`` (``ibdiagnet -r``);
* a stored snapshot: the tables stored with it (``ibfab routes --save``).

The topology's switch port counts go to the parser, so a route out of a port a switch does not
have is refused with its file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fabric.app.discovery.discover import Discovery
from fabric.app.discovery.ibdiag_files import ibdiagnet_files
from fabric.app.session import Session
from fabric.app.source import TEXT_KINDS, SourceKind
from topology.errors import UsageError
from topology.lft import Lfts, parse_lfts, read_lfts
from topology.model import Guid

if TYPE_CHECKING:
    from fabric.store import Store

DUMP_TIMEOUT = 900.0  # dump_fts of 1,280 switches by DR takes minutes on a real fabric


@dataclass(frozen=True)
class TablesRead:
    lfts: Lfts
    raw_text: str | None  # the dump as read, for the store (None: a file too large, a snapshot)
    source: str  # where they came from, in words ("dump_fts on lab demo", a file, ...)
    snapshot_id: int | None = None  # the snapshot they are stored with (their lanes are too)


def stored_tables(store: Store, snapshot_id: int) -> TablesRead | None:
    """The tables stored with topology snapshot ``snapshot_id`` (``ibfab routes --save``); None
    when none are, or they cannot be read."""
    lfts = store.load_routes(snapshot_id)
    return None if lfts is None else TablesRead(lfts, None, f"snapshot {snapshot_id}", snapshot_id)


def port_counts(d: Discovery) -> dict[Guid, int]:
    return {n.guid: n.nports for n in d.fabric.switches()}


def read_tables(session: Session, d: Discovery, *, tables: str | None = None) -> TablesRead:
    """The forwarding tables for the fabric ``d`` read from the session's source: ``tables``
    when given, what an ibdiagnet run or a stored snapshot kept, else ``dump_fts`` run by the
    session's driver."""
    counts = port_counts(d)
    src = session.source
    if tables:
        return TablesRead(read_lfts(tables, port_counts=counts), None, tables)
    if src.kind in TEXT_KINDS:
        raise UsageError(
            "give the forwarding tables with --tables FILE (dump_lfts, dump_fts, opensm-lfts.dump, ...)"
        )
    if src.kind is SourceKind.IBDIAGNET:
        fdbs = ibdiagnet_files(src.target).fdbs
        if fdbs is None:
            raise UsageError(
                f"{src.target}: no ibdiagnet2.fdbs (run ibdiagnet with -r, or give --tables FILE)"
            )
        return TablesRead(read_lfts(fdbs, port_counts=counts), None, str(fdbs))
    if src.kind is SourceKind.SNAPSHOT:
        if d.stored is None:
            raise UsageError(f"{src.label}: no stored snapshot")
        sid = d.stored.id
        stored = session.store.read()
        kept = None
        if stored is not None:
            with stored as store:
                kept = stored_tables(store, sid)
        if kept is None:
            raise UsageError(
                f"topology snapshot {sid} has no forwarding tables stored "
                "(store them with 'ibfab routes --save', or give --tables FILE)"
            )
        return kept
    res = session.driver.run_tool(["dump_fts"], DUMP_TIMEOUT)
    where = f"dump_fts on {src.label}"
    return TablesRead(parse_lfts(res.stdout, where, port_counts=counts), res.stdout, where)
