"""The JSON of ``ibfab probe read --json`` (and of a triage's runs): records, no sentences."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from fabric.app.triage.bisect import RoundRun, TriageReport
from fabric.app.triage.read import PerftestJudgement, ProbeReading, ReadReport
from probes.nccl_judge import NcclJudgement
from probes.nccl_model import BusbwVerdict


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else round(x, 4)


def busbw_to_dict(v: BusbwVerdict) -> dict[str, Any]:
    m = v.model
    return {
        "verdict": v.verdict,
        "unknown_because": v.why,
        "best_gbs": _num(v.best_gbs),
        "best_size": v.best_size,
        "ratio_of_bound": _num(v.ratio),
        "above_model": v.above_model,
        "judged_sizes": list(v.judged_sizes),
        "low_sizes": [{"size": s, "busbw": _num(bw)} for s, bw in v.low_sizes],
        "model": None
        if m is None
        else {
            "collective": m.collective,
            "nranks": m.nranks,
            "nodes": m.nodes,
            "ranks_per_node": m.ranks_per_node,
            "hcas_per_node": m.hcas_per_node,
            "hca_gbps": m.hca_gbps,
            "factor": _num(m.factor),
            "kind": m.kind,
            "bound_gbs": _num(m.bound_gbs),
            "leaf_bound_gbs": _num(m.leaf_bound_gbs),
            "expected_gbs": [_num(x) for x in m.expected_gbs],
            "low_under_gbs": _num(m.low_gbs),
            "fabric": m.source,
        },
    }


def nccl_to_dict(j: NcclJudgement) -> dict[str, Any]:
    r = j.result
    return {
        "collective": r.collective,
        "form": r.form,
        "nccl_tests_version": r.nccl_tests_version,
        "nccl_version": r.nccl_version,
        "nccl_library": r.nccl_library,
        "nccl_headers": r.nccl_headers,
        "nranks": r.nranks,
        "hosts": list(r.hosts),
        "ok": r.ok,
        "error": r.error,
        "failed": j.failed,
        "avg_busbw": _num(r.avg_busbw),
        "out_of_bounds": r.out_of_bounds,
        "separate_runs": r.separate_runs,
        "rows": [
            {
                "size": row.size,
                "count": row.count,
                "type": row.type,
                "redop": row.redop,
                "root": row.root,
                "busbw_out_of_place": _num(row.out_of_place.busbw),
                "busbw_in_place": _num(row.in_place.busbw),
                "wrong": [row.out_of_place.wrong, row.in_place.wrong],
            }
            for row in r.rows
        ],
        "findings": [asdict(f) for f in j.findings],
        "busbw": busbw_to_dict(j.busbw),
        "nccl_log": {
            "info_lines": r.environment.info_lines,
            "warns": [asdict(w) for w in r.warns],
            "settings": dict(r.environment.settings),
        },
    }


def perftest_to_dict(p: PerftestJudgement) -> dict[str, Any]:
    r = p.result
    return {
        "tool": r.tool,
        "ok": r.ok,
        "error": r.error,
        "failed": p.failed,
        "device": r.device,
        "link_type": r.link_type,
        "best_gbps": _num(p.best_gbps),
        "line_rate_gbps": p.line_rate_gbps,
        "slow_under_gbps": _num(p.bar_gbps),
        "slow": p.slow,
        "warnings": list(r.warnings),
    }


def reading_to_dict(r: ProbeReading) -> dict[str, Any]:
    return {
        "path": r.path,
        "state": r.state,
        "tool": r.tool,
        "error": r.error,
        "nccl": None if r.nccl is None else nccl_to_dict(r.nccl),
        "perftest": None if r.perftest is None else perftest_to_dict(r.perftest),
    }


def read_report_to_dict(report: ReadReport) -> dict[str, Any]:
    return {
        "fabric": None if report.facts is None else report.facts.source,
        "readings": [reading_to_dict(r) for r in report.readings],
    }


def _run_to_dict(r: RoundRun) -> dict[str, Any]:
    return {
        "test": r.label,
        "hosts": list(r.hosts),
        "rail": r.rail,
        "measured": _num(r.measured),
        "unit": r.unit,
        "slow_under": _num(r.bar),
        "slow": r.slow,
        "error": r.error,
        "not_judged": None
        if r.unjudged is None
        else {
            "reason": r.unjudged.reason,
            "said": r.unjudged.said,
            "lost": [{"host": x.host, "said": x.said, "slurm_state": x.state} for x in r.unjudged.lost],
        },
        "route": list(r.route),
        "busbw": None if r.verdict is None else busbw_to_dict(r.verdict),
    }


def triage_to_dict(report: TriageReport) -> dict[str, Any]:
    c = report.culprit
    return {
        "hosts": list(report.hosts),
        "backend": report.backend,
        "round_budget": report.budget,
        "rounds": [
            {
                "round": rnd.number,
                "kind": rnd.kind,
                "tests": [_run_to_dict(r) for r in rnd.runs],
                "ruled_out_hosts": list(rnd.ruled_out),
                "ruled_out": rnd.cleared_kind,
                "suspects": list(rnd.suspects),
            }
            for rnd in report.rounds
        ],
        "fabric_fine": report.fabric_fine,
        "whole_set_ran": report.whole_set_ran,
        "culprit": None
        if c is None
        else {
            "kind": c.kind,
            "hosts": list(c.hosts),
            "rail": c.rail,
            "hca": c.hca,
            "leaf": c.leaf,
            "reason": c.reason,
            "trained_below": None
            if c.trained_below is None
            else {"trained_gbps": c.trained_below[0], "design_gbps": c.trained_below[1]},
            "route": list(c.route),
            "evidence": [{"round": n, **_run_to_dict(r)} for n, r in c.evidence],
        },
        "also_slow": list(report.also_slow),
        "lost_nodes": [
            {
                "host": x.host,
                "round": x.round,
                "test": x.test,
                "said": x.said,
                "slurm_state": x.state,
                "action": "drain",
            }
            for x in report.lost
        ],
        "undecided": None
        if report.undecided is None
        else {
            "reason": report.undecided,
            "evidence": [{"round": n, **_run_to_dict(r)} for n, r in report.undecided_evidence],
        },
        "slurm_job_ids": list(report.slurm_jobs),
    }


__all__ = ["busbw_to_dict", "nccl_to_dict", "read_report_to_dict", "reading_to_dict", "triage_to_dict"]
