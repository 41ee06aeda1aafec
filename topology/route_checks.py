"""Judge a fabric's forwarding tables: one report of every finding with its evidence. Pure.

:func:`check_routes` binds the tables to the fabric, walks every route once
(:mod:`topology.route_walk`) and reads from that walk:

* destinations some routes never deliver: no entry, a port without a cable (black holes), another
  node taking the LID (wrong destination), forwarding loops: an error where a host's traffic to
  an HCA is lost, a warning where the route from a host's switch to a switch LID is (management
  traffic), one info line for entries that go nowhere on no host's route (updn leaves none
  between its roots: that is by design);
* routes the hosts' traffic uses that are longer than the cabling's shortest, or turn down then up
  against the tiers discovery found (warnings);
* credit loops (:mod:`topology.credit_loops`; per VL, :mod:`topology.credit_loops_vl`, where the
  SL2VL tables and the routes' SLs are given), balance (:mod:`topology.route_balance`), the
  engine's look and what the SM says (:mod:`topology.route_engine`);
* routes over cables that link health flags or that were isolated (given by the caller);
* switches without a table (their routes are unknown, never taken for black holes), switches in
  the tables the topology lacks, LIDs the tables name as other nodes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topology.anomaly import Severity
from topology.classify import Classification
from topology.credit_loops import CreditLoops, credit_loop_finding, credit_loops
from topology.credit_loops_vl import Lanes, lane_credit_loops
from topology.lft import Lfts
from topology.model import Fabric, Guid, LinkKey
from topology.route_balance import Balance, balance
from topology.route_engine import EngineLook, SmRouting, engine_findings, engine_look
from topology.route_findings import (
    CROSSES_FLAGGED,
    CROSSES_ISOLATED,
    DOWN_UP,
    FORWARDING_LOOP,
    LID_MISMATCH,
    LONGER_THAN_MINIMAL,
    NO_ROUTE,
    NO_TABLE,
    UNKNOWN_SWITCH,
    UNUSED_BROKEN,
    WRONG_DESTINATION,
    RouteFinding,
    route_hops,
    source_of,
)
from topology.route_walk import (
    DEAD_PORT,
    LOOP,
    NO_ENTRY,
    WRONG_NODE,
    Bound,
    Walk,
    bind,
    compute_traffic,
    walk,
)

_RANK = {Severity.CRITICAL: 0, Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 3}
MAX_LIDS_LISTED = 64  # a finding lists at most this many LIDs (its count says how many in all)


@dataclass(frozen=True)
class RouteReport:
    tables: str  # where the tables came from
    format: str
    summary: Mapping[str, Any]
    findings: tuple[RouteFinding, ...]
    balance: Balance
    credit: CreditLoops
    engine: EngineLook
    walk: Walk = field(repr=False, compare=False)

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity in (Severity.ERROR, Severity.CRITICAL))

    def to_dict(self, with_links: bool = True) -> dict[str, Any]:
        return {
            "tables": self.tables,
            "format": self.format,
            "summary": dict(self.summary),
            "findings": [f.to_dict() for f in self.findings],
            "credit_loops": self.credit.to_dict(),
            "balance": self.balance.to_dict(with_links),
            "engine": self.engine.to_dict(),
        }


def tiers_of(bound: Bound, cls: Classification) -> np.ndarray[Any, Any]:
    return np.array(
        [
            t if (t := (cls.nodes[g].tier if g in cls.nodes else None)) is not None else -1
            for g in bound.switches
        ],
        np.int16,
    ).reshape(-1)


def check_routes(
    fabric: Fabric,
    cls: Classification,
    lfts: Lfts,
    *,
    flagged: Mapping[LinkKey, str] | None = None,
    isolated: Collection[LinkKey] = (),
    sm: SmRouting | None = None,
    lanes: Lanes | None = None,
) -> RouteReport:
    """Every check on ``lfts`` over ``fabric`` (``flagged``: cables health flags, with their
    status; ``isolated``: cables isolated by ibfab; ``sm``: what the SM says it runs;
    ``lanes``: the SL2VL tables and path records, for credit loops per VL)."""
    bound = bind(fabric, lfts)
    traffic = compute_traffic(bound, cls)
    tiers = tiers_of(bound, cls)
    w = walk(bound, traffic, tiers)
    findings: list[RouteFinding] = []
    findings += _table_coverage(bound)
    findings += _failures(w)
    findings += _loops(w)
    findings += _longer(w)
    findings += _down_up(w)
    credit = credit_loops(w) if lanes is None else lane_credit_loops(w, lanes)
    cl = credit_loop_finding(credit, sm.engine if sm is not None else None)
    if cl is not None:
        findings.append(cl)
    bal = balance(w, cls)
    findings += bal.findings
    findings += _crossing(w, flagged or {}, isolated)
    look = engine_look(w, bool((tiers >= 1).any()), sm)
    findings += engine_findings(look)
    findings.sort(key=lambda f: (_RANK[f.severity], f.kind, f.lid or 0, f.switch or ""))
    return RouteReport(lfts.source, lfts.format, _summary(w, lfts), tuple(findings), bal, credit, look, w)


def _summary(w: Walk, lfts: Lfts) -> dict[str, Any]:
    b = w.bound
    hca = b.dest_hca >= 0
    return {
        "switches": b.nswitches,
        "switches_with_tables": int(b.has_table.sum()),
        "destinations": len(b.dest_lids),
        "hca_destinations": int(hca.sum()),
        "entries": lfts.entries(),
        "pattern": w.traffic.pattern,
        "hosts": int((w.traffic.group >= 0).sum()),
        "routes_used": int(w.used.sum()),
        "host_routes": _host_routes(w),
        "notes": list(lfts.notes),
    }


def _host_routes(w: Walk) -> int:
    """Routes of the traffic pattern: each host HCA to each other HCA of its group."""
    g = w.traffic.group[w.traffic.group >= 0]
    sizes = np.bincount(g) if len(g) else np.zeros(0, np.int64)
    return int((sizes * (sizes - 1)).sum())


# -- coverage ---------------------------------------------------------------------------------
def _table_coverage(b: Bound) -> list[RouteFinding]:
    out = []
    missing = [b.switches[i] for i in np.flatnonzero(~b.has_table)]
    if missing:
        out.append(
            RouteFinding(
                NO_TABLE,
                Severity.WARNING,
                switch=missing[0],
                count=len(missing),
                detail={"switches": missing[:MAX_LIDS_LISTED]},
            )
        )
    if b.unknown_switches:
        out.append(
            RouteFinding(
                UNKNOWN_SWITCH,
                Severity.INFO,
                switch=b.unknown_switches[0],
                count=len(b.unknown_switches),
                detail={"switches": list(b.unknown_switches[:MAX_LIDS_LISTED])},
            )
        )
    by_lid = b.fabric.by_lid()
    differ = []
    for lid, dest in sorted(b.lfts.destinations.items()):
        node = by_lid.get(lid)  # a LID the topology does not know is no evidence (see bind)
        if node is not None and node.description.strip() != dest.description.strip():
            differ.append((lid, dest.description, node.guid))
    if differ:
        lid, theirs, ours = differ[0]
        out.append(
            RouteFinding(
                LID_MISMATCH,
                Severity.WARNING,
                lid=lid,
                destination=ours,
                count=len(differ),
                lids=tuple(x[0] for x in differ[:MAX_LIDS_LISTED]),
                detail={"in_tables": theirs},
            )
        )
    return out


# -- routes that do not deliver ---------------------------------------------------------------
_FAIL = (NO_ENTRY, DEAD_PORT, WRONG_NODE)


def _host_switches(w: Walk) -> np.ndarray[Any, Any]:
    b = w.bound
    on = b.hca_switch[(w.traffic.group >= 0) & (b.hca_switch >= 0)]
    mask = np.zeros(b.nswitches, bool)
    mask[on] = True
    return mask


def _terminal(w: Walk, rows: np.ndarray[Any, Any], col: int) -> np.ndarray[Any, Any]:
    """The switch where each route from ``rows`` to destination ``col`` ends (-1 in a loop)."""
    here = rows.astype(np.int64)
    for _ in range(w.bound.nswitches + 1):
        nx = w.nxt[here, col].astype(np.int64)
        go = nx >= 0
        if not go.any():
            return here
        here = np.where(go, nx, here)
    return np.full(len(rows), -1, np.int64)


def _failures(w: Walk) -> list[RouteFinding]:
    b = w.bound
    hosts = _host_switches(w)
    is_hca = b.dest_hca >= 0
    term = (w.nxt < 0) & np.isin(w.end, _FAIL)
    groups: dict[tuple[int, int, int, bool], list[int]] = defaultdict(
        list
    )  # (switch, end, port, host traffic) -> cols
    counts: dict[tuple[int, int, int, bool], int] = defaultdict(int)
    seen = np.zeros_like(term)
    # HCA destinations: the terminal cells the hosts' traffic reaches
    hit = term & (w.sources > 0) & is_hca[None, :]
    for s, d in zip(*np.nonzero(hit), strict=True):
        key = (int(s), int(w.end[s, d]), _port_key(w, s, d), True)
        groups[key].append(int(d))
        counts[key] += int(w.sources[s, d])
        seen[s, d] = True
    # switch destinations: routes from the hosts' switches that end badly
    sw_cols = np.flatnonzero(~is_hca)
    bad = np.isin(w.end[np.ix_(np.flatnonzero(hosts), sw_cols)], _FAIL)
    for d in sw_cols[bad.any(axis=0)].tolist():
        rows = np.flatnonzero(hosts & np.isin(w.end[:, d], _FAIL))
        ends = _terminal(w, rows, d)
        for s in np.unique(ends[ends >= 0]).tolist():
            key = (s, int(w.end[s, d]), _port_key(w, s, d), False)
            groups[key].append(d)
            counts[key] += int((ends == s).sum())
            seen[s, d] = True
    out = []
    for (s, end, port, host_traffic), cols in sorted(groups.items()):
        d = cols[0]
        example = _example_source(w, hosts, s, d)
        kind = WRONG_DESTINATION if end == WRONG_NODE else NO_ROUTE
        delivered_to = None
        if end == WRONG_NODE:
            p = int(b.table[s, d])
            h = int(b.far_hca[s, p]) if p else -1
            delivered_to = b.hcas[h] if h >= 0 else b.switches[s]
        out.append(
            RouteFinding(
                kind,
                Severity.ERROR if host_traffic else Severity.WARNING,
                lid=int(b.dest_lids[d]),
                switch=b.switches[s],
                port=int(b.table[s, d]) if end != NO_ENTRY else None,
                path=route_hops(w, example, d),
                source=source_of(w, example),
                destination=_node_at(b, d),
                count=counts[(s, end, port, host_traffic)],
                lids=tuple(int(b.dest_lids[c]) for c in cols[:MAX_LIDS_LISTED]),
                detail={
                    "reason": {
                        NO_ENTRY: "no entry",
                        DEAD_PORT: "port without a cable",
                        WRONG_NODE: "wrong node",
                    }[end],
                    "lids": len(cols),
                    "counted": "host routes" if host_traffic else "host switches",
                    **({"delivered_to": delivered_to} if delivered_to else {}),
                },
            )
        )
    unused = term & ~seen
    if unused.any():
        s, d = (int(x[0]) for x in np.nonzero(unused))
        out.append(
            RouteFinding(
                UNUSED_BROKEN,
                Severity.INFO,
                lid=int(b.dest_lids[d]),
                switch=b.switches[s],
                count=int(unused.sum()),
                destination=_node_at(b, d),
                detail={"switches": int(unused.any(axis=1).sum())},
            )
        )
    return out


def _port_key(w: Walk, s: int, d: int) -> int:
    return int(w.bound.table[s, d]) if int(w.end[s, d]) == DEAD_PORT else -1


def _example_source(w: Walk, hosts: np.ndarray[Any, Any], s: int, d: int) -> int:
    """A hosts' switch whose route to ``d`` ends at ``s`` (else ``s``)."""
    rows = np.flatnonzero(hosts)
    if not len(rows):
        return s
    ends = _terminal(w, rows, d)
    at = np.flatnonzero(ends == s)
    return int(rows[at[0]]) if len(at) else s


