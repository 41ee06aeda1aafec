"""``ibfab routes`` and ``ibfab routes check``: read the forwarding tables, store them, judge them.

:func:`check_routes_of` judges a fabric's tables (:func:`topology.route_checks.check_routes`) with
what else is known about it, each piece with where it came from:

* the cables link health flags (``warn``, ``critical``: the store's newest assessment, as
  ``ibfab health`` gives it) and the ports ibfab isolated and has not undone (the audit log);
* the lanes, where given (:mod:`fabric.app.routes.lanes`: SL2VL tables and the SM's path records),
  so that credit loops are judged per virtual lane;
* what the SM says it routes with: its log (given, or the lab's own) for the engine that
  configured the switches last and any that failed before it, opensm.conf for the engine it is
  set to run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from fabric.app.discovery.discover import Discovery
from fabric.app.routes.tables import TablesRead
from fabric.app.session import Session, StoreAccess
from probes.driver import FabricDriver
from probes.opensm import parse_opensm_conf, parse_routing_log
from topology.credit_loops_vl import Lanes
from topology.lft import Lfts
from topology.model import LinkKey
from topology.route_checks import RouteReport, check_routes
from topology.route_engine import SmRouting
from topology.textfile import input_lines, read_input_text

FLAGGED = ("warn", "critical")  # health statuses a route over a cable is reported for


@dataclass(frozen=True)
class RoutesCheck:
    discovery: Discovery
    tables: TablesRead
    report: RouteReport
    health: str  # where the health flags came from, or why there are none
    isolations: int
    snapshot_id: int | None = None
    notes: tuple[str, ...] = field(default=())

    def to_dict(self, with_links: bool = True) -> dict[str, Any]:
        out = self.report.to_dict(with_links)
        out["topology"] = self.discovery.source
        out["health"] = self.health
        out["isolations"] = self.isolations
        out["notes"] = list(self.notes)
        if self.snapshot_id is not None:
            out["snapshot_id"] = self.snapshot_id
        return out


def sm_routing(
    driver: FabricDriver, log_path: str | None = None, conf_path: str | None = None
) -> SmRouting | None:
    """What the SM says about its routing: the given log (else the one the driver knows: a
    lab's own OpenSM's) and opensm.conf."""
    if log_path is None:
        log_path = driver.sm_log()
    if log_path is None and conf_path is None:
        return None
    engine = None
    failed: tuple[str, ...] = ()
    if log_path is not None:
        _, engine, failed = parse_routing_log(input_lines(log_path, "opensm log"))
    configured = None
    if conf_path is not None:
        configured = parse_opensm_conf(read_input_text(conf_path, "opensm.conf")).get("routing_engine")
    return SmRouting(engine, failed, configured, log_path or "", conf_path or "")


def health_flags(session: Session, d: Discovery) -> tuple[dict[LinkKey, str], set[LinkKey], str, int]:
    """(flagged cables with their status, isolated cables, where the flags came from, isolations)."""
    if not session.store.exists():
        return {}, set(), f"no store at {session.store.path}: no health assessment, no isolations", 0
    from fabric.app.health.findings import stored_findings

    found = stored_findings(session)
    if found is None:
        where = "no health assessment stored (run 'ibfab counters collect' and 'ibfab health')"
        flagged: dict[LinkKey, str] = {}
    else:
        flagged = {f.key: f.status for f in found if f.status in FLAGGED}
        where = (
            f"the store's newest health assessment: {len(flagged)} cable(s) flagged {' or '.join(FLAGGED)}"
        )
    isolated, count = isolated_cables(session, d)
    return flagged, isolated, where, count


def isolated_cables(session: Session, d: Discovery) -> tuple[set[LinkKey], int]:
    """(the cables of the ports ibfab isolated and has not undone, how many such isolations)."""
    from fabric.app.isolation.isolate import open_isolations

    isolated: set[LinkKey] = set()
    count = 0
    store = session.store.read()
    if store is None:
        return isolated, count
    with store:
        entries = open_isolations(store)
    for e in entries:
        if len(e.ports) != 1:  # an entry that names no port (its typed field, never its text)
            continue
        ref = e.ports[0]
        count += 1
        for port, _, lk in d.fabric.neighbours(ref.guid):
            if port == ref.port:
                isolated.add(lk.key)
    return isolated, count


def check_routes_of(
    session: Session,
    d: Discovery,
    tables: TablesRead,
    *,
    sm_log: str | None = None,
    sm_conf: str | None = None,
    flagged: Mapping[LinkKey, str] | None = None,
    flagged_from: str = "given",
    isolated: tuple[set[LinkKey], int] | None = None,
    ask_sm: bool = True,
    lanes: Lanes | None = None,
) -> RoutesCheck:
    """Judge ``tables`` over the fabric ``d`` with the session's store's health flags and
    isolations and what the SM says. ``flagged`` given: those flags instead of the store's newest
    assessment (``flagged_from`` says where they came from: the TUI's health window);
    ``isolated`` given: those cables (and isolation count) instead of reading the audit log;
    ``ask_sm`` false: what the SM runs is left unknown; ``lanes``: the SL2VL tables and path
    records (:mod:`fabric.app.routes.lanes`), for credit loops per VL."""
    if flagged is None:
        flags, cables, where, count = health_flags(session, d)
    else:
        flags, where = dict(flagged), flagged_from
        cables, count = isolated_cables(session, d) if isolated is None else isolated
    if isolated is not None:
        cables, count = isolated
    sm = sm_routing(session.driver, sm_log, sm_conf) if ask_sm else None
    report = check_routes(
        d.fabric, d.classification, tables.lfts, flagged=flags, isolated=cables, sm=sm, lanes=lanes
    )
    return RoutesCheck(d, tables, replace(report, tables=tables.source), where, count)


def save_routes(
    d: Discovery,
    tables: TablesRead,
    stored: StoreAccess,
    label: str | None = None,
    lanes: Lanes | None = None,
) -> int:
    """Store the tables (and ``lanes``: their SL2VL tables and path records, where given) beside
    the topology they were read with: the stored snapshot itself when ``d`` came from one, else a
    new topology snapshot of ``d`` (same id for both); the id. Lanes given replace those stored
    with the snapshot; other tables without lanes drop them; a snapshot's own tables stored again
    without lanes keep theirs."""
    if lanes is not None:  # refused when too large, before a topology snapshot is stored for them
        from fabric.store.route_lanes import check_lanes_size

        check_lanes_size(lanes, str(stored.path))
    if d.stored is not None:
        sid = d.stored.id
    else:
        from fabric.app.discovery.snapshots import save_discovery

        sid = save_discovery(d, stored, label, from_ibdiagnet=d.source.startswith("ibdiagnet") or False)
    same = tables.snapshot_id == sid  # its own stored tables again: the lanes stored with them stay
    with stored.write() as store:
        store.save_routes(
            sid, tables.lfts, tables.raw_text, source=tables.source, lanes=lanes, keep_lanes=same
        )
    return sid


def tables_summary(d: Discovery, lfts: Lfts) -> dict[str, Any]:
    """What ``ibfab routes`` shows: the dump and, per switch of the topology, its table."""
    import numpy as np

    from topology.lft import NO_ROUTE

    names = {g: c.name for g, c in d.classification.nodes.items()}
    lids = sorted(n.lid for n in d.fabric.nodes.values() if n.lid is not None)
    switches: list[dict[str, Any]] = []
    for n in d.fabric.switches():
        row = lfts.row(n.guid)
        if row is None:
            switches.append(
                {"guid": n.guid, "name": names.get(n.guid, n.guid), "lid": n.lid, "entries": None}
            )
            continue
        ports = lfts.ports[row]
        known = np.array([x for x in lids if x <= lfts.top], np.int64)
        missing = int(np.count_nonzero(ports[known] == NO_ROUTE)) + sum(1 for x in lids if x > lfts.top)
        switches.append(
            {
                "guid": n.guid,
                "name": names.get(n.guid, n.guid),
                "lid": n.lid,
                "entries": int(np.count_nonzero(ports != NO_ROUTE)),
                "lids_without_route": missing,
            }
        )
    return {
        "tables": lfts.source,
        "format": lfts.format,
        "switches_in_tables": len(lfts.switches),
        "switches_in_topology": len(switches),
        "lids_in_topology": len(lids),
        "entries": lfts.entries(),
        "top_lid": lfts.top,
        "notes": list(lfts.notes),
        "switches": switches,
    }
