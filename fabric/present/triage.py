"""Text for ``ibfab probe read`` (and the runs ``ibfab triage`` shows): each saved run, its
network as NCCL's log tells it, and its bandwidth against the fabric, with the model and the
lines that show each fact."""

from __future__ import annotations

from collections.abc import Sequence

from fabric.app.triage.read import PerftestJudgement, ProbeReading, ReadReport
from probes.nccl_env import Evidence
from probes.nccl_judge import NcclJudgement, TransportFinding
from probes.nccl_model import BusbwModel, BusbwVerdict

_UNKNOWN_WHY = {
    "single_node": "a single node: its busbw is NVLink or PCIe, which the fabric does not describe (not network-bound)",
    "no_rows": "no results table",
    "small_sizes": "no size of 1 GiB or more (busbw still rises there: run with -e 8G)",
    "no_collective": "the output does not name its collective (give --collective)",
    "not_modelled": "no network model for this collective (gather, scatter, hypercube)",
    "no_fabric": "the fabric does not know these hosts (give --input/--lab/--snapshot, or --hcas and --rate)",
    "no_ranks": "the output does not say its hosts and ranks (give --hosts and --nranks)",
}
_COLLECTIVE_FACTOR = {
    "allreduce": "2(n-1)/n",
    "allgather": "(n-1)/n",
    "reducescatter": "(n-1)/n",
    "alltoall": "(n-1)/n",
}