def _node_at(b: Bound, d: int) -> Any:
    h = int(b.dest_hca[d])
    return b.hcas[h] if h >= 0 else b.switches[int(b.dest_switch[d])]


def _loops(w: Walk) -> list[RouteFinding]:
    b = w.bound
    cells = np.argwhere(w.end == LOOP)
    if not len(cells):
        return []
    hosts = _host_switches(w)
    is_hca = b.dest_hca >= 0
    groups: dict[tuple[tuple[int, ...], bool], list[tuple[int, int]]] = defaultdict(list)
    counts: dict[tuple[tuple[int, ...], bool], int] = defaultdict(int)
    cycles: dict[tuple[int, int], tuple[int, ...]] = {}
    for s, d in cells.tolist():
        host_traffic = bool(is_hca[d] and w.sources[s, d] > 0)
        if not host_traffic and not (hosts[s] and not is_hca[d]):
            continue
        cyc = cycles.get((s, d)) or _cycle(w, s, d)
        for x in cyc:
            cycles[(x, d)] = cyc
        key = (cyc, host_traffic)
        groups[key].append((s, d))
        counts[key] += int(w.sources[s, d]) if host_traffic else 1
    out = []
    for (cyc, host_traffic), members in sorted(groups.items()):
        s, d = members[0]
        cols = sorted({m[1] for m in members})
        out.append(
            RouteFinding(
                FORWARDING_LOOP,
                Severity.ERROR if host_traffic else Severity.WARNING,
                lid=int(b.dest_lids[d]),
                switch=b.switches[cyc[0]],
                path=route_hops(w, s, d),
                source=source_of(w, s),
                destination=_node_at(b, d),
                count=counts[(cyc, host_traffic)],
                lids=tuple(int(b.dest_lids[c]) for c in cols[:MAX_LIDS_LISTED]),
                detail={
                    "loop": [b.switches[x] for x in cyc],
                    "lids": len(cols),
                    "counted": "host routes" if host_traffic else "host switches",
                },
            )
        )
    if not out:
        s, d = (int(x) for x in cells[0])
        out.append(
            RouteFinding(
                UNUSED_BROKEN,
                Severity.INFO,
                lid=int(b.dest_lids[d]),
                switch=b.switches[s],
                count=len(cells),
                destination=_node_at(b, d),
                detail={"switches": len({int(x) for x in cells[:, 0]}), "reason": "loop"},
            )
        )
    return out


