"""The overview as text: the TUI's overview panels and ``ibfab tui``'s no-terminal report share
:func:`overview_sections`."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fabric.app.readmodel import LinkRow, Overview


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
    health = "  ".join(f"{k}: {v}" for k, v in ov.links_by_status.items()) + f"\n{ov.health_note}"
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
    alerts = "\n".join(ov.alerts) or "none"
    return [
        ("FABRIC", fabric),
        ("HEALTH (links by status)", health),
        ("WORST LINKS", worst),
        ("LAST RUNS", times),
        (f"ALERTS ({len(ov.alerts)})", alerts),
    ]


def link_text(r: LinkRow) -> str:
    return f"{r.a_name}/{r.a_port} - {r.b_name}/{r.b_port}"


def when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"
