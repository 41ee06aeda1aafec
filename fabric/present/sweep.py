"""Sweeps for people: the plan's rounds and coverage, the suspect cables, a stored sweep's report."""

from __future__ import annotations

from fabric.app.sweep import ShownSweep
from fabric.present.table import table
from probes.localize import Suspect
from probes.plan import SweepPlan
from topology.model import Guid


def render_plan(plan: SweepPlan, names: dict[Guid, str]) -> str:
    cov = plan.coverage
    how = "from routes" if cov.from_routes else "possible, from cabling (no routes)"
    lines = [
        f"pattern {plan.pattern}: {len(plan.probes)} probes in {plan.rounds} rounds (lower bound {plan.lower_bound}: {plan.bound_reason})",
        f"leaf-spine cables crossed: {cov.cables_covered}/{cov.cables_total} ({how}); rails {len(cov.rails_covered)}/{len(cov.rails_total)}",
    ]
    if cov.short_leaves:
        lines.append(
            f"leaves with fewer probe ends than uplinks: {', '.join(names.get(g, g) for g in cov.short_leaves)}"
        )
    for lk in cov.uncovered[:10]:
        lines.append(
            f"  not crossed: {names.get(lk.a.guid, lk.a.guid)}/{lk.a.port} - {names.get(lk.b.guid, lk.b.guid)}/{lk.b.port}"
        )
    for msg in cov.unroutable[:5]:
        lines.append(f"  unroutable: {msg}")
    rows = [(r.round + 1, r.probes, r.cables, ",".join(map(str, r.rails))) for r in cov.per_round[:40]]
    lines.append(table(("ROUND", "PROBES", "CABLES", "RAILS"), rows))
    lines += [f"note: {n}" for n in plan.notes]
    return "\n".join(lines)


def render_suspects(
    suspects: tuple[Suspect, ...] | list[Suspect], names: dict[Guid, str], limit: int = 10
) -> str:
    if not suspects:
        return "no suspect links: no slow pair"
    rows = []
    for s in suspects[:limit]:
        a, b = s.link.a, s.link.b
        rows.append(
            (
                f"{names.get(a.guid, a.guid)}/{a.port}",
                f"{names.get(b.guid, b.guid)}/{b.port}",
                f"{s.score:.2f}",
                len(s.slow_pairs),
                len(s.fast_pairs),
                s.reason,
            )
        )
    return table(("END A", "END B", "SCORE", "SLOW", "FAST", "WHY"), rows)


def sweep_report(shown: ShownSweep) -> str:
    """Slow and failed pairs and the ranked suspect links of a stored sweep (``ibfab sweep show``)."""
    bad = [r for r in shown.results if not r.ok]
    head = f"{len(shown.results)} pair results, {len(bad)} slow or failed"
    return f"{head}\nsuspect links (localization):\n{render_suspects(shown.suspects, shown.names)}"
