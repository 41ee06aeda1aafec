"""Sweeps for people: the plan's rounds and coverage, the suspect cables, a stored sweep's report."""

from __future__ import annotations

from collections.abc import Sequence

from fabric.app.sweeps.sweep import ShownSweep
from fabric.present.table import table
from probes.localize import Suspect, final_results
from probes.pairs import PairResult
from probes.plan import SweepPlan
from topology.model import Guid, Link

ROUNDS_SHOWN = 40
UNCOVERED_SHOWN = 10
UNROUTABLE_SHOWN = 5


def _cut(shown: int, total: int, what: str) -> list[str]:
    """The line that says a list was cut short, and how to see all of it."""
    return [f"({shown} of {total} {what} shown; --all)"] if total > shown else []


def render_plan(plan: SweepPlan, names: dict[Guid, str], *, show_all: bool = False) -> str:
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
    uncovered = cov.uncovered if show_all else cov.uncovered[:UNCOVERED_SHOWN]
    for lk in uncovered:
        lines.append(
            f"  not crossed: {names.get(lk.a.guid, lk.a.guid)}/{lk.a.port} - {names.get(lk.b.guid, lk.b.guid)}/{lk.b.port}"
        )
    lines += _cut(len(uncovered), len(cov.uncovered), "cables not crossed")
    unroutable = cov.unroutable if show_all else cov.unroutable[:UNROUTABLE_SHOWN]
    for msg in unroutable:
        lines.append(f"  unroutable: {msg}")
    lines += _cut(len(unroutable), len(cov.unroutable), "unroutable pairs")
    per_round = cov.per_round if show_all else cov.per_round[:ROUNDS_SHOWN]
    rows = [(r.round + 1, r.probes, r.cables, ",".join(map(str, r.rails))) for r in per_round]
    lines.append(table(("ROUND", "PROBES", "CABLES", "RAILS"), rows))
    lines += _cut(len(per_round), len(cov.per_round), "rounds")
    lines += [f"note: {n}" for n in plan.notes]
    return "\n".join(lines)


def _cable(lk: Link, names: dict[Guid, str]) -> str:
    a, b = lk.a, lk.b
    return f"{names.get(a.guid, a.guid)}/{a.port} - {names.get(b.guid, b.guid)}/{b.port}"


def render_verdict(
    results: Sequence[PairResult],
    *,
    retest_passes: int,
    followup_probes: int,
    efficiency: float | None,
    tie: Sequence[Suspect],
    unexplained: Sequence[PairResult],
    names: dict[Guid, str],
    limit: int = 5,
) -> str:
    """What the sweep found before the suspect table: slow pairs, re-tests, follow-ups, a tie left."""
    finals = final_results(results)
    bad = [r for r in finals if not r.ok]
    slow = sum(1 for r in bad if r.gbps is not None)
    eff = f"; healthy pairs reach {efficiency:.0%} of their route's rate" if efficiency is not None else ""
    lines = [
        f"{len(finals)} pairs: {slow} slow and {len(bad) - slow} failed on their last attempt "
        f"(slow: under 93% of what the route should give in its round){eff}"
    ]
    if retest_passes:
        lines.append(f"re-tests: {retest_passes} pass(es), halving concurrency down to one probe at a time")
    if followup_probes or tie:
        left = (
            "tie remains between "
            + " and ".join(_cable(s.link, names) for s in tie)
            + ": no probe tried crosses one without the other"
            if tie
            else "no tie remains"
        )
        lines.append(f"follow-ups: {followup_probes} probe(s) run to separate tied links; {left}")
    if unexplained:
        shown = ", ".join(f"{r.client.label} -> {r.server.label}" for r in unexplained[:limit])
        more = f" and {len(unexplained) - limit} more" if len(unexplained) > limit else ""
        lines.append(
            f"{len(unexplained)} slow or failed pair(s) cross no suspect link (a fast pair crossed "
            f"every cable of their route, or no route is known): {shown}{more}"
        )
    return "\n".join(lines)


def render_suspects(
    suspects: tuple[Suspect, ...] | list[Suspect], names: dict[Guid, str], limit: int = 10
) -> str:
    if not suspects:
        return "no suspect links: no cable carried only slow pairs"
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


def shown_verdict(shown: ShownSweep) -> str:
    """:func:`render_verdict` of a stored sweep."""
    return render_verdict(
        shown.results,
        retest_passes=shown.retest_passes,
        followup_probes=shown.followup_probes,
        efficiency=shown.efficiency,
        tie=shown.tie,
        unexplained=shown.unexplained,
        names=shown.names,
    )


def sweep_report(shown: ShownSweep) -> str:
    """Slow and failed pairs and the ranked suspect links of a stored sweep (``ibfab sweep show``)."""
    head = f"{len(shown.results)} pair results\n{shown_verdict(shown)}"
    return f"{head}\nsuspect links (localization):\n{render_suspects(shown.suspects, shown.names)}"
