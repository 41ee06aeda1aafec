"""``ibfab discover`` and ``ibfab topology diff``."""

from __future__ import annotations

from typing import Any

import click

from fabric.cli.jsonout import write_json
from fabric.cli.options import build_session, discover_in, source_options, source_session
from fabric.cli.quickexit import finish
from topology.errors import UsageError


@click.command("discover")
@source_options
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON form.")
@click.option("--save", is_flag=True, help="Store the snapshot (raw text kept) in the store.")
@click.option("--label", help="A name for the saved snapshot.")
@click.option("--all-anomalies", is_flag=True, help="List every anomaly, not the first 40.")
def discover_cmd(
    as_json: bool, save: bool, label: str | None, db: str | None, all_anomalies: bool, **opts: Any
) -> None:
    """Discover the fabric, classify it and list wiring anomalies.

    With no source this runs ibnetdiscover here (a fresh discovery, never a stored snapshot)."""
    if save and opts.get("snapshot"):
        raise UsageError("--save with --snapshot would store that snapshot again")
    from_ibdiagnet = bool(opts.get("ibdiagnet_dir"))  # its cable inventory is kept with --save
    session = source_session(opts, db, stored_default=False)
    d = discover_in(session)
    snapshot_id = None
    if save:
        from fabric.app.discovery.snapshots import save_discovery

        snapshot_id = save_discovery(d, session.store, label, from_ibdiagnet)
        click.echo(f"saved topology snapshot {snapshot_id}", err=True)
    if as_json:
        out = d.to_dict()
        if snapshot_id is not None:
            out["summary"]["snapshot_id"] = snapshot_id
        write_json(out)
    else:
        from fabric.present.discovery import render_discovery

        click.echo(render_discovery(d, limit=None if all_anomalies else 40))
    if not save:  # all written, no store open: the fabric need not be freed object by object
        finish()


@click.group("topology")
def topology_group() -> None:
    """Stored topology snapshots and their differences."""


@topology_group.command("diff")
@click.argument("before")
@click.argument("after")
@click.option("--db", metavar="PATH")
@click.option("--json", "as_json", is_flag=True)
def diff_cmd(before: str, after: str, db: str | None, as_json: bool) -> None:
    """Cables added, removed and changed between two snapshots or files (BEFORE AFTER)."""
    from fabric.app.discovery.topology_diff import diff_topologies, topology_diff_to_dict
    from fabric.present.discovery import render_topology_diff

    td = diff_topologies(before, after, build_session(db=db).store)
    if as_json:
        write_json(topology_diff_to_dict(td))
        return
    click.echo(render_topology_diff(td))
