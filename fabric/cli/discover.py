"""``ibfab discover`` and ``ibfab topology diff``."""

from __future__ import annotations

import json

import click

from fabric.app.discover import discover
from fabric.app.source import SshOptions, read_source
from fabric.cli.options import ssh_options
from topology.errors import UsageError


@click.command("discover")
@click.option("--input", "input_path", metavar="FILE", help="Saved ibnetdiscover output ('-' for stdin).")
@click.option("--ssh", metavar="HOST", help="Run ibnetdiscover on a management host over SSH.")
@click.option("--lab", metavar="NAME", help="Run the real ibnetdiscover against a lab fabric.")
@click.option(
    "--ibdiagnet", "ibdiagnet_dir", metavar="DIR", help="An ibdiagnet output directory (its db_csv)."
)
@ssh_options
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON form.")
@click.option("--save", is_flag=True, help="Store the snapshot (raw text kept) in the store.")
@click.option("--label", help="A name for the saved snapshot.")
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.option("--all-anomalies", is_flag=True, help="List every anomaly, not the first 40.")
def discover_cmd(
    input_path: str | None,
    ssh: str | None,
    lab: str | None,
    ibdiagnet_dir: str | None,
    inventory: str | None,
    known_hosts: str | None,
    accept_new_host_key: bool,
    identity: str | None,
    as_json: bool,
    save: bool,
    label: str | None,
    db: str | None,
    all_anomalies: bool,
) -> None:
    """Discover the fabric, classify it and list wiring anomalies."""
    if ibdiagnet_dir:
        from fabric.app.ibdiagnet import discover_ibdiagnet

        if input_path or ssh or lab:
            raise UsageError("choose one of --input, --ssh, --lab, --ibdiagnet")
        d = discover_ibdiagnet(ibdiagnet_dir)
    else:
        src, text = read_source(input_path, ssh, lab)
        d = discover(src, text, SshOptions(inventory, known_hosts, accept_new_host_key, identity))
    snapshot_id = None
    if save:
        from fabric.store import Store

        with Store.open(db) as store:
            snapshot_id = store.save_topology(
                d.fabric,
                d.raw_text,
                tool="ibdiagnet" if ibdiagnet_dir else "ibnetdiscover",
                source=d.source,
                label=label,
            )
        click.echo(f"saved topology snapshot {snapshot_id}", err=True)
    if as_json:
        out = d.to_dict()
        if snapshot_id is not None:
            out["summary"]["snapshot_id"] = snapshot_id
        click.echo(json.dumps(out, indent=1))
        return
    from fabric.present.discovery import render_discovery

    click.echo(render_discovery(d, limit=None if all_anomalies else 40))


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
    from fabric.app.topology_diff import diff_topologies, topology_diff_to_dict
    from fabric.present.discovery import render_topology_diff

    td = diff_topologies(before, after, db)
    if as_json:
        click.echo(json.dumps(topology_diff_to_dict(td), indent=1))
        return
    click.echo(render_topology_diff(td))
