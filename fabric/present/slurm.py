"""Slurm for people: the job a sweep ran as, the hosts it did not get, drains and resumes."""

from __future__ import annotations

from fabric.app.sweep_slurm import SlurmSweepReport
from probes.inventory import fold_names


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


__all__ = ["render_slurm_sweep"]
