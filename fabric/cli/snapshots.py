"""``ibfab topology list``: the topology snapshots in the store (``discover --save``)."""

from __future__ import annotations

import click

from fabric.cli.jsonout import write_json
from fabric.cli.options import build_session


@click.command("list")
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def list_cmd(db: str | None, as_json: bool) -> None:
    """Stored topology snapshots: id, label, when, source, and their nodes and cables.

    Any id or label (or 'latest') can be given to `ibfab topology diff`.
    """
    from fabric.app.discovery.snapshots import list_snapshots, snapshot_to_dict
    from fabric.present.discovery import render_snapshot_list

    rows = list_snapshots(build_session(db=db).store)
    if as_json:
        write_json([snapshot_to_dict(s) for s in rows])
        return
    if not rows:
        click.echo("no topology snapshots (save one with 'ibfab discover --save')", err=True)
        return
    click.echo(render_snapshot_list(rows))
