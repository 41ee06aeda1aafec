"""``ibfab probe nccl``: run nccl-tests on a set of hosts through a head host, store it, judge it.

The runs go through :func:`fabric.app.drivers.run_on_host` on the head host (host keys verified, the
inventory's user/port/key/jump applied). Every launch is kept in the store as a sweep of pattern
``nccl``: one capture (kind ``probe``, tool ``nccl-tests``) with the launcher's whole output and
argv, and one result row per launch (hosts as a host range, ``client_device`` the rail's HCA or
``all``/``split``, ``gbps`` the busbw per NIC in Gb/s, ``line_rate_gbps`` the fabric's rate).

The line rate comes from ``--line-rate`` or from the latest stored topology (the cables of these
hosts' HCAs); without either there is no comparison with expectations.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from fabric.app.drivers import run_on_host
from probes.inventory import fold_names, read_inventory
from probes.nccl import NcclTestOptions
from probes.nccl_run import UNPARSABLE, NcclPlan, NcclRun, expectation, plan_nccl, run_nccl
from topology.errors import CommandFailed, IbfabError, ParseError, UsageError

if TYPE_CHECKING:
    from fabric.app.session import Session, StoreAccess

PARSER_VERSION = "nccl-tests/1"


@dataclass(frozen=True)
class NcclReport:
    sweep_id: int
    head: str
    plan: NcclPlan
    runs: tuple[NcclRun, ...]
    line_rate_gbps: float | None
    line_rate_from: str  # "--line-rate", "topology N" or ""

    @property
    def hosts(self) -> str:
        return fold_names(self.plan.hosts)

    def verdict(self, run: NcclRun) -> str | None:
        """'ok' / 'below expectation' against the line rate; None when it cannot be judged."""
        per_nic = run.busbw_per_nic
        if per_nic is None or self.line_rate_gbps is None:
            return None
        _, _, floor = expectation(self.line_rate_gbps)
        return "below expectation" if per_nic < floor else "ok"


def test_options(
    binary: str,
    *,
    min_bytes: str,
    max_bytes: str,
    step_factor: int,
    binary_dir: str,
    env: dict[str, str],
) -> NcclTestOptions:
    """The nccl-tests command line: which test, the size range and factor, where it is, its environment."""
    return NcclTestOptions(
        binary,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        step_factor=step_factor,
        binary_dir=binary_dir,
        env=env,
    )


def report_failure(report: NcclReport) -> IbfabError | None:
    """The first failed run as the error the command exits with (output nccl-tests printed but
    that could not be read is a parse error; anything else a failed command); None when all ran."""
    failed = [r for r in report.runs if not r.ok]
    if not failed:
        return None
    first = failed[0]
    where = report.head if report.head.startswith("slurm job ") else f"ssh {report.head}"
    if first.exit_code == 0 and (first.error or "").startswith(UNPARSABLE):
        return ParseError("nccl-tests", where, 0, "", first.error or UNPARSABLE)
    return CommandFailed(first.job.argv, first.exit_code, first.error or "", where)


def select_hosts(pattern: str, inventory: str) -> list[str]:
    return read_inventory(inventory).select(pattern).names()


def line_rate_from_store(hosts: Sequence[str], stored: StoreAccess) -> tuple[float | None, str]:
    """The most common rate of these hosts' HCA cables in the latest stored topology."""
    from topology.classify import classify

    try:
        store = stored.read()
    except Exception:  # an unreadable store: nothing to compare with
        return None, ""
    if store is None:  # no store yet: nothing to compare with
        return None, ""
    with store:
        if not store.list_topologies():
            return None, ""
        topology = store.load_topology("latest")
    classes = classify(topology.fabric).nodes
    wanted = set(hosts)
    rates = Counter(
        lk.gbps for guid, c in classes.items() if c.host in wanted for lk in topology.fabric.links_of(guid)
    )
    if not rates:
        return None, ""
    return float(rates.most_common(1)[0][0]), f"topology {topology.id}"