def size_text(size: int) -> str:
    """``8589934592`` -> ``8 GiB``; sizes that are no power-of-two multiple stay in bytes."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def _hosts(hosts: Sequence[str]) -> str:
    from probes.inventory import fold_names

    return fold_names(list(hosts)) if hosts else "the run"


def _evidence(items: Sequence[Evidence], indent: str = "    ", limit: int = 3) -> list[str]:
    out = [f"{indent}{'line ' + str(e.lineno) + ': ' if e.lineno else ''}{e.text}" for e in items[:limit]]
    if len(items) > limit:
        out.append(f"{indent}... and {len(items) - limit} more")
    return out


def finding_line(f: TransportFinding) -> str:
    """One finding in words (FAILED when it fails the run)."""
    who = _hosts(f.hosts)
    mark = "FAILED: " if f.failed else ""
    if f.kind == "network":
        return (
            f"network: {who}: {f.network or 'unknown'} over {len(f.opened)} HCA port(s): {' '.join(f.opened)}"
        )
    if f.kind == "socket":
        over = f" ({', '.join(f.opened)})" if f.opened else ""
        why = "" if f.failed else " (one node: no data crossed the network)"
        return f"{mark}{who} ran over Socket{over}, not InfiniBand{why}"
    if f.kind == "no_ib_device":
        return f"{mark}NCCL found no IB device on {who}" + (
            "" if f.failed else " (no fabric says it has one)"
        )
    if f.kind == "fewer_hcas":
        missing = f"; not opened: {', '.join(f.missing)}" if f.missing else ""
        setting = f" (NCCL_IB_HCA={f.value})" if f.value else ""
        return f"{mark}{who} opened {len(f.opened)} of {f.expected} HCAs{setting}{missing}"
    if f.kind == "mixed_networks":
        return f"{mark}the hosts used different networks: {f.network}"
    if f.kind == "sockets_configured":
        return f"{mark}{f.value}: NCCL was told to use sockets" + (" across nodes" if f.failed else "")
    if f.kind == "gdr_off":
        return f"GPUDirect RDMA off on {who}: network channels go through host memory"
    if f.kind == "plugin":
        return f"network plugin on {who}: {f.value} (network {f.network or 'unknown'})"
    if f.kind == "network_unknown":
        if f.value == "json":
            return "network: not in a JSON report (its text with NCCL_DEBUG=INFO says which NCCL used)"
        return (
            "network: unknown (no NCCL INFO lines: run with NCCL_DEBUG=INFO to see which network NCCL used)"
        )
    if f.kind == "nccl_version":
        return f"NCCL {f.value}"
    return f"{mark}{f.kind} on {who}"


def model_line(m: BusbwModel) -> str:
    """How the expectation follows from the fabric."""
    from probes.nccl_model import collective_key

    key = collective_key(m.collective)
    factor = f"busbw = algbw x {m.factor:.3g}" + (
        f" ({_COLLECTIVE_FACTOR[key]}, n={m.nranks})" if key in _COLLECTIVE_FACTOR else " (1)"
    )
    hcas = f"{m.hcas_per_node} HCA(s) x {m.hca_gbps:g} Gb/s"
    if m.kind == "ring":
        how = f"each node sends through {hcas} = {m.bound_gbs:.1f} GB/s"
    elif m.kind == "alltoall":
        how = (
            f"each node's {hcas} shared by its {m.ranks_per_node} ranks, (n-1)/(g(n-g)) of the node's "
            f"{m.hcas_per_node * m.hca_gbps / 8:.1f} GB/s = {m.bound_gbs:.1f} GB/s"
        )
        if m.leaf_bound_gbs is not None:
            how += " (bound by the busiest leaf's uplinks)"
    else:
        how = f"the pair across nodes runs over one HCA: {m.hca_gbps:g} Gb/s = {m.bound_gbs:.1f} GB/s"
    return (
        f"model: {m.collective} over {m.nranks} ranks on {m.nodes} nodes ({m.ranks_per_node} per node), "
        f"{m.kind}: {how}; {factor}; fabric: {m.source}"
    )


def busbw_lines(v: BusbwVerdict) -> list[str]:
    if v.verdict == "unknown":
        lines = [f"busbw: unknown: {_UNKNOWN_WHY.get(v.why or '', v.why or '')}"]
        return lines + ([f"  {model_line(v.model)}"] if v.model is not None else [])
    assert v.model is not None and v.best_gbs is not None and v.best_size is not None
    m = v.model
    low, high = m.expected_gbs
    ratio = v.ratio or 0.0
    if v.verdict == "normal":
        above = (
            " (above the ring model: NVLS, tree or SHARP move fewer bytes over the network)"
            if v.above_model
            else ""
        )
        head = (
            f"busbw: normal: {v.best_gbs:.1f} GB/s at {size_text(v.best_size)}, {ratio:.0%} of the "
            f"{m.bound_gbs:.1f} GB/s bound{above}"
        )
    else:
        head = (
            f"busbw: LOW: {v.best_gbs:.1f} GB/s at best ({size_text(v.best_size)}), {ratio:.0%} of the "
            f"{m.bound_gbs:.1f} GB/s bound; a healthy run reaches {low:.1f}-{high:.1f}, low under {m.low_gbs:.1f}"
        )
    lines = [head, f"  {model_line(m)}"]
    if v.low_sizes:
        lines.append("  low at: " + ", ".join(f"{size_text(s)} {bw:.1f} GB/s" for s, bw in v.low_sizes))
    return lines


def _nccl_head(j: NcclJudgement) -> str:
    r = j.result
    parts = [r.collective or "collective unknown"]
    if r.nranks:
        parts.append(f"{r.nranks} ranks on {len(r.hosts)} host(s)" if r.hosts else f"{r.nranks} ranks")
    if r.nccl_tests_version:
        parts.append(f"nccl-tests {r.nccl_tests_version}")
    return ", ".join(parts)


def nccl_lines(j: NcclJudgement) -> list[str]:
    r = j.result
    lines = []
    if r.error:
        lines.append(f"FAILED: {r.error}")
    for f in j.findings:
        lines.append(finding_line(f))
        if f.failed or f.kind == "gdr_off":
            lines += _evidence(f.evidence)
    lines += busbw_lines(j.busbw)
    info, warns = r.environment.info_lines, len(r.warns)
    if info or warns:
        lines.append(f"NCCL log: {info} INFO line(s), {warns} WARN(s) (kept apart from the rows)")
    for w in r.warns[:3]:
        where = f" {w.location}" if w.location else ""
        lines.append(f"  WARN {w.host}:{w.pid} [{w.cuda_device}]{where}: {w.message}")
    if warns > 3:
        lines.append(f"  ... and {warns - 3} more WARN(s)")
    return lines


def perftest_lines(p: PerftestJudgement) -> list[str]:
    r = p.result
    lines = [f"FAILED: {r.error}"] if r.error else []
    head = [f"device {r.device}" if r.device else "", f"link {r.link_type}" if r.link_type else ""]
    if any(head):
        lines.append(", ".join(x for x in head if x))
    if p.best_gbps is not None:
        if p.line_rate_gbps is None:
            lines.append(
                f"bandwidth: {p.best_gbps:.1f} Gb/s at best (no line rate given: not judged; --line-rate)"
            )
        else:
            verdict = "SLOW" if p.slow else "normal"
            lines.append(
                f"bandwidth: {verdict}: {p.best_gbps:.1f} Gb/s at best, {p.best_gbps / p.line_rate_gbps:.0%} of "
                f"{p.line_rate_gbps:g} Gb/s (slow under {p.bar_gbps:.1f}: 93% of the 97% ib_write_bw reaches)"
            )
    for w in r.warnings[:3]:
        lines.append(f"warning: {w}")
    return lines


def render_reading(r: ProbeReading) -> str:
    state = r.state.upper() if r.state != "healthy" else "healthy"
    if r.nccl is not None:
        lines = [
            f"{r.path}: {state} ({r.tool}: {_nccl_head(r.nccl)})",
            *(f"  {x}" for x in nccl_lines(r.nccl)),
        ]
    elif r.perftest is not None:
        lines = [f"{r.path}: {state} ({r.tool})", *(f"  {x}" for x in perftest_lines(r.perftest))]
    else:
        lines = [f"{r.path}: UNREADABLE: {r.error}"]
    return "\n".join(lines)


def render_read(report: ReadReport) -> str:
    where = (
        f"fabric: {report.facts.source}"
        if report.facts is not None
        else "fabric: none known (no stored topology; give --input, --lab, --snapshot or --hcas/--rate): busbw not judged"
    )
    return "\n\n".join([where, *(render_reading(r) for r in report.readings)])


__all__ = ["busbw_lines", "finding_line", "model_line", "render_read", "render_reading", "size_text"]
