"""``ibfab sweep run --launcher slurm``: the planned sweep as job steps of one Slurm allocation.

The plan is the same as for the other launchers (:func:`fabric.app.sweeps.sweep.prepare`); which of its
hosts are asked for:

* by default every host of the plan;
* ``nodes``: only the plan's hosts among these Slurm nodes (the others are left out, and said so);
* ``idle``: only the plan's hosts Slurm lists as free now in the partition (or reservation).

Hosts Slurm will not give (drained, down, reserved, running another job, not Slurm nodes, outside
the partition) are reported with Slurm's own words and the sweep runs on the rest; their pairs
are *unmeasured*, never slow. On a lab fabric the step command is the lab's simulated traffic
(:class:`probes.slurm_sweep.LabSteps`, round files in a directory every node sees); otherwise it is
the real ``ib_write_bw`` on each node. The allocation is released on every way out (see
:mod:`probes.slurm`); with ``locks`` the plan's hosts are held for the whole sweep, as the daemon
holds them for an SSH sweep.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabric.app.session import Session
from fabric.app.slurm import NodeMap, connect
from fabric.app.sweeps.sweep import SweepContext, names_of
from probes.fanout import HostLocks
from probes.inventory import expand_hosts, fold_names
from probes.slurm import AllocationRequest, Slurm, Unavailable, describe
from probes.slurm_sweep import (
    LabSteps,
    PerftestSteps,
    StepKind,
    Unmeasured,
    run_slurm_sweep,
    time_limit_minutes,
)
from probes.sweep import Progress, SweepOutcome
from topology.errors import UsageError
from topology.model import Guid


@dataclass(frozen=True)
class SlurmChoice:
    """Where in Slurm to sweep: partition, reservation, which nodes, names, and the job's limits."""

    partition: str | None = None
    reservation: str | None = None
    nodes: str | None = None  # a Slurm host range
    idle: bool = False
    node_map: NodeMap = field(default_factory=NodeMap)
    time_limit_minutes: int | None = None  # default: from the plan's rounds and the pair timeout
    immediate: int = 30  # seconds salloc may wait for the nodes
    shared_dir: str | None = None  # lab round files; must be seen by every node

    def __post_init__(self) -> None:
        if self.nodes is not None and self.idle:
            raise UsageError("give --nodes RANGE or --idle, not both")


@dataclass(frozen=True)
class SlurmSweepReport:
    """A sweep run through Slurm: the sweep, the job that ran it, and what Slurm did not run."""

    outcome: SweepOutcome
    job_id: str
    job_name: str
    nodes: tuple[str, ...]  # the Slurm nodes the job held
    left_out: tuple[Unavailable, ...]  # plan hosts not asked for (--nodes / --idle), and why
    refused: tuple[Unavailable, ...]  # asked for, but Slurm would not give them
    lost: Mapping[str, str]  # nodes that stopped answering during the sweep
    unmeasured: tuple[Unmeasured, ...]
    node_map: NodeMap

    @property
    def not_given(self) -> tuple[Unavailable, ...]:
        return (*self.left_out, *self.refused)


def choose_nodes(
    plan_nodes: list[str], choice: SlurmChoice, slurm: Slurm
) -> tuple[list[str], list[Unavailable]]:
    """(the plan's Slurm nodes to ask for, the others with why)."""
    if choice.nodes is not None:
        wanted = set(expand_hosts(choice.nodes, "--nodes"))
        asked = [n for n in plan_nodes if n in wanted]
        if not asked:
            raise UsageError(
                f"--nodes {choice.nodes} names none of the plan's hosts ({fold_names(plan_nodes)})"
            )
        return asked, [
            Unavailable(n, f"not in --nodes {choice.nodes}") for n in plan_nodes if n not in wanted
        ]
    if choice.idle:
        free = set(slurm.idle_nodes(choice.partition, choice.reservation))
        asked = [n for n in plan_nodes if n in free]
        _, why = slurm.check_hosts(
            [n for n in plan_nodes if n not in free], choice.partition, choice.reservation
        )
        return asked, list(why)
    return list(plan_nodes), []


