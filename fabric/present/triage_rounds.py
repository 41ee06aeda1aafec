"""Text for ``ibfab triage``: each round, what it ruled out, and the culprit with its evidence (or
that the fabric is fine and the problem is elsewhere)."""

from __future__ import annotations

from fabric.app.triage.bisect import Culprit, RoundRun, TriageReport, TriageRound
from fabric.app.triage.lost import LostNode
from probes.inventory import fold_names
from probes.labnccl import PlantedNode
from probes.nccl_model import LOW

_KIND = {
    "single-node": "single-node runs (each node alone: its GPUs over NVLink/PCIe)",
    "pairs": "ib_write_bw pairs on every rail, as a ring (every HCA and cable, both ways)",
    "split pairs": "the slow pair's ends, each against a host whose rail ran fine",
    "halves": "nccl-tests on each half of the suspects (a lone host joined by a cleared one)",
    "whole set": "nccl-tests on the whole set",
}


def _value(r: RoundRun) -> str:
    if r.unjudged is not None:
        if r.unjudged.lost:
            return f"not judged: {fold_names([x.host for x in r.unjudged.lost])} lost ({r.unjudged.said})"
        return f"not judged: did not run, for a reason not known ({r.unjudged.said})"
    if r.error:
        return f"failed: {r.error}"
    if r.measured is None:
        return "no result"
    bar = f", slow under {r.bar:.1f}" if r.bar is not None else ""
    return f"{r.measured:.1f} {r.unit} ({'SLOW' if r.slow else 'normal'}{bar})"


def _round_lines(rnd: TriageRound, limit: int) -> list[str]:
    slow = [r for r in rnd.runs if r.slow]
    unjudged = [r for r in rnd.runs if r.unjudged is not None]
    head = f"round {rnd.number}: {_KIND.get(rnd.kind, rnd.kind)}: {len(rnd.runs)} test(s), {len(slow) or 'none'} slow"
    if unjudged:
        head += f", {len(unjudged)} not judged"
    lines = [head]
    every = rnd.kind in ("halves", "whole set", "split pairs")
    shown = rnd.runs if every else slow
    for r in shown[:limit]:
        lines.append(f"  {r.label}: {_value(r)}")
    if len(shown) > limit:
        lines.append(f"  ... and {len(shown) - limit} more")
    if not every:  # a lost node's many tests (every pair, both ways, every rail) in one line
        groups: dict[tuple[str, ...], list[RoundRun]] = {}
        for r in unjudged:
            assert r.unjudged is not None
            groups.setdefault(tuple(x.host for x in r.unjudged.lost), []).append(r)
        for lost, runs in groups.items():
            if not lost:  # each failure of a reason not known, as it was said
                lines += [f"  {r.label}: {_value(r)}" for r in runs[:limit]]
                continue
            more = f"{len(runs)} test(s) with {fold_names(list(lost))}, first " if len(runs) > 1 else ""
            lines.append(f"  {more}{runs[0].label}: {_value(runs[0])}")
    if rnd.cleared_kind == "gpus":
        best = [r.measured for r in rnd.runs if r.measured is not None]
        lines.append(
            f"  ruled out: the GPUs of every node ({min(best):.1f}-{max(best):.1f} GB/s alone, each within "
            f"{LOW:.0%} of its peers)"
            if best
            else "  ruled out: nothing"
        )
    elif rnd.cleared_kind == "cables":
        rails = len({r.rail for r in rnd.runs})
        lines.append(f"  ruled out: every HCA and host cable on {rails} rail(s), both ways")
    if rnd.ruled_out:
        lines.append(f"  ruled out for the collective: {fold_names(list(rnd.ruled_out))}")
    if rnd.kind in ("halves", "whole set") and rnd.suspects:
        lines.append(f"  still suspect: {fold_names(list(rnd.suspects))}")
    return lines


def culprit_lines(c: Culprit) -> list[str]:
    """The culprit in words, then the tests that show it."""
    who = fold_names(list(c.hosts))
    if c.kind == "node" and c.reason == "single_node_slow":
        head = f"culprit: node {who}: its GPUs are slow alone (a GPU-bound node: throttled GPUs, a degraded NVLink)"
    elif c.kind == "node" and c.reason == "single_node_failed":
        head = f"culprit: node {who}: its run alone failed"
    elif c.kind == "node" and c.reason == "alone_with_cleared":
        head = (
            f"culprit: node {who}: a collective of it with cleared hosts only is low, while alone its GPUs and in "
            "pairs its HCAs and cables ran at rate: the path between its GPUs and HCAs (PCIe, GPUDirect RDMA)"
        )
    elif c.kind == "node":
        head = f"culprit: node {who}: the slow set's other hosts ran at rate without it"
    elif c.kind == "cable":
        leaf = f" to {c.leaf}" if c.leaf else ""
        how = (
            "both its pairs on that rail were slow"
            if c.reason == "both_ways"
            else "slow against a host whose rail ran fine, the other end fine"
        )
        head = f"culprit: the cable of {who} {c.hca or ''} (rail {c.rail}{leaf}): {how}"
        if c.trained_below is not None:
            head += f"; the fabric shows it trains at {c.trained_below[0]:g} Gb/s where its peers give {c.trained_below[1]:g}"
    elif c.kind == "route":
        route = f": {', '.join(c.route)}" if c.route else ""
        head = (
            f"culprit: the cables between {who} on rail {c.rail}{route} (each end ran fine with other hosts)"
        )
    elif c.kind == "across":
        head = (
            f"culprit: none alone: {who} is slow only together (each half ran at rate): the cables between the "
            "halves (spines) or the routing; localize with `ibfab sweep run --pattern rail-pairs`"
        )
    else:
        head = f"culprit: one of {who} (two hosts alone cannot tell which; triage them with a third host)"
    lines = [head, "  evidence:"]
    lines += [f"    round {n}: {r.label}: {_value(r)}" for n, r in c.evidence]
    return lines


