"""``ibfab place``: choose N free compute hosts, packed or spread, and print them in ring order."""

from __future__ import annotations

from typing import Any

import click

from fabric.cli.options import discover_in, source_options, source_session
from topology.errors import UsageError


@click.command("place")
@click.option("--nodes", "n", type=int, required=True, help="How many hosts to choose.")
@click.option("--free", "free_file", metavar="FILE", help="Free hosts: one host or host range a line.")
@click.option(
    "--free-slurm",
    metavar="PARTITION",
    help="Free hosts: what Slurm could give now in PARTITION (= --partition).",
)
@click.option(
    "--slurm", "use_slurm", is_flag=True, help="Free hosts from Slurm: node states, drains, reservations."
)
@click.option("--partition", metavar="P", help="Slurm partition (implies --slurm).")
@click.option("--reservation", metavar="R", help="Slurm reservation to place in (implies --slurm).")
@click.option(
    "--node-map", metavar="FILE", help="Fabric host -> Slurm node, one pair a line, where names differ."
)
@click.option("--policy", type=click.Choice(["pack", "spread"]), default="pack", show_default=True)
@click.option("--exclude-unhealthy", is_flag=True, help="Leave out hosts whose cables are warn/critical.")
@click.option(
    "--exclude", "excluded", multiple=True, metavar="HOST", help="Leave out these hosts (ranges allowed)."
)
@click.option(
    "--format", "fmt", type=click.Choice(["hostfile", "slurm", "json"]), default="hostfile", show_default=True
)
@click.option(
    "--slots",
    type=click.IntRange(1),
    help="Slots (ranks) per host in the hostfile (default: one per GPU where the fabric tells: "
    "the HCAs of a compute host on a rail-optimized fabric; else 1).",
)
@click.option("--health-hours", type=float, default=24.0, show_default=True, help="Health window.")
@click.option(
    "--include-service",
    is_flag=True,
    help="Service hosts (login, storage, UFM: another shape than the compute hosts) may be chosen too.",
)
@source_options
def place_cmd(
    n: int,
    free_file: str | None,
    free_slurm: str | None,
    use_slurm: bool,
    partition: str | None,
    reservation: str | None,
    node_map: str | None,
    policy: str,
    exclude_unhealthy: bool,
    excluded: tuple[str, ...],
    fmt: str,
    slots: int | None,
    health_hours: float,
    include_service: bool,
    db: str | None,
    **opts: Any,
) -> None:
    """Choose N hosts: fewest units and leaves (pack) or across failure domains (spread).

    Prints the hosts on stdout (hostfile, Slurm nodelist or JSON) and the cost and the hosts left
    out on stderr."""
    from fabric.app.placement.place import FreeHosts, free_from_file, free_from_slurm, host_slots, place_hosts
    from fabric.present.placement import placement_hosts, placement_summary, slots_line

    if free_slurm and partition and free_slurm != partition:
        raise UsageError("--free-slurm is --partition: give one of them")
    partition = partition or free_slurm
    use_slurm = use_slurm or bool(partition or reservation or node_map)
    if free_file and use_slurm:
        raise UsageError("choose one of --free FILE and Slurm (--slurm, --partition, --free-slurm)")
    session = source_session(opts, db, node_map=node_map)
    if free_file:
        free = free_from_file(free_file)
    elif use_slurm:
        free = free_from_slurm(partition, reservation, session.node_map)
    else:
        free = FreeHosts()
    d = discover_in(session)
    p = place_hosts(
        d,
        n,
        free,
        policy=policy,
        excluded=excluded,
        exclude_unhealthy=exclude_unhealthy,
        health_hours=health_hours,
        stored=session.store,
        include_service=include_service,
    )
    per_host = host_slots(d, slots)
    click.echo(placement_hosts(p, fmt, per_host), nl=False)
    for line in placement_summary(p):
        click.echo(line, err=True)
    if fmt == "hostfile":
        click.echo(slots_line(per_host), err=True)
