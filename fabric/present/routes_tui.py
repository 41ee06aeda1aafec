"""The routes as the TUI shows them: the verdict on the tables stored with the topology on screen
(or how to store them), its error-level findings as alerts, and a cable's share of the routes on
the fabric map. The sentences and evidence are :mod:`fabric.present.routes`' (``ibfab routes
check`` says the same words)."""

from __future__ import annotations

from collections.abc import Mapping

from fabric.app.readmodel.route_loads import CableLoad
from fabric.app.readmodel.routes import RoutesVerdict
from fabric.app.readmodel.views import Alert, LinkRow
from fabric.present.routes import (
    CLEAN,
    CLEAN_ROUTES,
    balance_lines,
    credit_lines,
    engine_lines,
    evidence,
    name_of,
    path_text,
    sentence,
    severity_word,
    summary_lines,
)
from topology.route_findings import CREDIT_LOOP, RouteFinding

TABLE_FORMS = "dump_lfts, dump_fts, ibroute, opensm-lfts.dump, opensm.fdbs or ibdiagnet2.fdbs"


def _db(v: RoutesVerdict) -> str:
    return f" --db {v.db}" if v.db else ""


def no_tables_text(v: RoutesVerdict) -> str:
    """No tables stored with the topology on screen: said plainly, with the commands that store them."""
    sid = v.topology_id
    lines = [
        f"No forwarding tables are stored with topology snapshot {sid}: its routes are not judged.",
        "",
        f"Store a dump of the subnet manager's tables ({TABLE_FORMS}) with this snapshot:",
        f"  ibfab routes --snapshot {sid} --tables FILE --save{_db(v)}",
        "or read them from the fabric now, stored with a new topology snapshot:",
    ]
    if v.lab is not None:
        lines.append(f"  ibfab routes --lab {v.lab} --save{_db(v)}")
    else:
        lines += [
            f"  ibfab routes --ssh HOST --save{_db(v)}   (dump_fts on a management host)",
            f"  ibfab routes --ibdiagnet DIR --save{_db(v)}   (an ibdiagnet -r run's ibdiagnet2.fdbs)",
        ]
    lines += [
        "",
        "Credit loops are judged per virtual lane when the lanes are stored with the tables: add --lanes",
        "(read where tools run), or --sl2vl FILE and --path-records FILE (smpquery sl2vl, saquery -p).",
    ]
    return "\n".join(lines)


def routes_head(v: RoutesVerdict) -> str:
    """Which tables, what was judged, errors and warnings, the engine they look like (and the
    SM's word where known); one line more for a clean fabric."""
    if v.error:
        return (
            f"The forwarding tables stored with topology snapshot {v.topology_id} cannot be judged: {v.error}"
        )
    j = v.judged
    if j is None:
        return no_tables_text(v)
    sm_unknown = f"ibfab routes check --snapshot {v.topology_id} --sm-log FILE{_db(v)} reads the SM's log"
    lines = [
        f"Forwarding tables stored with topology snapshot {v.topology_id}, read from {j.tables} ({j.format})",
        *summary_lines(j.summary, j.findings, j.health, j.isolations),
        *engine_lines(j.engine, sm_unknown),
    ]
    notes = [f for f in j.findings if f.severity.value == "info"]
    if not j.findings:
        lines.append(CLEAN)
    elif len(notes) == len(j.findings):  # updn and ftree leave unused entries by design
        lines.append(f"{CLEAN_ROUTES}: no error or warning ({len(notes)} note(s) below).")
    return "\n".join(lines)


def finding_row(v: RoutesVerdict, f: RouteFinding) -> tuple[str, str, str]:
    """(severity, kind, what and where) for the findings table."""
    return (severity_word(f).strip(), f.kind, sentence(f, v.names))


def finding_detail(v: RoutesVerdict, f: RouteFinding) -> str:
    """A finding whole with its evidence; a credit loop link by link."""
    lines = [sentence(f, v.names), *evidence(f, v.names)]
    if f.kind == CREDIT_LOOP and v.judged is not None:
        lines += ["", *credit_lines(v.judged.credit, v.names, lanes_shown=True)]
    return "\n".join(lines)


def balance_text(v: RoutesVerdict) -> str:
    """Routes per cable by tier and direction (max and mean), the hottest cables, and that there
    is no credit loop (one found is a finding, shown link by link with its evidence)."""
    j = v.judged
    if j is None:
        return ""
    lines = balance_lines(j.pattern, j.hosts, j.directions, j.hottest, v.names)
    if not j.credit.found:
        lines += ["", *credit_lines(j.credit, v.names)]
    return "\n".join(lines)


def _element(f: RouteFinding, names: Mapping[str, str]) -> str:
    if f.kind == CREDIT_LOOP and f.path:
        return path_text(f.path, names)
    if f.switch is None:
        return "the subnet manager"
    where = name_of(names, f.switch) + (f"/{f.port}" if f.port else "")
    return where + (f" -> LID {f.lid}" if f.lid is not None else "")


def route_alerts(v: RoutesVerdict | None) -> tuple[Alert, ...]:
    """The stored tables' error-level findings (credit loops, black holes, loops, wrong
    delivery, routes over isolated cables, an SM that fell back) as alerts; none without tables."""
    if v is None:
        return ()
    return tuple(
        Alert(f.severity, f.kind, _element(f, v.names), sentence(f, v.names), guid=f.switch, route=f)
        for f in v.errors
    )


def cable_load_line(row: LinkRow, load: CableLoad | None) -> str:
    """``leaf-01/9 - spine-01/1: 24 routes leaf -> spine (1.00x its mean 24.0), 24 spine -> leaf (...)``."""
    if load is None:
        return f"{row.cable}: no host route counted on it"
    ways = ", ".join(
        f"{w.routes} routes {w.direction} ({w.load:.2f}x its mean {w.mean:.1f})"
        for w in sorted(load.ways, key=lambda w: w.direction)
    )
    return f"{row.cable}: {ways}"


def no_load_note(v: RoutesVerdict | None) -> str:
    """Why the map has no route load to colour (empty: it has one)."""
    if v is None:
        return "judging the stored forwarding tables…"
    if v.error:
        return f"the stored forwarding tables cannot be judged: {v.error}"
    if v.judged is None:
        return (
            f"no forwarding tables stored with topology snapshot {v.topology_id}: nothing to colour "
            "(t: how to store them)"
        )
    return ""
