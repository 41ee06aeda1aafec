"""``ibfab tui``: the operator's terminal UI, or the overview report when there is no terminal.

It lives in the tui package because imports flow fabric <- tui (fabric.cli may not import tui);
:mod:`tui.program` adds it to the ``ibfab`` group. Textual is imported only
inside :func:`run_tui_or_report`, so ``import fabric.cli`` stays free of it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from fabric.app.session import Session

# What `ibfab demo` calls its lab, and the store it writes beside the default one (fabric/app/lab/demo.py
# demo_db_path: the demo never touches an operator's own store, so the TUI goes to it instead).
DEMO_LAB = "demo"


def store_for(db: str | None, lab: str | None) -> str | None:
    """``--db`` if given; for ``--lab demo`` the demo's own store when it exists; else None (the
    default store). ``make demo`` ends in ``ibfab tui --lab demo``, which must show what the demo
    just stored, not an empty default store."""
    if db is not None or lab != DEMO_LAB:
        return db
    from fabric.app.lab.demo import demo_store

    demo_db = demo_store()
    if demo_db is None:
        return None
    click.echo(f"ibfab tui: lab {lab}: the demo's store {demo_db} (--db PATH for another)", err=True)
    return str(demo_db)


def tui_session(
    db: str | None, lab: str | None = None, node_map: str | None = None, thresholds: str | None = None
) -> Session:
    """The TUI's session: the store it reads, and the fabric its sweeps and changes run on (the
    lab, else this machine); built once, here (a bad node map or thresholds file is a one-line
    error before the UI opens)."""
    from pathlib import Path

    from fabric.app.session import open_session
    from fabric.app.source import Source

    return open_session(
        Source.lab(lab) if lab else None,
        db=Path(db) if db else None,
        thresholds_file=Path(thresholds) if thresholds else None,
        node_map_file=Path(node_map) if node_map else None,
    )


def overview_text(session: Session) -> str:
    """The overview as plain text, from the same service objects the TUI's overview draws."""
    from fabric.app.readmodel.service import FabricService
    from fabric.present.overview import overview_report
    from fabric.present.routes_tui import route_alerts
    from fabric.present.status import render_status

    svc = FabricService(session)
    state = svc.state()
    view = svc.load_view()
    health = svc.health() if view is not None else None
    routes = route_alerts(svc.routes(view, health)) if view is not None else ()
    report = overview_report(svc.overview(view, health, state, extra=routes))
    if view is None:
        return report
    return f"{report}\n\nWHAT IS WRONG (ibfab status)\n{render_status(svc.status(view, health))}"


def run_tui_or_report(session: Session, poll_seconds: float | None = 5.0) -> None:
    """Open the TUI on a terminal; print the overview report when stdout is not a terminal
    (``make demo`` ends with this either way)."""
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        click.echo(overview_text(session))
        return
    from fabric.app.readmodel.service import FabricService
    from tui.app import build_app

    build_app(FabricService(session), poll_seconds=poll_seconds).run()


@click.command("tui")
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.option("--lab", metavar="NAME", help="Lab fabric that probe sweeps run against.")
@click.option(
    "--poll",
    "poll_seconds",
    type=float,
    default=5.0,
    show_default=True,
    help="Seconds between checks for new snapshots in the store (0: no live refresh).",
)
@click.option(
    "--node-map",
    metavar="FILE",
    help="Fabric host -> Slurm node, one pair a line, where names differ (for drains, as ibfab drain).",
)
@click.option(
    "--thresholds",
    metavar="FILE.toml",
    help="Health thresholds, as ibfab health and ibfab recommend take them (statuses and advice).",
)
@click.option("--report", is_flag=True, help="Print the overview report instead of opening the UI.")
def tui_cmd(
    db: str | None,
    lab: str | None,
    poll_seconds: float,
    node_map: str | None,
    thresholds: str | None,
    report: bool,
) -> None:
    """Browse the fabric: overview, links, fabric map, details, probes, recommendations.

    With --lab demo and no --db it opens the store `ibfab demo` wrote (demo.db beside the default
    store)."""
    db = store_for(db, lab)
    if report:
        click.echo(overview_text(tui_session(db, lab, thresholds=thresholds)))
        return
    run_tui_or_report(tui_session(db, lab, node_map, thresholds), poll_seconds or None)
