"""``ibfab triage --hosts RANGE``: the slow node or cable behind a slow collective, in O(log n)
rounds, on a lab (simulated), over SSH or through Slurm; ``triage plant`` plants a slow node in
a lab."""

from __future__ import annotations

import click

from fabric.cli.jsonout import write_json
from fabric.cli.options import build_session, chosen_source, host_key_options, lab_session
from topology.errors import IbfabError, UsageError


class CulpritFound(IbfabError):
    """The triage named a culprit (exit 4, as a probe that found a failure)."""

    exit_code = 4


@click.group("triage", invoke_without_command=True)
@click.option(
    "--hosts", "hosts_range", metavar="RANGE", help="The hosts of the slow collective, e.g. dgx-[0001-0064]."
)
@click.option("--lab", metavar="NAME", help="A lab fabric (the runs are simulated, and say so).")
@click.option(
    "--inventory", metavar="FILE", help="Over SSH: the hosts' inventory (mpirun on each test's first host)."
)
@click.option(
    "--slurm", "use_slurm", is_flag=True, help="Through Slurm: one allocation, each test a job step."
)
@click.option("--input", "input_path", metavar="FILE", help="The fabric: a saved ibnetdiscover output.")
@click.option(
    "--snapshot", metavar="latest|ID|LABEL", help="The fabric: a stored topology (default: the newest)."
)
@click.option("--partition", metavar="P", help="--slurm: the partition to allocate from.")
@click.option("--reservation", metavar="R", help="--slurm: the reservation to allocate in.")
@click.option("--node-map", metavar="FILE", help="--slurm: fabric host -> Slurm node where names differ.")
@click.option(
    "--mpi", default="pmix", show_default=True, help="--slurm: srun --mpi plugin ('none' for none)."
)
@click.option(
    "--gres/--no-gres",
    "request_gpus",
    default=True,
    show_default=True,
    help="--slurm: ask for the GPUs as a generic resource (--gpus-per-node); off where GPUs are no GRES.",
)
@click.option("--binary", default="all_reduce_perf", show_default=True, help="The nccl-tests binary.")
@click.option("--binary-dir", default="", metavar="DIR", help="Where the binaries are on the hosts.")
@click.option("--gpus-per-node", default=8, show_default=True, type=click.IntRange(1, 64))
@click.option("--mpirun", default="mpirun", show_default=True, metavar="PATH")
@click.option("--allow-run-as-root", is_flag=True)
@click.option(
    "--timeout", default=1800.0, show_default=True, type=click.FloatRange(min=1), help="Per test, seconds."
)
@host_key_options
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def triage_group(
    ctx: click.Context,
    hosts_range: str | None,
    lab: str | None,
    inventory: str | None,
    use_slurm: bool,
    input_path: str | None,
    snapshot: str | None,
    partition: str | None,
    reservation: str | None,
    node_map: str | None,
    mpi: str,
    request_gpus: bool,
    binary: str,
    binary_dir: str,
    gpus_per_node: int,
    mpirun: str,
    allow_run_as_root: bool,
    timeout: float,
    known_hosts: str | None,
    accept_new_host_key: bool,
    identity: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Find the slow node or cable behind a slow collective: single-node runs (each node's GPUs),
    ib_write_bw pairs on every rail (every HCA and cable, both ways), then nccl-tests on halves of
    the hosts still suspect; at most ceil(log2 n)+2 rounds. Prints each round, what it ruled out,
    and the culprit with its evidence, or that the fabric is fine and the problem is elsewhere.

    A node that stops answering mid-triage is named as lost (drain and check it), never its cables,
    and the rounds go on without it.

    Exits 4 when it names a culprit or a lost node, cannot decide, or could not judge a test; 0 when
    the fabric is fine."""
    if ctx.invoked_subcommand is not None:
        return
    if not hosts_range:
        raise UsageError("give --hosts RANGE (the hosts of the slow collective)")
    if sum(bool(x) for x in (lab, inventory, use_slurm)) != 1:
        raise UsageError("choose one of --lab NAME, --inventory FILE (SSH) or --slurm")
    from fabric.app.triage import run
    from fabric.app.triage.records import triage_to_dict
    from fabric.present.triage_rounds import render_triage, uncleared_line

    if lab:
        report = run.triage_lab(hosts_range, lab_session(lab, db), gpus_per_node=gpus_per_node)
    else:
        from fabric.app.sweeps.nccl import test_options

        # The fabric the hosts are on: --input, else a stored snapshot (the newest by default).
        source = chosen_source(db, input_path, snapshot=None if input_path else (snapshot or "latest"))
        session = build_session(
            db=db, source=source, node_map=node_map if not inventory else None, inventory=inventory,
            known_hosts=known_hosts, accept_new_host_key=accept_new_host_key, identity=identity,
        )  # fmt: skip
        discovery = run.fabric_of(session)
        opts = test_options(
            binary, min_bytes="1M", max_bytes="8G", step_factor=2, binary_dir=binary_dir, env={}
        )
        if inventory:
            report = run.triage_ssh(
                hosts_range, discovery, opts, session, gpus_per_node=gpus_per_node, mpirun=mpirun,
                allow_run_as_root=allow_run_as_root, timeout=timeout,
            )  # fmt: skip
        else:
            report = run.triage_slurm(
                hosts_range, discovery, opts, session, partition=partition, reservation=reservation,
                gpus_per_node=gpus_per_node, timeout=timeout, mpi=None if mpi == "none" else mpi,
                request_gpus=request_gpus,
            )  # fmt: skip
    if as_json:
        write_json(triage_to_dict(report))
    else:
        click.echo(render_triage(report))
    uncleared = uncleared_line(report)
    if uncleared is not None:
        raise CulpritFound(uncleared)


@triage_group.command("plant")
@click.option("--lab", "lab_name", required=True, metavar="NAME", help="The lab.")
@click.argument("host")
@click.option(
    "--kind",
    type=click.Choice(["gpu", "pcie", "lost"]),
    required=True,
    help="Slow GPUs, a slow GPU-to-HCA path, or a node that stops answering.",
)
@click.option("--factor", type=float, help="--kind gpu or pcie: the share of its healthy rate (default 0.5).")
@click.option(
    "--round",
    "from_round",
    type=int,
    help="--kind lost: lost from this round on (default 1).",
)
def plant_cmd(lab_name: str, host: str, kind: str, factor: float | None, from_round: int | None) -> None:
    """Plant a simulated slow node in a lab (its GPUs, or its GPU-to-HCA path), or a lost one."""
    from fabric.app.triage.plant import plant_lab_node
    from fabric.present.triage_rounds import planted_line

    node = plant_lab_node(lab_session(lab_name), host, kind, factor, from_round)
    click.echo(planted_line(lab_name, node))


@triage_group.command("clear")
@click.option("--lab", "lab_name", required=True, metavar="NAME", help="The lab.")
def clear_cmd(lab_name: str) -> None:
    """Remove the simulated slow and lost nodes planted in a lab."""
    from fabric.present.triage_rounds import cleared_line

    click.echo(cleared_line(lab_name, lab_session(lab_name).driver.clear_nodes()))
