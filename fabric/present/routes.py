"""Routes for people: what the forwarding tables hold, and what judging them found, with evidence.

Every finding is one line naming what is wrong and where (switch, port, LID and what is at it),
then its evidence: the route hop by hop (``leaf-01 [9] -> spine-01 [1] -> ...``), the counts it
rests on. Names come from discovery's classification (a host's HCA, a switch's short name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fabric.app.routes import RoutesCheck
from fabric.present.table import table
from topology.credit_loops import CreditLoops
from topology.route_balance import ChannelLoad, DirectionBalance
from topology.route_engine import EngineLook
from topology.route_findings import (
    CREDIT_LOOP,
    CROSSES_FLAGGED,
    CROSSES_ISOLATED,
    DOWN_UP,
    ENGINE_FALLBACK,
    ENGINE_MISMATCH,
    FORWARDING_LOOP,
    IMBALANCE,
    LID_MISMATCH,
    LONGER_THAN_MINIMAL,
    NO_ROUTE,
    NO_TABLE,
    UNKNOWN_SWITCH,
    UNUSED_BROKEN,
    WRONG_DESTINATION,
    Hop,
    RouteFinding,
)

_SEVERITY = {"critical": "CRIT", "error": "ERROR", "warning": "WARN", "info": "info"}


def render_tables(summary: Mapping[str, Any], limit: int | None = 40) -> str:
    """``ibfab routes``: the dump read, and each switch's table in a line."""
    s = summary
    lines = [
        f"Forwarding tables from {s['tables']} ({s['format']})",
        f"  {s['switches_in_tables']} switch tables, {s['entries']} routes set; the topology has "
        f"{s['switches_in_topology']} switches and {s['lids_in_topology']} LIDs",
    ]
    lines += [f"  note: {n}" for n in s.get("notes", ())]
    lines += lanes_read_lines(s.get("lanes"))
    rows = [
        (
            w["name"],
            w["lid"],
            "no table" if w["entries"] is None else w["entries"],
            "-" if w["entries"] is None else w["lids_without_route"],
        )
        for w in s["switches"]
    ]
    shown = rows if limit is None else rows[:limit]
    lines += ["", table(("switch", "lid", "routes", "topology LIDs without a route"), shown)]
    if len(shown) < len(rows):
        lines.append(f"… {len(rows) - len(shown)} more switches (--all or --json)")
    if "snapshot_id" in s:
        lines.append(f"\nstored with topology snapshot {s['snapshot_id']}")
    return "\n".join(lines)


def stored_line(snapshot_id: int, *, with_lanes: bool) -> str:
    """What ``ibfab routes --save`` says it stored (stderr)."""
    return f"stored the tables{' and their lanes' if with_lanes else ''} with topology snapshot {snapshot_id}"


def lanes_read_lines(lanes: Mapping[str, Any] | None) -> list[str]:
    """The lanes read beside the tables (``ibfab routes --sl2vl/--path-records/--lanes``)."""
    if lanes is None:
        return []
    t, p = lanes["sl2vl"], lanes["path_records"]
    return [
        "  lanes: "
        + (
            "no SL2VL tables"
            if t is None
            else f"SL2VL tables from {t['source']} ({t['rows']} rows, {t['lids']} LIDs)"
        )
        + "; "
        + (
            "no path records"
            if p is None
            else f"{p['records']} path records from {p['source']} (SLs {', '.join(str(x) for x in p['sls'])})"
        )
    ]


CLEAN_ROUTES = "Every route delivers, no credit loop, balanced"
CLEAN = f"{CLEAN_ROUTES}: nothing to report."


def render_check(check: RoutesCheck, limit: int | None = 40) -> str:
    """``ibfab routes check``: the summary, every finding with its evidence, balance, credit loops."""
    r = check.report
    names = names_of(check)
    lines = [
        f"Routes of {check.discovery.source} from {r.tables} ({r.format})",
        *summary_lines(r.summary, r.findings, check.health, check.isolations),
    ]
    shown = r.findings if limit is None else r.findings[:limit]
    if shown:
        lines.append("")
    for f in shown:
        lines += finding_lines(f, names)
    if len(shown) < len(r.findings):
        lines.append(f"… {len(r.findings) - len(shown)} more findings (--all or --json)")
    b = r.balance
    lines += ["", *balance_lines(b.pattern, b.hosts, b.directions, b.hottest, names)]
    lines += ["", *credit_lines(r.credit, names), "", *engine_lines(r.engine)]
    if not r.findings:
        lines += ["", CLEAN]
    return "\n".join(lines)


