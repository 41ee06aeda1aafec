"""``ibfab health``: link health from the stored counters, worst first."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from fabric.cli.jsonout import write_json

if TYPE_CHECKING:
    pass

DEFAULT_LIMIT = 40


def _since(ctx: click.Context, param: click.Parameter, value: str) -> float | None:
    from fabric.core.units import parse_duration
    from topology.errors import UsageError

    if value == "all":
        return None
    try:
        return parse_duration(value, "--since")
    except UsageError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command("health")
@click.option(
    "--since", default="24h", show_default=True, callback=_since, help="Window: 30m, 1h, 7d or 'all'."
)
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.option("--thresholds", metavar="FILE.toml", help="Override health thresholds (keys under [health]).")
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="List every link, not only findings: ok links too, and why a link is not yet certified.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (links, nodes, summary).")
@click.option("--no-record", is_flag=True, help="Do not add today's findings to the findings history.")
@click.option(
    "--prometheus",
    metavar="URL",
    help="Read the counters from this Prometheus (ibfab exporter's / infiniband_exporter's names) instead of the store.",
)
@click.option(
    "--topology",
    "topology_file",
    metavar="FILE",
    help="With --prometheus: the cables, from saved ibnetdiscover output (default: the store's newest topology).",
)
@click.option(
    "--step",
    default="60s",
    show_default=True,
    callback=_since,
    help="With --prometheus: the range query's step.",
)
def health_cmd(
    since: float | None,
    db: str | None,
    thresholds: str | None,
    show_all: bool,
    as_json: bool,
    no_record: bool,
    prometheus: str | None,
    topology_file: str | None,
    step: float | None,
) -> None:
    """Score every link from the collected counters: BER with bounds, flaps, errors, congestion."""
    from fabric.app.health import assess_store, load_thresholds, open_store
    from fabric.cli.progress import status

    t = load_thresholds(thresholds) if thresholds else None
    if prometheus:
        from fabric.app.health_prometheus import DEFAULT_STEP_S, assess_prometheus, topology_for
        from topology.errors import UsageError

        if since is None:
            raise UsageError("--prometheus needs a window: --since 1h, 7d, ...")
        fabric, topology_id = topology_for(db, topology_file)
        with status("querying Prometheus and scoring every link"):
            view = assess_prometheus(
                prometheus,
                fabric,
                since_s=since,
                step_s=step or DEFAULT_STEP_S,
                thresholds=t,
                topology_id=topology_id,
            )
    else:
        with open_store(db) as store, status("scoring every link"):  # seconds at 50,000 ports
            view = assess_store(store, since_s=since, thresholds=t, record=not no_record)
    if as_json:
        doc = view.report.to_dict()
        doc["cable_notes"] = [n.to_dict() for n in view.cable_notes]
        doc["cable_inventory"] = view.inventory
        doc["one_reading"] = view.one_reading.to_dict() if view.one_reading is not None else None
        doc["readings"] = [f.to_dict() for f in view.readings]
        summary = doc["summary"]
        if isinstance(summary, dict):  # the span the readings cover (the window is summary.window)
            summary["covered"] = list(view.covered) if view.covered is not None else None
        write_json(doc)
        return
    from fabric.present.health import render_health

    click.echo(render_health(view, limit=None if show_all else DEFAULT_LIMIT, show_all=show_all))
