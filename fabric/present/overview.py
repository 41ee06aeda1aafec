"""The overview as text: the TUI's overview panels and ``ibfab tui``'s no-terminal report share
:func:`overview_sections`."""

from __future__ import annotations

import time

from fabric.app.views import LinkRow, Overview
from fabric.core.units import human_duration


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
            f"  groups {f.get('groups')}"
        )
    else:
        fabric = "no topology stored yet (run: ibfab discover --save)"
    health = "  ".join(f"{k}: {v}" for k, v in ov.links_by_status.items()) + f"\n{health_note(ov)}"
    worst = (
        "\n".join(
            f"{r.status.upper():8} {r.score if r.score is not None else '-':>3}  {link_text(r)}  {'; '.join(r.reasons)[:80]}"
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
    listed = alerts(ov)
    alert_text = "\n".join(listed) or "none"
    return [
        ("FABRIC", fabric),
        ("HEALTH (links by status)", health),
        ("WORST LINKS", worst),
        ("LAST RUNS", times),
        (f"ALERTS ({len(listed)})", alert_text),
    ]


def alerts(ov: Overview) -> list[str]:
    """Critical links, then discovery's error and critical anomalies, one line each."""
    out = [
        f"CRITICAL link {link_text(r)}: {'; '.join(r.reasons) or 'score ' + str(r.score)}"
        for r in ov.worst
        if r.status == "critical"
    ]
    out += [f"{a.severity.value.upper()} {a.kind}: {a.message}" for a in ov.anomalies]
    return out


def health_note(ov: Overview) -> str:
    """Where the health figures come from, or what to run to get them."""
    if not ov.has_topology:
        return "no topology stored yet (run: ibfab discover --save)"
    if ov.health is None:
        return "no counter snapshots yet (run: ibfab counters collect)"
    h = ov.health
    return f"health over {human_duration(h.now - h.since)} ending at snapshot {h.snapshot_id}"


def link_text(r: LinkRow) -> str:
    return f"{r.a_name}/{r.a_port} - {r.b_name}/{r.b_port}"


def when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))