def summary_lines(
    s: Mapping[str, Any], findings: Sequence[RouteFinding], health: str, isolations: int
) -> list[str]:
    """What was judged (tables, destinations, traffic, health: where the flags came from) and the
    count of errors and warnings."""
    lines = [
        f"  {s['switches_with_tables']} of {s['switches']} switches have a table; {s['destinations']} "
        f"destination LIDs ({s['hca_destinations']} HCAs); {s['entries']} routes set",
        f"  traffic judged: {s['pattern']} among {s['hosts']} host HCAs ({s['host_routes']} routes)",
        f"  health: {health}" + (f"; {isolations} isolated port(s)" if isolations else ""),
    ]
    lines += [f"  note: {n}" for n in s.get("notes", ())]
    errors = sum(1 for f in findings if f.severity.value in ("error", "critical"))
    warnings = sum(1 for f in findings if f.severity.value == "warning")
    lines.append(f"  {errors} error(s), {warnings} warning(s)")
    return lines


def finding_lines(f: RouteFinding, names: Mapping[str, str]) -> list[str]:
    """``ERROR <what, where>`` then its evidence, indented."""
    return [f"{severity_word(f)} {sentence(f, names)}", *(f"      {e}" for e in evidence(f, names))]


def severity_word(f: RouteFinding) -> str:
    return f"{_SEVERITY[f.severity.value]:5}"


def names_of(check: RoutesCheck) -> dict[str, str]:
    return {g: c.name for g, c in check.discovery.classification.nodes.items()}


def name_of(names: Mapping[str, str], guid: str | None) -> str:
    if guid is None:
        return "?"
    return names.get(guid, guid)


def path_text(path: tuple[Hop, ...], names: Mapping[str, str]) -> str:
    """``leaf-01 [9] -> spine-01 [1] -> leaf-02 [3] -> cn0009 mlx5_0`` (out ports in brackets)."""
    if not path:
        return ""
    parts = [f"{name_of(names, h.switch)} [{h.port}]" for h in path]
    last = path[-1]
    parts.append(name_of(names, last.to) if last.to else "(no cable)")
    return " -> ".join(parts)


def _lids(f: RouteFinding) -> str:
    more = int(f.detail.get("lids", len(f.lids)))
    shown = ", ".join(str(x) for x in f.lids[:8])
    return shown + (f" and {more - min(more, 8)} more" if more > 8 else "")


