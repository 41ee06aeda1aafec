"""``ibfab topology list``: the topology snapshots in the store (``discover --save``)."""

from __future__ import annotations

import json
import time

import click


@click.command("list")
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def list_cmd(db: str | None, as_json: bool) -> None:
    """Stored topology snapshots: id, label, when, source, and their nodes and cables.

    Any id or label (or 'latest') can be given to `ibfab topology diff`.
    """
    from fabric.present.table import table
    from fabric.store import Store

    with Store.open(db, create=False) as store:
        rows = store.list_topologies()
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "id": s.id,
                        "label": s.label,
                        "taken_at": s.taken_at,
                        "source": s.source,
                        "nodes": s.nodes,
                        "switches": s.switches,
                        "hcas": s.hcas,
                        "links": s.links,
                    }
                    for s in rows
                ],
                indent=1,
            )
        )
        return
    if not rows:
        click.echo("no topology snapshots (save one with 'ibfab discover --save')", err=True)
        return
    click.echo(
        table(
            ("id", "label", "taken", "source", "switches", "hcas", "cables"),
            [
                (
                    s.id,
                    s.label,
                    time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.taken_at)),
                    s.source,
                    s.switches,
                    s.hcas,
                    s.links,
                )
                for s in rows
            ],
            60,
        )
    )