def run_probe(
    session: Session,
    hosts_pattern: str,
    inventory: str,
    opts: NcclTestOptions,
    *,
    head: str | None = None,
    launcher: str = "mpirun",
    gpus_per_node: int = 8,
    per_rail: bool = False,
    split: bool = False,
    rail_hcas: Sequence[str] | None = None,
    mpirun: str = "mpirun",
    allow_run_as_root: bool = False,
    timeout: float = 1800.0,
    line_rate_gbps: float | None = None,
) -> NcclReport:
    """Plan, run on the head host, store and return the report (see the module docstring). The
    head host is reached with the session's SSH options (the inventory's hosts by default)."""
    hosts = select_hosts(hosts_pattern, inventory)
    if not hosts:
        raise UsageError(f"--hosts {hosts_pattern!r} names no host of {inventory}")
    head_host = head or hosts[0]
    ssh = session.ssh if session.ssh.inventory else replace(session.ssh, inventory=inventory)
    plan = plan_nccl(
        hosts,
        opts,
        launcher=launcher,
        gpus_per_node=gpus_per_node,
        per_rail=per_rail,
        split=split,
        rail_hcas=rail_hcas,
        mpirun=mpirun,
        allow_run_as_root=allow_run_as_root,
    )
    started = time.time()

    def on_head(argv: Sequence[str], t: float) -> Any:
        return run_on_host(head_host, argv, t, ssh, ok_codes=range(256))

    from fabric.app.hostlocks import host_locks

    with host_locks(session.store).hold(hosts, 0, "probe nccl"):  # no sweep probes these hosts meanwhile
        runs = run_nccl(on_head, plan, timeout)
    return store_report(plan, runs, head_host, started, line_rate_gbps, session.store)


def store_report(
    plan: NcclPlan,
    runs: Sequence[NcclRun],
    head: str,
    started: float,
    line_rate_gbps: float | None,
    stored: StoreAccess,
) -> NcclReport:
    """Keep every launch in the store as a sweep of pattern ``nccl`` (see the module docstring)."""
    from fabric.store import ProbeResultRow, RawCapture

    hosts = plan.hosts
    rate_from = "--line-rate" if line_rate_gbps is not None else ""
    if line_rate_gbps is None:
        line_rate_gbps, rate_from = line_rate_from_store(hosts, stored)
    host_range = fold_names(hosts)
    with stored.write() as store:
        sweep_id = store.save_sweep(
            started, "nccl", f"nccl {plan.binary} {plan.launcher} via {head}: {host_range}"
        )
        rows = []
        for r in runs:
            cap = store.save_capture(
                RawCapture("probe", "nccl-tests", r.output, r.started, head, r.job.argv, PARSER_VERSION)
            )
            per_nic = r.busbw_per_nic
            device = r.job.hca or r.job.label
            rows.append(
                ProbeResultRow(
                    host_range,
                    device,
                    host_range,
                    device,
                    None if per_nic is None else per_nic * 8.0,
                    line_rate_gbps,
                    r.ok,
                    r.error,
                    cap,
                )
            )
        store.add_probe_results(sweep_id, rows)
        store.finish_sweep(sweep_id, time.time())
    return NcclReport(sweep_id, head, plan, tuple(runs), line_rate_gbps, rate_from)


def report_to_dict(report: NcclReport) -> dict[str, Any]:
    exp = expectation(report.line_rate_gbps) if report.line_rate_gbps is not None else None
    return {
        "sweep_id": report.sweep_id,
        "head": report.head,
        "hosts": report.hosts,
        "launcher": report.plan.launcher,
        "binary": report.plan.binary,
        "line_rate_gbps": report.line_rate_gbps,
        "line_rate_from": report.line_rate_from or None,
        "expected_busbw_per_nic": None
        if exp is None
        else {"low": exp[0], "high": exp[1], "below_expectation_under": exp[2]},
        "runs": [
            {
                "label": r.job.label,
                "rail": r.job.rail,
                "hca": r.job.hca,
                "argv": list(r.job.argv),
                "exit_code": r.exit_code,
                "ok": r.ok,
                "error": r.error,
                "seconds": r.seconds,
                "avg_busbw": None if r.result is None else r.result.avg_busbw,
                "busbw_per_nic": r.busbw_per_nic,
                "verdict": report.verdict(r),
                "out_of_bounds": None if r.result is None else r.result.out_of_bounds,
                "sizes": []
                if r.result is None
                else [
                    {
                        "size": row.size,
                        "busbw_out_of_place": row.out_of_place.busbw,
                        "busbw_in_place": row.in_place.busbw,
                    }
                    for row in r.result.rows
                ],
                "warnings": [] if r.result is None else [f"{w.host}: {w.message}" for w in r.result.warns],
            }
            for r in report.runs
        ],
    }


__all__ = [
    "NcclReport",
    "line_rate_from_store",
    "report_to_dict",
    "run_probe",
    "select_hosts",
    "store_report",
]