def sentence(f: RouteFinding, names: Mapping[str, str]) -> str:
    """One route finding in a sentence, as ``ibfab routes check`` says it (``ibfab status`` and the TUI too)."""
    d = f.detail
    sw = name_of(names, f.switch)
    dest = name_of(names, f.destination)
    many = int(d.get("lids", 1)) > 1
    lid = f"LID {f.lid} ({dest})" + (f" and {int(d['lids']) - 1} more LIDs" if many else "")
    counted = d.get("counted") == "host switches"
    hit = f"{f.count} host switch(es)' routes" if counted else f"{f.count} host routes"
    if f.kind == NO_ROUTE:
        where = (
            f"port {f.port}, which has no cable" if d.get("reason") == "port without a cable" else "nowhere"
        )
        return f"{sw} sends {lid} {where}: {hit} never arrive"
    if f.kind == WRONG_DESTINATION:
        return f"{sw} delivers {lid} to {name_of(names, d.get('delivered_to'))}: {hit} reach the wrong node"
    if f.kind == FORWARDING_LOOP:
        loop = " -> ".join(name_of(names, g) for g in d.get("loop", ()))
        return f"forwarding loop for {lid} between {loop}: {hit} go round for ever"
    if f.kind == CREDIT_LOOP and d.get("cycle_vls"):
        lanes = sorted(set(d["cycle_vls"]))
        on = f"on VL {lanes[0]}" if len(lanes) == 1 else f"on VLs {', '.join(str(x) for x in lanes)}"
        return (
            f"credit loop {on}: {d.get('cycle_links')} links wait on each other in a ring "
            f"({d.get('channels_in_cycles')} (channel, VL) nodes on cycles); a full set of buffers deadlocks them"
        )
    if f.kind == CREDIT_LOOP and d.get("sm_engine_spreads_vls"):
        return (
            f"a cycle in one lane: {d.get('cycle_links')} links would wait on each other in a ring "
            f"({d.get('channels_in_cycles')} channels on cycles) if their routes shared a VL; the SM "
            f"runs {d['sm_engine_spreads_vls']}, which gives routes SLs to break such cycles: judge it "
            "per VL with the lanes (--lanes, or --sl2vl and --path-records)"
        )
    if f.kind == CREDIT_LOOP:
        return (
            f"credit loop: {d.get('cycle_links')} links wait on each other in a ring "
            f"({d.get('channels_in_cycles')} channels on cycles); a full set of buffers deadlocks them"
        )
    if f.kind == LONGER_THAN_MINIMAL:
        return (
            f"{f.count} used routes are longer than the cabling allows, to {d.get('lids')} LID(s); "
            f"e.g. {sw} to {lid}: {d.get('hops')} switch hops where {d.get('minimal')} would do"
        )
    if f.kind == DOWN_UP:
        return (
            f"{f.count} used routes turn down then up (not up/down: credit loops can follow), "
            f"at {d.get('turning_switches')} switch(es); e.g. at {sw} for {lid}"
        )
    if f.kind == IMBALANCE:
        return (
            f"{d.get('direction')}: {d.get('switches')} switch(es) pile routes on some cables; e.g. {sw} "
            f"sends {d.get('max')} of its {d.get('routes')} routes that way over port {f.port}, where an "
            f"even spread over its {d.get('cables')} cables is {d.get('even')} ({d.get('idle_cables')} idle)"
        )
    if f.kind == CROSSES_ISOLATED:
        return f"{f.count} routes still cross the isolated cable at {sw} port {f.port}: their packets are dropped"
    if f.kind == CROSSES_FLAGGED:
        return f"{f.count} routes cross the cable at {sw} port {f.port}, which link health rates {d.get('status')}"
    if f.kind == NO_TABLE:
        return f"{f.count} switch(es) of the topology have no table in the dump (e.g. {sw}): routes through them are not judged"
    if f.kind == UNKNOWN_SWITCH:
        return f"{f.count} switch table(s) are of switches the topology does not have (e.g. {f.switch})"
    if f.kind == LID_MISMATCH:
        return (
            f"{f.count} LID(s) name other nodes in the tables than in the topology: LID {f.lid} is "
            f"{d.get('in_tables')!r} in the tables, {dest} in the topology (LIDs changed since?)"
        )
    if f.kind == ENGINE_FALLBACK:
        if d.get("failed"):
            return (
                f"the SM fell back: {', '.join(d['failed'])} could not build the tables, "
                f"{d.get('used')} configured the switches ({d.get('log')})"
            )
        return (
            f"opensm.conf sets routing_engine {d.get('configured')}, the SM's log says "
            f"{d.get('used')} configured the switches last"
        )
    if f.kind == ENGINE_MISMATCH:
        return (
            f"the SM says {d.get('engine')} routes, but {d.get('broken_by')} used routes break its "
            f"{d.get('rule')} rule: tables changed by hand, another SM, or a stale cache?"
        )
    if f.kind == UNUSED_BROKEN:
        why = "loop" if d.get("reason") == "loop" else "go nowhere"
        return (
            f"{f.count} entries on {d.get('switches')} switch(es) {why} but no host's route uses them "
            f"(e.g. {sw} for LID {f.lid}, {dest}); updn and ftree leave no route between their roots"
        )
    return f"{f.kind} at {sw}"


