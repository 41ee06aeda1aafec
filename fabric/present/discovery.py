"""Discovery for people: the fabric summary, its groups and the wiring anomalies, as a table."""

from __future__ import annotations

import time
from collections.abc import Sequence

from fabric.app.discover import Discovery, summary
from fabric.app.topology_diff import TopologyDiff
from fabric.present.overview import ellipsis
from fabric.present.table import table
from fabric.store import TopologySummary
from probes.inventory import fold_names
from topology.model import Link


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
    lines += host_role_lines(d)
    other = {k: v for k, v in s["roles"].items() if k not in ("compute", "service", "switch")}
    if other:
        lines.append("  other HCAs: " + ", ".join(f"{n} {k}" for k, n in other.items()))
    for sec in s["sections"][1:]:
        lines.append(
            f"  {sec['name']}: {sec['switches']} switches, {sec['leaves']} leaves, {sec['hosts']} hosts "
            "(cabled to the compute fabric; judged against its own peers)"
        )
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


def host_role_lines(d: Discovery, shown: int = 8) -> list[str]:
    """Hosts by role: the compute hosts folded, each service host with the rule and evidence of
    its role (a few, then how many more), and the service leaves (judged against their own kind)."""
    cls = d.classification
    by_role: dict[str, list[str]] = {}
    for host, r in cls.host_roles.items():
        by_role.setdefault(r.role, []).append(host)
    if not by_role:
        return []
    compute = by_role.get("compute", [])
    service = by_role.get("service", [])
    names = fold_names(compute)
    head = f"  hosts by role: {len(compute)} compute ({ellipsis(names, 60) if compute else 'none'})"
    if not service:
        rule = cls.host_roles[compute[0]].rule.value if compute else ""
        return [head + (f"; no service hosts ({rule})" if rule else "")]
    lines = [head + f", {len(service)} service:"]
    alike: dict[tuple[str, str], list[str]] = {}  # hosts with the same rule and evidence, folded
    for host in service:
        r = cls.host_roles[host]
        alike.setdefault((r.rule.value, r.reason), []).append(host)
    for (rule, reason), hosts in list(alike.items())[:shown]:
        lines.append(f"    {ellipsis(fold_names(hosts), 60)}: {rule}: {reason}")
    if len(alike) > shown:
        more = sum(len(hs) for hs in list(alike.values())[shown:])
        lines.append(f"    … {more} more service hosts (--json for all)")
    if cls.service_leaves:
        leaves = sorted(cls.nodes[g].name for g in cls.service_leaves)
        lines.append(
            f"  service leaves ({len(leaves)}, judged against each other only): "
            + ellipsis(", ".join(leaves), 100)
        )
    return lines


def render_topology_diff(td: TopologyDiff) -> str:
    """``before -> after``, then nodes added/removed and cables ``+`` added, ``-`` removed, ``~`` changed."""

    def cable(lk: Link) -> str:
        a, b = lk.a, lk.b
        return f"{td.name(a.guid)} port {a.port} <-> {td.name(b.guid)} port {b.port} ({lk.width}x{lk.speed})"

    d = td.diff
    lines = [f"{td.before} -> {td.after}"]
    if d.empty:
        return "\n".join([*lines, "no changes"])
    lines += [f"nodes added: {td.name(n.guid)} ({n.guid})" for n in d.nodes_added]
    lines += [f"nodes removed: {td.name(n.guid)} ({n.guid})" for n in d.nodes_removed]
    lines += [f"+ {cable(lk)}" for lk in d.links_added]
    lines += [f"- {cable(lk)}" for lk in d.links_removed]
    lines += [f"~ {cable(c.before)} -> {c.after.width}x{c.after.speed}" for c in d.links_changed]
    return "\n".join(lines)


def stored_snapshot_line(d: Discovery) -> str | None:
    """Which stored snapshot a command read (for stderr), None when it read none: e.g.
    ``using stored topology snapshot 3 "clean", taken 2025-03-31 10:02:11 from lab demo (...)``."""
    s = d.stored
    if s is None:
        return None
    label = f' "{s.label}"' if s.label else ""
    taken = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.taken_at))
    return (
        f"using stored topology snapshot {s.id}{label}, taken {taken} from {s.source} "
        f"({s.switches} switches, {s.hcas} HCAs, {s.links} cables)"
    )


def render_snapshot_list(rows: Sequence[TopologySummary]) -> str:
    """One row per stored topology snapshot: id, label, when, source and its counts."""
    return table(
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
