"""``ibfab probe nccl --launcher srun`` from a Slurm client: allocation -> steps -> release.

As a Slurm sweep does, the probe gets one exclusive allocation of the nodes (job name
``ibfab-nccl``, a time limit from the runs' timeout), runs each planned nccl-tests launch as a job
step inside it (``srun --jobid=J ...``), and releases the allocation on every way out (success,
failure, Ctrl-C, SIGTERM; see :meth:`probes.slurm.Slurm.allocation`). nccl-tests needs every node
at once, so a node Slurm will not give stops the probe before anything runs, naming the node and
Slurm's reason; nothing waits for it. A launch that overruns its timeout is cancelled (its step)
and recorded as timed out; the other launches still run.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence

from fabric.app.hostlocks import host_locks, node_lock_keys
from fabric.app.session import Session
from fabric.app.slurm import connect
from fabric.app.sweeps.nccl import NcclReport, store_report
from probes.inventory import expand_hosts
from probes.nccl import NcclTestOptions
from probes.nccl_run import plan_nccl, run_nccl
from probes.slurm import Allocation, AllocationRequest, Slurm, SlurmUnavailable, describe
from probes.transport import CommandResult, FailureKind
from topology.errors import CommandFailed

JOB_NAME = "ibfab-nccl"


def step_argv(alloc: Allocation, argv: Sequence[str], label: str) -> list[str]:
    """The planned ``srun ...`` as a step of ``alloc`` (named so ``squeue -s`` shows which launch)."""
    if not argv or argv[0] != "srun":
        raise ValueError(f"not an srun command line: {argv!r}")
    return ["srun", f"--jobid={alloc.job_id}", f"--job-name={JOB_NAME}/{label}", *argv[1:]]


def run_in_allocation(
    slurm: Slurm, alloc: Allocation, argv: Sequence[str], label: str, timeout: float
) -> CommandResult:
    """One launch as a step; a step that overran is cancelled and recorded, never raised."""
    full = step_argv(alloc, argv, label)
    try:
        return slurm.command(full, timeout=timeout, check=False)
    except CommandFailed as exc:
        if exc.returncode is None:
            return CommandResult(
                "slurm", tuple(full), None, "", exc.stderr, 0.0, FailureKind.ERROR, exc.stderr
            )
        ids = [s.step_id for s in slurm.steps(alloc.job_id) if s.name == f"{JOB_NAME}/{label}"]
        if ids:
            slurm.command(["scancel", *ids], check=False)
        return CommandResult(
            "slurm", tuple(full), None, "", exc.stderr, timeout, FailureKind.COMMAND_TIMEOUT,
            f"step timed out after {timeout:g} s",
        )  # fmt: skip


def run_probe_slurm(
    session: Session,
    nodes: str,
    opts: NcclTestOptions,
    *,
    partition: str | None = None,
    reservation: str | None = None,
    gpus_per_node: int = 8,
    per_rail: bool = False,
    split: bool = False,
    rail_hcas: Sequence[str] | None = None,
    mpi: str | None = "pmix",
    request_gpus: bool = True,
    timeout: float = 1800.0,
    immediate: int = 30,
    line_rate_gbps: float | None = None,
    env: Mapping[str, str] | None = None,
) -> NcclReport:
    """Plan, allocate ``nodes`` (a Slurm host range), run each launch as a step, release, store.
    The nodes are held by name, and by their fabric host names where the session's node map differs."""
    slurm = connect(env)
    hosts = expand_hosts(nodes, "--hosts")
    plan = plan_nccl(
        hosts,
        opts,
        launcher="srun",
        gpus_per_node=gpus_per_node,
        per_rail=per_rail,
        split=split,
        rail_hcas=rail_hcas,
        mpi=mpi,
        request_gpus=request_gpus,
    )
    _, refused = slurm.check_hosts(hosts, partition, reservation)
    if refused:
        raise SlurmUnavailable(
            f"nccl-tests needs every node; Slurm will not give {describe(refused)}", refused
        )
    minutes = max(5, math.ceil(len(plan.jobs) * timeout / 60) + 5)
    request = AllocationRequest(
        hosts=tuple(hosts),
        partition=partition,
        reservation=reservation,
        time_limit_minutes=min(minutes, 7 * 24 * 60),
        job_name=JOB_NAME,
        immediate=immediate,
        gpus_per_node=gpus_per_node if request_gpus else None,
    )
    started = time.time()
    # No sweep probes these nodes meanwhile (locks by Slurm node name and fabric host, next to the store).
    with (
        host_locks(session.store).hold(node_lock_keys(hosts, session.node_map), 0, "probe nccl"),
        slurm.allocation(request) as alloc,
    ):
        if alloc.unavailable:  # taken between the check and the grant
            raise SlurmUnavailable(
                f"nccl-tests needs every node; Slurm did not give {describe(alloc.unavailable)}",
                alloc.unavailable,
            )
        labels = {job.argv: job.label for job in plan.jobs}

        def on_slurm(argv: Sequence[str], t: float) -> CommandResult:
            label = re.sub(r"[^A-Za-z0-9_.-]+", "-", labels.get(tuple(argv), "run")).strip("-")
            return run_in_allocation(slurm, alloc, argv, label, t)

        runs = run_nccl(on_slurm, plan, timeout)
        head = f"slurm job {alloc.job_id}"
    return store_report(plan, runs, head, started, line_rate_gbps, session.store)


__all__ = ["JOB_NAME", "run_in_allocation", "run_probe_slurm", "step_argv"]