def evidence(f: RouteFinding, names: Mapping[str, str]) -> list[str]:
    out = []
    if f.path:
        start = f"from {name_of(names, f.source)}: " if f.source else ""
        out.append(start + path_text(f.path, names))
    if f.lids and len(f.lids) > 1 and f.kind not in (CREDIT_LOOP,):
        out.append(f"LIDs: {_lids(f)}")
    if f.kind == CREDIT_LOOP and f.detail.get("cycle_vls"):
        out.append(f"VL of each link: {', '.join(str(x) for x in f.detail['cycle_vls'])}")
    if f.kind == CREDIT_LOOP and f.lids:
        out.append(f"routes making the waits: LIDs {', '.join(str(x) for x in f.lids)}")
        out.append(f"lanes: {f.detail.get('lanes')}")
    return out


def balance_lines(
    pattern: str,
    hosts: int,
    directions: Sequence[DirectionBalance],
    hottest: Sequence[ChannelLoad],
    names: Mapping[str, str],
) -> list[str]:
    """Routes per cable by direction (and rail): cables, routes, max, mean, even; the hottest cables."""
    out = [f"Balance: routes per cable for {pattern} among {hosts} host HCAs"]
    rows = [
        (d.direction, "-" if d.rail is None else d.rail, d.links, d.routes, d.max, f"{d.mean:.1f}", d.even)
        for d in directions
    ]
    if not rows:
        return [*out, "  no switch-to-switch cable carries the traffic"]
    out.append(table(("direction", "rail", "cables", "routes", "max", "mean", "even"), rows))
    if hottest:
        out.append("Hottest cables:")
        out += [
            f"  {name_of(names, c.switch)} [{c.port}] -> {name_of(names, c.to)} [{c.to_port}]: {c.routes} routes ({c.direction})"
            for c in hottest[:5]
        ]
    return out


def credit_lines(c: CreditLoops, names: Mapping[str, str], *, lanes_shown: bool = False) -> list[str]:
    """That there is no credit loop (and over what), else one cycle link by link. ``lanes_shown``:
    the lines above already say how lanes were judged (a finding's evidence), so the cycle's
    heading does not repeat it."""
    if not c.found:
        if c.lanes_known:
            used = ", ".join(str(x) for x in c.vls_used) or "none"
            return [
                f"Credit loops: none ({c.dependencies} dependencies of the hosts' routes over "
                f"{c.channels} (channel, VL) nodes, VLs used {used}; {c.lanes})"
            ]
        return [
            f"Credit loops: none ({c.dependencies} channel dependencies of the hosts' routes over "
            f"{c.channels} channels; {c.lanes})"
        ]
    what = "(channel, VL) nodes" if c.lanes_known else "channels"
    lanes = ("per VL" if c.lanes_known else "one lane") if lanes_shown else c.lanes
    out = [f"Credit loop, link by link ({c.in_cycles} {what} on cycles; {lanes}):"]
    vls = c.vls if c.lanes_known else (None,) * len(c.cycle)
    for hop, lid, vl in zip(c.cycle, c.witnesses, vls, strict=True):
        out.append(
            f"  {name_of(names, hop.switch)} [{hop.port}] -> {name_of(names, hop.to)} [{hop.to_port}]"
            + (f" on VL {vl}" if vl is not None else "")
            + (f"  (waits for the next link: routes to LID {lid})" if lid else "")
        )
    return out


def engine_lines(e: EngineLook, sm_unknown: str = "give --sm-log / --sm-conf") -> list[str]:
    """The engine the tables look like, and what the SM says it runs (``sm_unknown``: how to
    know, where it is not known)."""
    rules = []
    rules.append(
        "up/down" if e.up_down else "not up/down" if e.up_down is False else "up/down unknown (no tiers)"
    )
    rules.append("minimal" if e.minimal else "not minimal")
    out = [f"Routing engine: the tables are {', '.join(rules)}; consistent with {', '.join(e.consistent)}"]
    if e.sm is not None:
        sm = e.sm
        said = f"the SM says {sm.engine or 'nothing'}"
        if sm.failed:
            said += f" after {', '.join(sm.failed)} failed"
        if sm.configured:
            said += f"; opensm.conf: routing_engine {sm.configured}"
        out.append(f"  {said} ({sm.source or sm.conf_source})")
    else:
        out.append(f"  what the SM runs is not known ({sm_unknown})")
    return out
