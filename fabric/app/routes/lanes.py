"""Where the lanes of the routes come from: SL2VL tables and the SM's path records.

* ``--sl2vl FILE``: saved ``smpquery sl2vl`` output (concatenated) or OpenSM's
  ``opensm-sl2vl.dump``; ``--path-records FILE``: saved ``saquery -p`` output (one query for all
  paths, or ``--slid``/``--dlid`` queries concatenated);
* ``--lanes``: both read live where the source runs tools (this machine, an SSH management host, a
  lab), through the session's driver: ``smpquery sl2vl <lid> <port>`` for every switch port cabled
  to another switch (the tables a cycle can run through; an HCA's cable is on none), and
  ``saquery -p --slid A --dlid B`` for every host route judged. A query per switch port and per
  host pair: refused beyond :data:`MAX_LIVE_QUERIES` (save ``saquery -p`` once instead).

Stored: ``ibfab routes --save`` keeps the lanes it was given (files or ``--lanes``) beside the
tables (:mod:`fabric.store.route_lanes`); the tables of a snapshot are judged with the lanes
stored with them (:func:`stored_lanes`) unless others are given, and where none were stored the
one-lane check says so.

The SA's own SL2VLTableRecords (``saquery SL2VL``) are not read: OpenSM answers them from what it
set, and without QoS it sets nothing (measured in the lab: every record all VL 0 while the ports
map SL n to VL n), so they are not the ports' tables.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from fabric.app.discovery.discover import Discovery
from fabric.app.routes.tables import TablesRead
from fabric.app.session import Session
from topology.credit_loops_vl import Lanes
from topology.errors import UsageError
from topology.route_walk import traffic_group
from topology.sl2vl import PathSls, Sl2Vl, no_tables, parse_path_records, parse_sl2vl
from topology.sl2vl_fabric import check_tables_fabric
from topology.textfile import decode_input, read_input_bytes, read_input_text

if TYPE_CHECKING:
    from fabric.store import Store

MAX_LIVE_QUERIES = 20_000
QUERY_TIMEOUT = 30.0


def port_counts_by_lid(d: Discovery) -> dict[int, int]:
    return {n.lid: n.nports for n in d.fabric.switches() if n.lid is not None}


def read_lanes(
    session: Session,
    d: Discovery,
    *,
    sl2vl: str | None = None,
    path_records: str | None = None,
    live: bool = False,
    read: TablesRead | None = None,
) -> Lanes | None:
    """The lanes known for the fabric ``d``: the files given, else (``live``) what the tools say,
    else for tables ``read`` from a snapshot the lanes stored with them; None when nothing was
    asked for (the one-lane check, said so)."""
    if not (sl2vl or path_records or live):
        if read is None or read.snapshot_id is None:
            return None
        stored = session.store.read()
        if stored is None:
            return None
        with stored as store:
            return stored_lanes(store, read.snapshot_id)
    tables: Sl2Vl | None = None
    paths: PathSls | None = None
    if sl2vl:
        tables = parse_sl2vl(read_input_text(sl2vl, "SL2VL tables"), sl2vl, port_counts=port_counts_by_lid(d))
        check_tables_fabric(tables, d.fabric)  # a saved file may be another fabric's
    if path_records:
        data = read_input_bytes(path_records, "path records")
        if b"\0" in data or data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # binary, or UTF-16: refused or decoded
            paths = parse_path_records(decode_input(data, path_records, "path records"), path_records)
        else:  # bytes as saquery writes them: its records decoded as columns, a 300 MB file in seconds
            paths = parse_path_records(data, path_records)
    if live:
        if not session.source.runs_tools:
            raise UsageError(
                "--lanes reads the SL2VL tables and path records where tools run (--lab, --ssh, this "
                "machine); for this source give --sl2vl FILE and --path-records FILE"
            )
        if tables is None:
            tables = live_tables(session, d)
        if paths is None:
            paths = live_path_records(session, d)
    return Lanes(tables, paths)


def stored_lanes(store: Store, snapshot_id: int) -> Lanes:
    """The lanes stored with the tables of snapshot ``snapshot_id``, their sources saying so; where
    none were, lanes that say why the check stays in one lane."""
    kept = store.load_route_lanes(snapshot_id)
    if kept is None:
        return Lanes(
            None,
            None,
            f"no SL2VL tables or path records are stored with topology snapshot {snapshot_id} "
            "(store them with 'ibfab routes --save' and --lanes, or --sl2vl and --path-records)",
        )
    stored = f", stored with topology snapshot {snapshot_id}"
    return Lanes(
        None if kept.tables is None else replace(kept.tables, source=kept.tables.source + stored),
        None if kept.paths is None else replace(kept.paths, source=kept.paths.source + stored),
    )


def lanes_summary(lanes: Lanes | None) -> dict[str, object] | None:
    """What ``ibfab routes`` shows of the lanes read (None: none asked for)."""
    if lanes is None:
        return None
    t, p = lanes.tables, lanes.paths
    return {
        "sl2vl": None
        if t is None
        else {"source": t.source, "format": t.format, "rows": t.entries(), "lids": len(set(t.lid.tolist()))},
        "path_records": None if p is None else p.to_dict(),
    }


def _host_lids(d: Discovery) -> list[tuple[int, int]]:
    """(LID, traffic group) of the HCAs whose routes the check judges (the rule is
    :func:`topology.route_walk.traffic_group`'s)."""
    cls = d.classification
    out: list[tuple[int, int]] = []
    for n in d.fabric.hcas():
        group = traffic_group(cls, n.guid)
        if n.lid is not None and group is not None:
            out.append((n.lid, group))
    return out


def live_tables(session: Session, d: Discovery) -> Sl2Vl:
    switches = {n.guid for n in d.fabric.switches()}
    queries: list[list[str]] = []
    for n in d.fabric.switches():
        if n.lid is None:
            continue
        for port, far, _ in d.fabric.neighbours(n.guid):
            if far.guid in switches and port > 0:
                queries.append(["smpquery", "sl2vl", str(n.lid), str(port)])
    _refuse_many(len(queries), "switch ports", "--sl2vl FILE")
    where = f"smpquery sl2vl on {session.source.label}"
    if not queries:  # one switch, or none cabled to another: no cable a route could wait on
        return no_tables(f"{where} (no switch-to-switch cable to query)")
    text = "".join(session.driver.run_tool(q, QUERY_TIMEOUT).stdout for q in queries)
    return parse_sl2vl(text or "", where, port_counts=port_counts_by_lid(d))


def live_path_records(session: Session, d: Discovery) -> PathSls:
    hosts = _host_lids(d)
    pairs = [(a, b) for a, ra in hosts for b, rb in hosts if a != b and ra == rb]
    _refuse_many(len(pairs), "host pairs", "--path-records FILE (saquery -p saved once)")
    text = "".join(
        session.driver.run_tool(["saquery", "-p", "--slid", str(a), "--dlid", str(b)], QUERY_TIMEOUT).stdout
        for a, b in pairs
    )
    return parse_path_records(text, f"saquery -p on {session.source.label}")


def _refuse_many(count: int, what: str, instead: str) -> None:
    if count > MAX_LIVE_QUERIES:
        raise UsageError(
            f"--lanes would query {count} {what} one by one (more than {MAX_LIVE_QUERIES}): give {instead}"
        )