def _cycle(w: Walk, s: int, d: int) -> tuple[int, ...]:
    """The switches of the loop the route from ``s`` to ``d`` falls into, smallest index first."""
    order: dict[int, int] = {}
    path: list[int] = []
    here = s
    while here not in order and here >= 0:
        order[here] = len(path)
        path.append(here)
        here = int(w.nxt[here, d])
    ring = path[order[here] :] if here >= 0 else path
    k = ring.index(min(ring))
    return tuple(ring[k:] + ring[:k])


# -- routes that deliver, but not as they should ----------------------------------------------
def _longer(w: Walk) -> list[RouteFinding]:
    if not len(w.longer):
        return []
    b = w.bound
    s, d = (int(x) for x in w.longer[0])
    best = int(w.min_hops[s, int(np.searchsorted(w.homes, int(b.dest_home[d])))])
    return [
        RouteFinding(
            LONGER_THAN_MINIMAL,
            Severity.WARNING,
            lid=int(b.dest_lids[d]),
            switch=b.switches[s],
            path=route_hops(w, s, d),
            source=source_of(w, s),
            destination=_node_at(b, d),
            count=len(w.longer),
            lids=tuple(int(b.dest_lids[c]) for c in np.unique(w.longer[:, 1])[:MAX_LIDS_LISTED]),
            detail={"hops": int(w.hops[s, d]), "minimal": best, "lids": len(np.unique(w.longer[:, 1]))},
        )
    ]


