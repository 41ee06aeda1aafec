"""``ibfab status``: what is wrong with which cable and host, ranked, from every source ibfab has."""

from __future__ import annotations

from typing import Any

import click

from fabric.cli.health import _since
from fabric.cli.jsonout import write_json
from fabric.cli.options import discover_in, source_options, source_session


@click.command("status")
@source_options
@click.option(
    "--plan",
    "plans",
    multiple=True,
    metavar="FILE",
    help="Cable plan(s) to check the fabric against (UFM NDT CSV, as 'topology check' reads).",
)
@click.option(
    "--since", default="24h", show_default=True, callback=_since, help="Health window: 30m, 1h, 7d or 'all'."
)
@click.option("--thresholds", metavar="FILE.toml", help="Health thresholds, as ibfab health takes them.")
@click.option("--all", "show_all", is_flag=True, help="List every entry (default: the worst 40).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def status_cmd(
    plans: tuple[str, ...],
    since: float | None,
    thresholds: str | None,
    show_all: bool,
    as_json: bool,
    **opts: Any,
) -> None:
    """What is wrong, worst first: one entry per cable (both ends named) or host, with the evidence
    of every source (counter history, the newest reading, the newest sweep, wiring, the cable plan,
    stored routes), how sure it is, and the one action 'ibfab recommend' gives for it.

    The fabric is the newest stored snapshot unless a source is given; the store (--db) holds the
    counters, sweeps and routes. Exit 0 when nothing is wrong, 10 when something is.
    """
    from fabric.app.advice.recommend import live_driver
    from fabric.app.status import fabric_status

    session = source_session(opts, thresholds=thresholds)
    d = discover_in(session)
    report = fabric_status(d, session, live=live_driver(session), since_s=since, plans=plans)
    if as_json:
        write_json(report.to_dict())
    else:
        from fabric.present.status import render_status

        click.echo(render_status(report, limit=None if show_all else 40))
    if report.entries:
        raise SystemExit(10)
