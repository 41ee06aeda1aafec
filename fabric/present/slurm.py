"""Slurm for people: the job a sweep ran as, the hosts it did not get, drains and resumes."""

from __future__ import annotations

import time
from collections.abc import Sequence

from fabric.app.drains.drain import DrainPlan, ResumePlan
from fabric.app.sweeps.sweep_slurm import SlurmSweepReport
from fabric.present.table import table
from fabric.store import AuditEntry
from probes.inventory import fold_names
from probes.slurm_parse import Drain


def render_slurm_sweep(report: SlurmSweepReport, limit: int = 20) -> str:
    """The job line, then every host not swept and every pair not measured, with Slurm's reason."""
    m = report.node_map
    lines = [
        f"slurm job {report.job_id} ({report.job_name}) on {fold_names(report.nodes)}: released",
    ]
    for u in report.not_given:
        lines.append(f"  not swept: {m.label(u.host)}: {u.why}")
    for node, why in report.lost.items():
        lines.append(f"  lost during the sweep: {m.label(node)}: {why}")
    if report.unmeasured:
        lines.append(f"  {len(report.unmeasured)} pair(s) not measured (not counted as slow):")
        for pair in report.unmeasured[:limit]:
            lines.append(f"    {pair.probe.client.label} -> {pair.probe.server.label}: {pair.why}")
        if len(report.unmeasured) > limit:
            lines.append(f"    ... {len(report.unmeasured) - limit} more (--json lists them all)")
    return "\n".join(lines)


def render_drain_plan(plan: DrainPlan) -> str:
    lines = []
    for d in plan.drains:
        who = d.node if d.node == d.host else f"{d.node} (fabric host {d.host})"
        lines.append(f"drain {who}: {d.finding}")
        lines += [f"  evidence: {e}" for e in d.evidence]
        lines.append(f"  slurm now: {d.state or 'unknown'}")
        if d.skip:
            lines.append(f"  skip: {d.skip}")
            continue
        lines.append(f"  [slurm apply] {d.command}")
        lines.append(f"  [slurm undo] {d.undo}   (ibfab drain undo AUDIT_ID, after a clean re-test window)")
    return "\n".join(lines)


def render_resume_plan(plan: ResumePlan) -> str:
    state = "passed" if plan.window_passed else "NOT passed"
    lines = [
        f"resume {plan.entry.target} (drain audit {plan.entry.id}, by {plan.entry.user})",
        f"  slurm now: {plan.state}: {plan.slurm_reason}",
        f"  [slurm apply] {plan.command}",
        f"  drained {plan.age_seconds / 60:.0f} min ago; re-test window of {plan.window_seconds / 60:g} min {state}",
    ]
    if not plan.retests:
        lines.append(f"  no sweep has measured {plan.host} since the drain")
    for r in plan.retests:
        verdict = "clean" if not r.failed else f"{len(r.failed)} failed"
        lines.append(f"  re-test: sweep {r.sweep_id}: {r.pairs} pair(s) with {plan.host}, {verdict}")
        lines += [f"    {f}" for f in r.failed[:5]]
    return "\n".join(lines)


def render_drains(audited: Sequence[AuditEntry], now: Sequence[Drain]) -> str:
    """Open ibfab drains from the audit log, then every node Slurm reports drained or down."""
    lines = []
    if audited:
        rows = [
            (e.id, e.target, time.strftime("%Y-%m-%d %H:%M", time.localtime(e.time)), e.user) for e in audited
        ]
        lines.append(table(("AUDIT", "NODE", "DRAINED", "BY"), rows))
    else:
        lines.append("no open drain made by ibfab")
    if now:
        lines.append("slurm (sinfo -R):")
        lines.append(
            table(
                ("NODE", "STATE", "SINCE", "BY", "REASON"),
                [(d.node, d.state, d.when, d.user, d.reason) for d in now],
            )
        )
    else:
        lines.append("slurm: no node drained or down")
    return "\n".join(lines)


__all__ = ["render_drain_plan", "render_drains", "render_resume_plan", "render_slurm_sweep"]
