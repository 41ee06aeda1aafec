"""Text for people about twins: the twin brought up and how its discovery compares with the source."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fabric.advise.twin_engine import EngineChoice
    from fabric.app.twin.build import Twin
    from fabric.app.twin.check import TwinCheck
    from fabric.app.twin.jobs import JobsTouched
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


# -- a plan checked on the twin ---------------------------------------------------------------------
def _hops(path: Sequence[Mapping[str, Any]], names: Mapping[str, str]) -> str:
    out = []
    for h in path:
        out.append(f"{names.get(h['switch'], h['switch'])} [{h['port']}]")
    last = path[-1] if path else None
    if last is not None:
        out.append(names.get(last["to"], last["to"]) if last["to"] else "(no cable)")
    return " -> ".join(out)


def _channel(c: Mapping[str, Any] | None, names: Mapping[str, str]) -> str:
    if c is None:
        return "none"
    return f"{names.get(c['switch'], c['switch'])} [{c['port']}] -> {names.get(c['to'], c['to'])}: {c['routes']} routes"


def routing_check_lines(check: TwinCheck, names: Mapping[str, str]) -> list[str]:
    """The twin's verdict on a plan, each issue with its evidence; a pass is one line."""
    d = check.delta
    engine = check.twin.routing + (f", from {check.engine.source}" if check.engine.source else "")
    before = d.hottest_before.routes if d.hottest_before else 0
    after = d.hottest_after.routes if d.hottest_after else 0
    head = f"routing check on twin {check.twin.name} ({engine})"
    if not check.issues:
        return [
            f"{head}: pass: no destination lost, no credit loop opened, {check.after.engine or 'the SM'} "
            f"routed as before; hottest link {before} -> {after} routes"
        ]
    lines = [f"{head}: {check.verdict.value.upper()}", f"  taken out on the twin: {', '.join(check.changes)}"]
    for issue in check.issues:
        ev = issue.evidence
        tag = issue.verdict.value.upper()
        if issue.kind == "unreachable":
            lines.append(
                f"  {tag} {ev['destinations']} destination(s) unreachable after the change: "
                f"{ev['routes']} host route(s) lost"
            )
            for x in ev["lost"][:5]:
                dest = names.get(x["destination"], x["destination"])
                lines.append(
                    f"       LID {x['lid']} ({dest}): {x['routes']} route(s), {x['reason']}: {_hops(x['path'], names)}"
                )
        elif issue.kind == "credit_loop":
            loop = ev["loop"]
            lines.append(
                f"  {tag} a credit loop opened: {len(loop['cycle'])} links wait on each other in a ring "
                f"(routes to LIDs {', '.join(map(str, loop['witness_lids']))})"
            )
            lines.append(f"       {_hops(loop['cycle'], names)}")
        elif issue.kind == "engine_fallback":
            failed = ", ".join(ev["failed"]) or ev["engine_before"]
            lines.append(
                f"  {tag} the SM's engine fell back: {failed} could not route the fabric after the change, "
                f"{ev['engine_after']} configured the switches (was {ev['engine_before']})"
            )
            lines += [f"       log: {ln}" for ln in ev["log_lines"]]
        elif issue.kind == "load_rise":
            lines.append(
                f"  {tag} the hottest link's load rises: before {_channel(ev['hottest_before'], names)}; "
                f"after {_channel(ev['hottest_after'], names)}"
            )
    lines.append(
        f"  hottest link {before} -> {after} routes; the SM rewrote {d.entries_changed} table entries "
        f"({d.used_changed} on the hosts' routes)"
    )
    if not check.restored:
        lines.append(
            f"  note: a port of twin {check.twin.name} did not come back; it is rebuilt before the next check"
        )
    return lines


def jobs_lines(touched: JobsTouched) -> list[str]:
    """The running jobs a change touches, each with its id, user, node count and why."""
    what = []
    if touched.cables:
        what.append(f"{touched.cables} switch-to-switch cable(s)")
    if touched.hosts:
        what.append(f"host(s) {', '.join(touched.hosts)}")
    head = f"running jobs the change touches ({' and '.join(what) or 'nothing'} taken out): "
    if not touched.jobs:
        lines = [head + f"none of {touched.running} running job(s)"]
    else:
        lines = [head + f"{len(touched.jobs)} of {touched.running}"]
        for j in touched.jobs:
            why = []
            if j.on_hosts:
                why.append(f"runs on {', '.join(j.on_hosts)}")
            if j.routes:
                why.append(f"{j.routes} route(s) between its nodes cross the cable(s)")
            lines.append(
                f"  job {j.job_id} {j.name!r}: user {j.user}, {j.node_count} node(s) ({j.nodes}): {'; '.join(why)}"
            )
    if touched.cables and touched.routes_known:
        lines.append(f"  routes from {touched.routes_from}")
    elif touched.cables:
        lines.append(f"  {touched.routes_from}")
    return lines
