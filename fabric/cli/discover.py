"""``ibfab discover`` and ``ibfab topology diff``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from fabric.cli.options import ssh_options
from fabric.discovery import Discovery, Source, discover, summary
from fabric.remote import SshOptions
from fabric.render import table
from topology.errors import ParseError, UsageError
from topology.ibnetdiscover import decode_capture


def _source(input_path: str | None, ssh: str | None, lab: str | None) -> tuple[Source, str | None]:
    chosen = [x for x in (input_path, ssh, lab) if x]
    if len(chosen) > 1:
        raise UsageError("choose one of --input, --ssh, --lab")
    # Bytes, decoded by the parser's rule: line ends as saved (a terminal log's CR CR LF), UTF-16.
    if input_path == "-":
        return Source("stdin"), decode_capture(sys.stdin.buffer.read())
    if input_path:
        try:
            return Source("file", input_path), decode_capture(Path(input_path).read_bytes())
        except OSError as exc:
            raise ParseError("ibnetdiscover", input_path, 0, "", exc.strerror or str(exc)) from exc
    if ssh:
        return Source("ssh", ssh), None
    if lab:
        return Source("lab", lab), None
    return Source("local"), None


@click.command("discover")
@click.option("--input", "input_path", metavar="FILE", help="Saved ibnetdiscover output ('-' for stdin).")
@click.option("--ssh", metavar="HOST", help="Run ibnetdiscover on a management host over SSH.")
@click.option("--lab", metavar="NAME", help="Run the real ibnetdiscover against a lab fabric.")
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
    src, text = _source(input_path, ssh, lab)
    d = discover(src, text, SshOptions(inventory, known_hosts, accept_new_host_key, identity))
    snapshot_id = None
    if save:
        from fabric.store import Store

        with Store.open(db) as store:
            snapshot_id = store.save_topology(
                d.fabric, d.raw_text, tool="ibnetdiscover", source=d.source, label=label
            )
        click.echo(f"saved topology snapshot {snapshot_id}", err=True)
    if as_json:
        out = d.to_dict()
        if snapshot_id is not None:
            out["summary"]["snapshot_id"] = snapshot_id
        click.echo(json.dumps(out, indent=1))
        return
    click.echo(render_discovery(d, limit=None if all_anomalies else 40))


def render_discovery(d: Discovery, limit: int | None = 40) -> str:
    s = summary(d)
    cls = d.classification
    tiers = ", ".join(f"{n} {name}" for name, n in s["tiers"].items()) or "none"
    lines = [
        f"Fabric from {s['source']}",
        f"  {s['switches']} switches ({tiers}), {s['hcas']} HCAs on {s['hosts']} hosts, {s['links']} cables",
    ]
    if cls.rail_optimized:
        idx = ", ".join(map(str, cls.rail_indexes))
        lines.append(
            f"  rail-optimized: {s['rails']} rails (HCA indexes {idx}), {s['groups']} scalable units"
        )
    else:
        lines.append(f"  not rail-optimized; {s['groups']} leaf groups")
    for sec in s["sections"][1:]:
        lines.append(
            f"  {sec['name']}: {sec['switches']} switches, {sec['leaves']} leaves, {sec['hosts']} hosts "
            "(cabled to the compute fabric; judged against its own peers)"
        )
    other = {k: v for k, v in s["roles"].items() if k not in ("compute", "switch")}
    if other:
        lines.append("  other HCAs: " + ", ".join(f"{n} {k}" for k, n in other.items()))
    lines += [f"  note: {w}" for w in d.fabric.warnings]
    if d.tool_warnings:
        lines.append(f"  ibnetdiscover printed {len(d.tool_warnings)} warnings (nodes may be missing):")
        lines += [f"    {w}" for w in d.tool_warnings[:5]]
    lines.append("")
    if cls.groups:
        rows = []
        for g in cls.groups[:20]:
            leaves = [cls.nodes[x] for x in g.leaves]
            rows.append(
                (
                    g.index,
                    len(g.leaves),
                    len(g.hosts),
                    ",".join(map(str, g.rails)) or "-",
                    ",".join(str(cls.uplinks.get(x, 0)) for x in g.leaves),
                    " ".join(c.name for c in leaves[:4]) + (" …" if len(leaves) > 4 else ""),
                )
            )
        lines.append(table(("group", "leaves", "hosts", "rails", "uplinks/leaf", "leaf names"), rows, 70))
        if len(cls.groups) > 20:
            lines.append(f"  … {len(cls.groups) - 20} more groups (--json for all)")
        lines.append("")
    if not d.anomalies:
        lines.append("No wiring anomalies.")
    else:
        counts = ", ".join(f"{n} {k}" for k, n in s["anomalies"].items())
        lines.append(f"{len(d.anomalies)} anomalies: {counts}")
        shown = d.anomalies if limit is None else d.anomalies[:limit]
        lines.append(
            table(
                ("severity", "kind", "what to do"),
                [(a.severity.value, a.kind, a.message) for a in shown],
                200,
            )
        )
        if limit is not None and len(d.anomalies) > limit:
            lines.append(f"  … {len(d.anomalies) - limit} more (--all-anomalies or --json)")
    return "\n".join(lines)


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