def uncleared_line(report: TriageReport) -> str | None:
    """The one error line of a triage that did not clear the fabric (None: it did)."""
    if report.culprit is not None:
        return f"triage named a culprit: {report.culprit.kind} {', '.join(report.culprit.hosts)}"
    if report.lost:
        return f"triage lost node(s): {', '.join(x.host for x in report.lost)} (drain and check them)"
    if report.undecided is not None:
        return f"triage could not decide ({report.undecided}): nothing is blamed"
    if report.not_judged:
        return f"triage could not judge {len(report.not_judged)} test(s): nothing is blamed"
    return None


def cleared_line(lab: str, count: int) -> str:
    """What ``triage clear`` removed: slow and lost plants alike."""
    return f"lab {lab}: {count} planted node(s) removed (slow or lost)"


def planted_line(lab: str, node: PlantedNode) -> str:
    if node.kind == "lost":
        return f"lab {lab}: {node.host} planted lost from round {node.from_round} of a triage (simulated)"
    return f"lab {lab}: {node.host} planted slow ({node.kind}, {node.factor:g} of its rate; simulated)"


def lost_lines(x: LostNode) -> list[str]:
    """A node lost mid-triage: a node finding (never its cables), with what was said."""
    state = f"; Slurm state: {x.state}" if x.state else ""
    return [
        f"node {x.host}: LOST in round {x.round} (it stopped answering): drain it and check the node, "
        "not its cables; the triage went on without it",
        f"  evidence: round {x.round}: {x.test}: {x.said}{state}",
    ]


_UNDECIDED = {
    "unknown_failure": "a test did not run, for a reason that names no node: nothing is blamed",
    "suspects_lost": (
        "the slow set's hosts still answering ran at rate without the lost node: the slowness cannot be "
        "placed among them (it may have been the lost node's); nothing is blamed"
    ),
    "too_few_hosts": "fewer than two hosts still answer: nothing more can be tested",
    "budget": "the rounds allowed were spent before a verdict (a lost node costs a round)",
}


def undecided_lines(report: TriageReport) -> list[str]:
    lines = [f"undecided: {_UNDECIDED.get(report.undecided or '', report.undecided or '')}"]
    if report.undecided_evidence:
        lines.append("  evidence:")
        lines += [f"    round {n}: {r.label}: {_value(r)}" for n, r in report.undecided_evidence]
    return lines


def render_triage(report: TriageReport, limit: int = 8) -> str:
    lines = [
        f"triage of {fold_names(list(report.hosts))} ({len(report.hosts)} hosts, backend {report.backend}): "
        f"{len(report.rounds)} round(s) of at most {report.budget}"
    ]
    if report.slurm_jobs:
        jobs = ", ".join(report.slurm_jobs)
        lines.append(f"Slurm job {jobs}: its steps ran the tests (sacct -j {jobs} for their logs)")
    for rnd in report.rounds:
        lines += _round_lines(rnd, limit)
    for x in report.lost:
        lines += lost_lines(x)
    if report.culprit is not None:
        lines += culprit_lines(report.culprit)
    elif report.undecided is not None:
        lines += undecided_lines(report)
    elif report.not_judged and not report.lost:
        lines.append(
            f"the tests judged ran at the rate the fabric should give, but {len(report.not_judged)} test(s) did "
            "not run, for a reason not known (above): nothing is blamed, and the fabric is not cleared"
        )
    elif report.lost:
        lines.append(
            f"the hosts still answering ran at the rate the fabric should give (without "
            f"{fold_names([x.host for x in report.lost])}, which could not be judged)"
        )
    elif report.whole_set_ran:
        lines.append(
            "the fabric is fine: every node's GPUs, every HCA and cable, and the whole set ran at the rate the "
            "fabric should give; the slowness is elsewhere (the job, its placement, its NCCL settings, storage)"
        )
    else:
        lines.append(
            "the fabric is fine: every node's GPUs, every HCA and cable, and every host in a collective with others "
            "ran at the rate the fabric should give (the whole set did not run as one within the round budget); "
            "the slowness is elsewhere"
        )
    if report.also_slow:
        lines.append(f"also slow (not followed): {', '.join(report.also_slow[:6])}")
    return "\n".join(lines)


__all__ = [
    "culprit_lines",
    "lost_lines",
    "planted_line",
    "render_triage",
    "uncleared_line",
    "undecided_lines",
]
