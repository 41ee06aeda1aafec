"""``ibfab health``: link health from the stored counters, worst first."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from fabric.app.health import HealthView
    from fabric.health import BerEstimate

DEFAULT_LIMIT = 40


def _since(ctx: click.Context, param: click.Parameter, value: str) -> float | None:
    from fabric.app.collect import parse_duration
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
@click.option("--all", "show_all", is_flag=True, help="List every link, not only those that are not ok.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (links, nodes, summary).")
@click.option("--no-record", is_flag=True, help="Do not add today's findings to the findings history.")
def health_cmd(
    since: float | None,
    db: str | None,
    thresholds: str | None,
    show_all: bool,
    as_json: bool,
    no_record: bool,
) -> None:
    """Score every link from the collected counters: BER with bounds, flaps, errors, congestion."""
    from fabric.app.health import assess_store, load_thresholds, open_store

    t = load_thresholds(thresholds) if thresholds else None
    with open_store(db) as store:
        view = assess_store(store, since_s=since, thresholds=t, record=not no_record)
    if as_json:
        # Streamed: json.dumps of a 49k-link report builds the whole text first (+300 MiB).
        json.dump(view.report.to_dict(), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    click.echo(render_health(view, limit=None if show_all else DEFAULT_LIMIT, show_all=show_all))


def _ber(b: BerEstimate) -> str:
    if b.value is None or b.lower is None or b.upper is None:
        return "-"
    at_least = ">=" if b.at_least else ""
    return f"{at_least}{b.value:.2g} [{b.lower:.2g}..{b.upper:.2g}]"


def render_health(view: HealthView, limit: int | None = DEFAULT_LIMIT, show_all: bool = False) -> str:
    """The table (worst first) and a summary; ok links only with ``show_all``."""
    from fabric.present.table import table

    report = view.report
    s = report.summary
    links = list(report.links) if show_all else [lk for lk in report.links if lk.status.value != "ok"]
    shown = links if limit is None else links[:limit]
    rows = [
        (
            lk.score,
            lk.status.value,
            view.link_label(lk),
            _ber(lk.ber),
            f"{lk.flaps_per_hour:.2f}" if lk.flaps_per_hour else "0",
            lk.reasons[0] if lk.reasons else "",
        )
        for lk in shown
    ]
    by_status = ", ".join(f"{n} {k}" for k, n in s.links_by_status.items())
    secs = s.seconds
    span = (
        f"{secs:.0f} s" if secs < 120 else f"{secs / 60:.0f} min" if secs < 7200 else f"{secs / 3600:.1f} h"
    )
    lines = []
    if rows:
        lines.append(
            table(("score", "status", "link", "BER [95% bounds]", "flaps/h", "first reason"), rows, 110)
        )
        if len(links) > len(shown):
            lines.append(f"  … {len(links) - len(shown)} more (--all or --json)")
    else:
        lines.append("Every link is ok.")
    offenders = sum(1 for lk in report.links if lk.repeat_offender)
    lines.append("")
    lines.append(
        f"{s.links} links over {span} ({s.snapshots} snapshots, topology {view.topology_id}): {by_status}"
    )
    extra = []
    if offenders:
        extra.append(f"{offenders} repeat offenders")
    if s.links_without_samples:
        extra.append(f"{s.links_without_samples} links without samples")
    if s.down_links_not_in_fabric:
        extra.append(f"{len(s.down_links_not_in_fabric)} links down (not in the latest topology)")
    if view.recorded:
        extra.append(f"{view.recorded} findings recorded for today")
    if extra:
        lines.append("; ".join(extra))
    return "\n".join(lines)