def run_slurm(
    ctx: SweepContext,
    choice: SlurmChoice,
    session: Session,
    *,
    retest: bool = True,
    timeout: float = 120.0,
    size: int = 8388608,
    iterations: int = 5000,
    base_port: int = 18515,
    concurrency: int = 64,
    progress: Progress | None = None,
    locks: HostLocks | None = None,
    env: Mapping[str, str] | None = None,
) -> SlurmSweepReport:
    """Allocate, run every round as job steps, gather, release; see the module docstring."""
    slurm = connect(env)
    plan_hosts = sorted({e.host for p in ctx.plan.probes for e in (p.client, p.server)})
    if not plan_hosts:
        raise UsageError("sweep cannot start: the plan has no hosts")
    node_map = choice.node_map
    asked, left_out = choose_nodes(node_map.nodes_of(plan_hosts), choice, slurm)
    if not asked:
        raise UsageError(f"sweep cannot start: no host of the plan is free in Slurm: {describe(left_out)}")
    request = AllocationRequest(
        hosts=tuple(asked),
        partition=choice.partition,
        reservation=choice.reservation,
        time_limit_minutes=choice.time_limit_minutes or time_limit_minutes(ctx.plan, timeout),
        immediate=choice.immediate,
    )
    d = ctx.discovery
    line_rates: dict[Guid, float] = {}
    for p in ctx.plan.probes:
        links = d.fabric.links_of(p.client.guid)
        if links:
            line_rates[p.client.guid] = links[0].gbps
    workdir: Path | None = None
    steps: StepKind
    if session.driver.simulated:  # the simulator's traffic, launched as job steps
        rates = session.driver.error_rates()
        workdir = Path(tempfile.mkdtemp(prefix="ibfab-slurm-lab-", dir=choice.shared_dir))
        steps = LabSteps(ctx.plan.paths, rates, workdir)
    else:
        from probes.perftest import PerftestOptions

        steps = PerftestSteps(PerftestOptions("ib_write_bw", size=size, iterations=iterations))
    try:
        done = run_slurm_sweep(
            ctx.plan,
            slurm,
            steps,
            request,
            node_of=dict(node_map.nodes),
            locks=locks,
            retest=retest,
            progress=progress,
            fabric=d.fabric,
            tables=ctx.tables,
            candidates=ctx.candidates(),
            names=names_of(d),
            base_port=base_port,
            timeout=timeout,
            concurrency=concurrency,
            line_rates=line_rates,
        )
    finally:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
    return SlurmSweepReport(
        done.outcome,
        done.job_id,
        request.job_name,
        done.hosts,
        tuple(left_out),
        done.unavailable,
        dict(done.lost),
        done.unmeasured,
        node_map,
    )


def stored_source(source: str, report: SlurmSweepReport) -> str:
    """The source a Slurm sweep is stored under: the fabric's, and the job it ran as."""
    return f"{source}, slurm job {report.job_id}"


def report_to_dict(report: SlurmSweepReport) -> dict[str, Any]:
    m = report.node_map
    return {
        "job_id": report.job_id,
        "job_name": report.job_name,
        "nodes": list(report.nodes),
        "hosts": [m.host(n) for n in report.nodes],
        "not_given": [{"node": u.host, "host": m.host(u.host), "why": u.why} for u in report.not_given],
        "lost": [{"node": n, "host": m.host(n), "why": w} for n, w in report.lost.items()],
        "unmeasured": [
            {
                "client": u.probe.client.label,
                "server": u.probe.server.label,
                "round": u.probe.round,
                "attempt": u.attempt,
                "why": u.why,
            }
            for u in report.unmeasured
        ],
    }


__all__ = ["SlurmChoice", "SlurmSweepReport", "choose_nodes", "report_to_dict", "run_slurm", "stored_source"]
