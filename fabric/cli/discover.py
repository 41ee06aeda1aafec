"""``ibfab discover`` and ``ibfab topology diff``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from fabric.cli.options import discover_from, source_options
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
    d = discover_from(opts, db, stored_default=False)
    snapshot_id = None
    if save:
        from fabric.store import Store

        with Store.open(db) as store:
            snapshot_id = store.save_topology(
                d.fabric,
                d.raw_text,
                tool="ibdiagnet" if from_ibdiagnet else "ibnetdiscover",
                source=d.source,
                label=label,
            )
            if from_ibdiagnet:
                from fabric.app.cables import keep_inventory

                keep_inventory(store, d.source)
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


def _load(ref: str, db: str | None) -> tuple[str, object]:
    """A saved file path, or a store reference (snapshot id, 'latest', or label)."""
    from topology.ibnetdiscover import read_ibnetdiscover

    p = Path(ref)
    if p.exists():
        return str(p), read_ibnetdiscover(p)
    from fabric.store import Store

    with Store.open(db, create=False) as store:
        st = store.load_topology(ref)
    return f"snapshot {st.id}", st.fabric


@topology_group.command("diff")
@click.argument("before")
@click.argument("after")
@click.option("--db", metavar="PATH")
@click.option("--json", "as_json", is_flag=True)
def diff_cmd(before: str, after: str, db: str | None, as_json: bool) -> None:
    """Cables added, removed and changed between two snapshots or files (BEFORE AFTER)."""
    from topology.classify import classify
    from topology.diff import diff_fabrics
    from topology.model import Fabric

    name_a, fa = _load(before, db)
    name_b, fb = _load(after, db)
    assert isinstance(fa, Fabric) and isinstance(fb, Fabric)
    dd = diff_fabrics(fa, fb)
    names = {
        **{g: c.name for g, c in classify(fa).nodes.items()},
        **{g: c.name for g, c in classify(fb).nodes.items()},
    }

    def end(p: object) -> dict[str, object]:
        from topology.model import PortRef

        assert isinstance(p, PortRef)
        return {"guid": p.guid, "port": p.port, "name": names.get(p.guid, p.guid)}

    def link(lk: object) -> dict[str, object]:
        from topology.model import Link

        assert isinstance(lk, Link)
        return {"a": end(lk.a), "b": end(lk.b), "width": lk.width, "speed": lk.speed, "gbps": lk.gbps}

    out = {
        "before": name_a,
        "after": name_b,
        "nodes_added": [{"guid": n.guid, "name": names.get(n.guid)} for n in dd.nodes_added],
        "nodes_removed": [{"guid": n.guid, "name": names.get(n.guid)} for n in dd.nodes_removed],
        "links_added": [link(lk) for lk in dd.links_added],
        "links_removed": [link(lk) for lk in dd.links_removed],
        "links_changed": [{"before": link(c.before), "after": link(c.after)} for c in dd.links_changed],
    }
    if as_json:
        click.echo(json.dumps(out, indent=1))
        return
    click.echo(f"{name_a} -> {name_b}")
    if dd.empty:
        click.echo("no changes")
        return

    def fmt(x: dict[str, object]) -> str:
        a, b = x["a"], x["b"]
        assert isinstance(a, dict) and isinstance(b, dict)
        return f"{a['name']} port {a['port']} <-> {b['name']} port {b['port']} ({x['width']}x{x['speed']})"

    for title, key in (("nodes added", "nodes_added"), ("nodes removed", "nodes_removed")):
        for n in out[key]:
            assert isinstance(n, dict)
            click.echo(f"{title}: {n['name']} ({n['guid']})")
    for lk in out["links_added"]:
        assert isinstance(lk, dict)
        click.echo(f"+ {fmt(lk)}")
    for lk in out["links_removed"]:
        assert isinstance(lk, dict)
        click.echo(f"- {fmt(lk)}")
    for ch in out["links_changed"]:
        assert isinstance(ch, dict)
        click.echo(f"~ {fmt(ch['before'])} -> {ch['after']['width']}x{ch['after']['speed']}")
