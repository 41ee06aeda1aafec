"""``ibfab probe nccl``: nccl-tests through mpirun or srun on a head host, stored and judged."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from fabric.cli.jsonout import write_json
from fabric.cli.options import host_key_options
from topology.errors import UsageError

if TYPE_CHECKING:
    from fabric.app.sweeps.nccl import NcclReport


@click.group("probe")
def probe_group() -> None:
    """Run a measurement on hosts (see also `ibfab sweep` for ib_write_bw pairs)."""


def _env(values: tuple[str, ...]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--env {item!r}: give VAR=VALUE")
        env[name] = value
    return env


@probe_group.command("nccl")
@click.option("--hosts", "hosts_pattern", required=True, metavar="RANGE", help="Hosts, e.g. dgx-[0001-0004].")
@click.option(
    "--inventory",
    metavar="FILE",
    help="Inventory naming the hosts (and how to reach them); without it, srun runs from this machine "
    "inside an allocation of the hosts (Slurm node names).",
)
@click.option("--launcher", type=click.Choice(["mpirun", "srun"]), default="mpirun", show_default=True)
@click.option("--partition", metavar="P", help="srun without --inventory: Slurm partition to allocate from.")
@click.option(
    "--reservation", metavar="R", help="srun without --inventory: Slurm reservation to allocate in."
)
@click.option(
    "--node-map",
    metavar="FILE",
    help="srun without --inventory: fabric host -> Slurm node where names differ, so the fabric hosts "
    "are held too (no SSH sweep probes them meanwhile; as sweep run and drain take it).",
)
@click.option("--mpi", default="pmix", show_default=True, help="srun --mpi plugin ('none' for none).")
@click.option(
    "--gres/--no-gres",
    "request_gpus",
    default=True,
    show_default=True,
    help="srun: ask for the GPUs as a generic resource (--gpus-per-node); off where GPUs are no GRES.",
)
@click.option("--head", metavar="HOST", help="Where the launcher runs (default: the first host).")
@click.option("--binary", default="all_reduce_perf", show_default=True, help="The nccl-tests binary.")
@click.option("--binary-dir", default="", metavar="DIR", help="Where the binaries are on the hosts.")
@click.option(
    "--per-rail", is_flag=True, help="One run per rail: one rank per node, NCCL_IB_HCA of that rail."
)
@click.option(
    "--split", is_flag=True, help="All rails at once, one communicator per rail (NCCL_TESTS_SPLIT)."
)
@click.option(
    "--rail-hcas", metavar="LIST", help="HCA of each rail, e.g. mlx5_0,mlx5_3,... (default mlx5_0..)."
)
@click.option("--gpus-per-node", default=8, show_default=True, type=click.IntRange(1, 64))
@click.option("-b", "min_bytes", default="8", show_default=True, help="Smallest size.")
@click.option("-e", "max_bytes", default="8G", show_default=True, help="Largest size.")
@click.option(
    "-f", "step_factor", default=2, show_default=True, type=click.IntRange(min=2), help="Size factor."
)
@click.option("--env", "env_items", multiple=True, metavar="VAR=VALUE", help="Environment for the ranks.")
@click.option(
    "--mpirun", default="mpirun", show_default=True, metavar="PATH", help="mpirun on the head host."
)
@click.option("--allow-run-as-root", is_flag=True, help="Pass --allow-run-as-root to mpirun.")
@click.option(
    "--line-rate", type=click.FloatRange(min=1), metavar="GBPS", help="Link rate (default: stored topology)."
)
@click.option(
    "--timeout", default=1800.0, show_default=True, type=click.FloatRange(min=1), help="Per run, seconds."
)
@host_key_options
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def nccl_cmd(
    hosts_pattern: str,
    inventory: str | None,
    launcher: str,
    partition: str | None,
    reservation: str | None,
    node_map: str | None,
    mpi: str,
    request_gpus: bool,
    head: str | None,
    binary: str,
    binary_dir: str,
    per_rail: bool,
    split: bool,
    rail_hcas: str | None,
    gpus_per_node: int,
    min_bytes: str,
    max_bytes: str,
    step_factor: int,
    env_items: tuple[str, ...],
    mpirun: str,
    allow_run_as_root: bool,
    line_rate: float | None,
    timeout: float,
    known_hosts: str | None,
    accept_new_host_key: bool,
    identity: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Run nccl-tests on HOSTS through the launcher on the head host; print busbw per size, the
    average, out-of-bounds values, warnings and failures, and compare with the line rate.

    Exits 4 with the failure in one line when a run failed (the run is still stored); 9 when a
    host is busy with another ibfab probe or Slurm will not give the nodes."""
    from fabric.app.sweeps import nccl as ncclsvc
    from fabric.cli.options import build_session

    opts = ncclsvc.test_options(
        binary,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        step_factor=step_factor,
        binary_dir=binary_dir,
        env=_env(env_items),
    )
    if inventory is None:
        if launcher != "srun":
            raise UsageError(
                "--launcher mpirun needs --inventory FILE (srun can run from here through Slurm)"
            )
        from fabric.app.sweeps.nccl_slurm import run_probe_slurm

        report = run_probe_slurm(
            build_session(db=db, node_map=node_map),
            hosts_pattern,
            opts,
            partition=partition,
            reservation=reservation,
            gpus_per_node=gpus_per_node,
            per_rail=per_rail,
            split=split,
            rail_hcas=[h.strip() for h in rail_hcas.split(",")] if rail_hcas else None,
            mpi=None if mpi == "none" else mpi,
            request_gpus=request_gpus,
            timeout=timeout,
            line_rate_gbps=line_rate,
        )
        _show(report, as_json)
        return
    session = build_session(
        db=db,
        inventory=inventory,
        known_hosts=known_hosts,
        accept_new_host_key=accept_new_host_key,
        identity=identity,
    )
    report = ncclsvc.run_probe(
        session,
        hosts_pattern,
        inventory,
        opts,
        head=head,
        launcher=launcher,
        gpus_per_node=gpus_per_node,
        per_rail=per_rail,
        split=split,
        rail_hcas=[h.strip() for h in rail_hcas.split(",")] if rail_hcas else None,
        mpirun=mpirun,
        allow_run_as_root=allow_run_as_root,
        timeout=timeout,
        line_rate_gbps=line_rate,
    )
    _show(report, as_json)


def _show(report: NcclReport, as_json: bool) -> None:
    from fabric.app.sweeps.nccl import report_failure, report_to_dict
    from fabric.present.nccl import render_nccl

    if as_json:
        write_json(report_to_dict(report))
    else:
        click.echo(render_nccl(report))
    failure = report_failure(report)
    if failure is not None:
        raise failure
