"""Text for ``ibfab probe nccl``: the runs of an nccl-tests sweep, judged against the line rate."""

from __future__ import annotations

from fabric.app.sweeps.nccl import NcclReport
from fabric.present.table import table
from probes.nccl_run import expectation


def render_nccl(report: NcclReport) -> str:
    """Each run's busbw per size, average, out-of-bounds values, warnings, error and verdict,
    under the expectation from the line rate (or the reason there is none)."""
    lines = [
        f"nccl sweep {report.sweep_id}: {report.plan.binary} on {report.hosts} "
        f"({report.plan.launcher} via {report.head}), {len(report.runs)} run(s)"
    ]
    if report.line_rate_gbps is not None:
        low, high, floor = expectation(report.line_rate_gbps)
        lines.append(
            f"expected at {report.line_rate_gbps:g} Gb/s ({report.line_rate_from}): {low:g}-{high:g} GB/s busbw per NIC;"
            f" below expectation under {floor:g} GB/s"
        )
    else:
        lines.append(
            "no line rate known (give --line-rate or store a topology): no comparison with expectations"
        )
    for r in report.runs:
        lines.append(f"== {r.job.label}: {'ok' if r.ok else 'FAILED'} ({r.seconds:.1f} s)")
        res = r.result
        if res is not None and res.rows:
            rows = [
                (row.size, f"{row.out_of_place.busbw:.2f}", f"{row.in_place.busbw:.2f}") for row in res.rows
            ]
            lines.append(table(("SIZE", "BUSBW OOP GB/s", "BUSBW IP GB/s"), rows))
        if res is not None and res.avg_busbw is not None:
            per_nic = r.busbw_per_nic
            nic = "" if per_nic is None or r.job.nics_per_node == 1 else f", {per_nic:.2f} GB/s per NIC"
            lines.append(f"avg busbw {res.avg_busbw:.2f} GB/s{nic}")
        if res is not None and res.out_of_bounds is not None:
            lines.append(f"out of bounds values: {res.out_of_bounds}")
        for w in [] if res is None else res.warns[:5]:
            lines.append(f"WARN {w.host}: {w.message}")
        if r.error:
            lines.append(f"error: {r.error}")
        verdict = report.verdict(r)
        if verdict is not None:
            lines.append(f"verdict: {verdict}")
    return "\n".join(lines)
