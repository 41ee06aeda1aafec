"""Text for people about twins: the twin brought up and how its discovery compares with the source."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fabric.advise.twin_engine import EngineChoice
    from fabric.app.twin.build import Twin
    from topology.twin_compare import TwinComparison


def engine_lines(choice: EngineChoice, routing: str) -> list[str]:
    """What the twin routes with and why, or that the site's engine is unknown."""
    if choice.known:
        lines = [f"routing: {routing} (from {choice.source})"]
    else:
        lines = [
            f"routing: the site's engine is unknown: {choice.unknown}",
            f"  the twin runs {routing} (OpenSM's default) for discovery only; no routing check rests on it",
        ]
    lines += [f"  evidence: {e}" for e in choice.evidence]
    return lines


def comparison_lines(cmp: TwinComparison) -> list[str]:
    some_explained = any(e for _, _, e in cmp.counts)
    head = (
        f"discovery of the twin equals the source: {cmp.nodes} nodes, {cmp.links} cables, {cmp.lids} LIDs"
        + (", but for what ibsim cannot show (below)" if some_explained else "")
        if cmp.equal
        else f"discovery of the twin DIFFERS from the source ({cmp.twin_nodes} of {cmp.nodes} nodes, "
        f"{cmp.twin_links} of {cmp.links} cables)"
    )
    lines = [head]
    for kind, n, explained in cmp.counts:
        if n > explained:
            lines.append(f"  {n - explained} {kind.replace('_', ' ')} difference(s) not explained")
        if explained:
            lines.append(f"  {explained} {kind.replace('_', ' ')} difference(s) explained by the simulator")
    for d in cmp.differences:
        if not d.explained:  # the explained ones are the notes' (what the simulator cannot hold)
            lines.append(f"    {d.what}: source {d.source}, twin {d.twin}")
    return lines


def twin_up_text(twin: Twin) -> str:
    verb = "up" if twin.built else "already up"
    lines = [
        f"twin {twin.name} of {twin.source} {verb} in {twin.seconds:.1f} s: "
        f"{twin.state.switches} switches, {twin.state.hcas} HCAs",
        *engine_lines(twin.engine, twin.routing),
        *comparison_lines(twin.comparison),
    ]
    lines += [f"note: {n}" for n in twin.notes]
    return "\n".join(lines)