def _down_up(w: Walk) -> list[RouteFinding]:
    if not len(w.down_up):
        return []
    b = w.bound
    s, d, t = (int(x) for x in w.down_up[0])
    return [
        RouteFinding(
            DOWN_UP,
            Severity.WARNING,
            lid=int(b.dest_lids[d]),
            switch=b.switches[t],
            path=route_hops(w, s, d),
            source=source_of(w, s),
            destination=_node_at(b, d),
            count=len(w.down_up),
            lids=tuple(int(b.dest_lids[c]) for c in np.unique(w.down_up[:, 1])[:MAX_LIDS_LISTED]),
            detail={
                "turning_switches": len(np.unique(w.down_up[:, 2])),
                "lids": len(np.unique(w.down_up[:, 1])),
            },
        )
    ]


def _crossing(w: Walk, flagged: Mapping[LinkKey, str], isolated: Collection[LinkKey]) -> list[RouteFinding]:
    b = w.bound
    out = []
    for key, kind, severity in [
        *((k, CROSSES_ISOLATED, Severity.ERROR) for k in sorted(isolated)),
        *((k, CROSSES_FLAGGED, Severity.WARNING) for k in sorted(flagged) if k not in isolated),
    ]:
        routes = 0
        where: tuple[int, int] | None = None
        for guid, port in key:
            s = b.index.get(Guid(guid))
            if s is None or not 0 < port < 255:
                continue
            n = int(w.port_routes[s, port])
            routes += n
            if n and where is None:
                where = (s, port)
        if not routes or where is None:
            continue
        s, port = where
        cols = np.flatnonzero(w.used[s] & (b.table[s] == port))
        d = int(cols[0]) if len(cols) else 0
        out.append(
            RouteFinding(
                kind,
                severity,
                lid=int(b.dest_lids[d]) if len(cols) else None,
                switch=b.switches[s],
                port=port,
                path=route_hops(w, s, d) if len(cols) else (),
                count=routes,
                detail={
                    "link": [[key[0][0], key[0][1]], [key[1][0], key[1][1]]],
                    **({"status": flagged[key]} if key in flagged else {}),
                },
            )
        )
    return out
