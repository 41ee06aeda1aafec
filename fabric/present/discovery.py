"""Discovery for people: the fabric summary, its groups and the wiring anomalies, as a table."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fabric.app.discovery.discover import Discovery, summary
from fabric.present.table import ellipsis, table
from probes.hostfold import fold_names
from topology.chassis import Chassis
from topology.classify import GroupKind, Pod
from topology.model import Link

if TYPE_CHECKING:  # annotations only: `discover` imports neither the store nor a diff
    from fabric.app.discovery.topology_diff import TopologyDiff
    from fabric.store import TopologySummary


def render_discovery(d: Discovery, limit: int | None = 40) -> str:
    s = summary(d)
    cls = d.classification
    tiers = ", ".join(f"{n} {name}" for name, n in s["tiers"].items()) or "none"
    lines = [
        f"Fabric from {s['source']}",
        f"  {s['switches']} switches ({tiers}), {s['hcas']} HCAs on {s['hosts']} hosts, {s['links']} cables",
    ]
    pods = f" in {pods_phrase(cls.pods)}" if len(cls.pods) > 1 else ""
    if cls.rail_optimized:
        idx = ", ".join(map(str, cls.rail_indexes))
        lines.append(
            f"  rail-optimized: {s['rails']} rails (HCA indexes {idx}), {s['groups']} scalable units{pods}"
        )
    elif cls.group_kind is GroupKind.POD:
        alone = len(cls.groups) - len(cls.pods)
        lines.append(
            f"  not rail-optimized; {pods_phrase(cls.pods)}"
            + (f", {alone} {'leaf' if alone == 1 else 'leaves'} in no pod" if alone else "")
        )
    else:
        lines.append(f"  not rail-optimized; {s['groups']} leaf groups{pods}")
    lines += host_role_lines(d)
    lines += chassis_lines(d)
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
        lines += [group_table(d), ""]
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


GROUP_ROWS = 20  # groups listed in the table (--json has all)
CHASSIS_LINES = 10  # chassis listed one per line in the summary


def pods_phrase(pods: Sequence[Pod]) -> str:
    """``8 pods of 20 leaves``, ``3 pods of 18-20 leaves``, ``1 pod of 4 leaves``."""
    sizes = sorted(len(p.leaves) for p in pods)
    if not sizes:
        return "no pods"
    span = str(sizes[0]) if sizes[0] == sizes[-1] else f"{sizes[0]}-{sizes[-1]}"
    return (
        f"{len(sizes)} pod{'s' if len(sizes) != 1 else ''} of {span} {'leaf' if sizes[-1] == 1 else 'leaves'}"
    )


def chassis_line(box: Chassis) -> str:
    """``chassis 0x... (dir-1): 12 line boards, 6 fabric boards``."""

    def count(n: int, what: str) -> str:
        return f"{n} {what} board{'s' if n != 1 else ''}"

    parts = [count(len(box.line_boards), "line"), count(len(box.fabric_boards), "fabric")]
    if box.unsure_boards:
        parts.append(f"{len(box.unsure_boards)} boards neither cabling nor name tells as line or fabric")
    name = f" ({box.name})" if box.name else ""
    return f"chassis {box.guid}{name}: {', '.join(parts)}"


def chassis_lines(d: Discovery, limit: int = CHASSIS_LINES) -> list[str]:
    """One line per director chassis (the switches above are its boards), for the summary."""
    shown = [f"  {chassis_line(box)}" for box in d.chassis[:limit]]
    if len(d.chassis) > limit:
        shown.append(f"  … {len(d.chassis) - limit} more chassis (--json for all)")
    return shown


def group_table(d: Discovery, limit: int = GROUP_ROWS) -> str:
    """The groups: pods (with the upper switches they share), or scalable units / leaf groups
    (with the pod each is in where the fabric has several)."""
    cls = d.classification
    as_pods = cls.group_kind is GroupKind.POD
    pod_column = not as_pods and len(cls.pods) > 1
    rows = []
    for g in cls.groups[:limit]:
        names = [cls.nodes[x].name for x in g.leaves]
        uppers = cls.pods[g.pod].uppers if g.pod is not None else ()
        rows.append(
            (
                g.pod if as_pods else g.index,  # a leaf cabled to no upper switch is in no pod: -
                len(g.leaves),
                len(g.hosts),
                *(() if as_pods else (",".join(map(str, g.rails)) or "-",)),
                *((g.pod,) if pod_column else ()),
                *((len(uppers),) if as_pods else ()),
                ",".join(str(cls.uplinks.get(x, 0)) for x in g.leaves),
                " ".join(names[:4]) + (" …" if len(names) > 4 else ""),
            )
        )
    headers = (
        "pod" if as_pods else "group",
        "leaves",
        "hosts",
        *(() if as_pods else ("rails",)),
        *(("pod",) if pod_column else ()),
        *(("uppers",) if as_pods else ()),
        "uplinks/leaf",
        "leaf names",
    )
    out = table(headers, rows, 70)
    if len(cls.groups) > limit:
        out += f"\n  … {len(cls.groups) - limit} more {'pods' if as_pods else 'groups'} (--json for all)"
    return out


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
