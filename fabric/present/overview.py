"""The overview as text: the TUI's overview panels and ``ibfab tui``'s no-terminal report share
:func:`overview_sections`."""

from __future__ import annotations

from fabric.app.readmodel.views import SEVERITIES, Alert, LinkRow, Overview
from fabric.core.units import human_duration, utc_time
from fabric.present.table import ellipsis

WORST_PER_SEVERITY = 3  # alerts listed under each severity on the overview


def overview_report(ov: Overview) -> str:
    """The overview as plain text (``ibfab tui`` without a terminal prints this)."""
    return "\n\n".join(f"{title}\n{body}" for title, body in overview_sections(ov))


def overview_sections(ov: Overview) -> list[tuple[str, str]]:
    """(title, text) blocks shared by the TUI's overview panels and the plain report."""
    s, f = ov.state, ov.fabric
    if f:
        tiers = ", ".join(f"{n} {t}" for t, n in dict(f.get("tiers", {})).items())  # type: ignore[call-overload]
        fabric = (
            f"source {f.get('source')}\nswitches {f.get('switches')} ({tiers})\n"
            f"hosts {f.get('hosts')}  HCAs {f.get('hcas')}  links {f.get('links')}\n"
            f"rails {f.get('rails')} ({'rail-optimized' if f.get('rail_optimized') else 'not rail-optimized'})"
            + (
                f"  pods {f.get('pods')}"
                if f.get("group_kind") == "pod"
                else f"  groups {f.get('groups')}"
                + (f" in {f.get('pods')} pods" if _more_than_one(f.get("pods")) else "")
            )
        )
        fabric += "".join(
            f"\n{line}" for line in chassis_summary_lines(f.get("chassis"), f.get("chassis_boards"))
        )
        fabric += "".join(f"\n{line}" for line in section_lines(f.get("sections")))
        fabric += "".join(f"\n{line}" for line in note_lines(f.get("parse_warnings")))
    else:
        fabric = "no topology stored yet (run: ibfab discover --save)"
    health = "  ".join(f"{k}: {v}" for k, v in ov.links_by_status.items()) + f"\n{health_note(ov)}"
    worst = (
        "\n".join(
            f"{r.status.upper():8} {r.score if r.score is not None else '-':>3}  {link_text(r)}  {ellipsis('; '.join(r.reasons), 80)}"
            for r in ov.worst
        )
        or "no link at watch or worse"
    )
    times = (
        f"topology   {when(s.topology.taken_at) if s.topology else 'never'}"
        f"{f' (#{s.topology.id}, {s.topologies} stored)' if s.topology else ''}\n"
        f"collection {when(s.latest_snapshot.taken_at) if s.latest_snapshot else 'never'}"
        f"{f' (snapshot #{s.latest_snapshot.id}, {s.snapshots} stored)' if s.latest_snapshot else ''}\n"
        f"sweep      {when(s.last_sweep.started) + ' ' + s.last_sweep.pattern if s.last_sweep else 'never'}"
    )
    return [
        ("FABRIC", fabric),
        ("HEALTH (links by status)", health),
        ("WORST LINKS", worst),
        ("LAST RUNS", times),
        (f"ALERTS ({len(ov.alerts)})", alerts_text(ov)),
    ]


def alerts_text(ov: Overview, per_severity: int = WORST_PER_SEVERITY) -> str:
    """The count per severity (discovery anomalies and cables at watch or worse), then the worst
    few of each severity, one line each."""
    if not ov.has_topology:
        return "none (no topology stored yet)"
    counts = ov.alerts_by_severity()
    lines = ["  ".join(f"{s.value}: {counts[s]}" for s in SEVERITIES)]
    if not ov.alerts:
        lines.append("no anomaly and no cable at watch or worse")
    for severity in SEVERITIES:
        mine = [a for a in ov.alerts if a.severity is severity]
        lines += [alert_line(a) for a in mine[:per_severity]]
        if len(mine) > per_severity:
            lines.append(f"  … {len(mine) - per_severity} more {severity.value} (e: anomalies)")
    return "\n".join(lines)


def alert_line(a: Alert, width: int = 160) -> str:
    """``CRITICAL rail_miswire dgx-0002/mlx5_1: message`` (cut with an ellipsis at ``width``)."""
    return ellipsis(f"{a.severity.value.upper():8} {a.kind}: {a.element}: {a.message}", width)


def section_lines(sections: object) -> list[str]:
    """The side groups of a fabric (management, storage...) beside the compute fabric, one line
    each; nothing for a fabric that is one section."""
    if not isinstance(sections, list) or len(sections) < 2:
        return []
    return [
        f"{s['name']}: {s['switches']} switches ({s['leaves']} leaves), {s['hosts']} hosts, {s['hcas']} HCAs"
        for s in sections
    ]


def _more_than_one(n: object) -> bool:
    return isinstance(n, int) and n > 1


def chassis_summary_lines(chassis: object, boards: object) -> list[str]:
    """``chassis 4: 48 line boards, 24 fabric boards`` (summary ``chassis``, ``chassis_boards``);
    nothing for a fabric without director chassis."""
    if not isinstance(chassis, int) or not chassis or not isinstance(boards, dict):
        return []
    return [
        f"chassis {chassis}: {boards.get('line', 0)} line boards, {boards.get('fabric', 0)} fabric boards"
        + (f", {boards['unsure']} boards not told apart" if boards.get("unsure") else "")
    ]


def note_lines(notes: object, limit: int = 5) -> list[str]:
    """What the parser noted about the capture (``ibfab discover`` prints the same notes)."""
    if not isinstance(notes, list) or not notes:
        return []
    more = [f"… {len(notes) - limit} more notes (ibfab discover)"] if len(notes) > limit else []
    return [f"note: {n}" for n in notes[:limit]] + more


def health_note(ov: Overview) -> str:
    """Where the health figures come from, or what to run to get them."""
    if not ov.has_topology:
        return "no topology stored yet (run: ibfab discover --save)"
    if ov.health is None:
        return "no counter snapshots yet (run: ibfab counters collect)"
    h = ov.health
    if h.report.summary.snapshots < 2:  # no rate from one reading: its "ok" judges nothing
        return (
            f"one counter reading only (snapshot {h.snapshot_id}): error and traffic rates need two "
            "(run: ibfab counters collect again)"
        )
    return f"health over {human_duration(h.now - h.since)} ending at snapshot {h.snapshot_id}"


def link_text(r: LinkRow) -> str:
    return r.cable


def when(t: float) -> str:
    return utc_time(t)
