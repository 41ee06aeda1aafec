"""``ibfab place``: choose N free compute hosts, packed or spread, and print them in ring order."""

from __future__ import annotations

from typing import Any

import click

from fabric.cli.options import discover_from, source_options


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
@click.option("--slots", type=int, default=1, show_default=True, help="Slots per host in the hostfile.")
@click.option("--health-hours", type=float, default=24.0, show_default=True, help="Health window.")
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
    slots: int,
    health_hours: float,
    db: str | None,
    **opts: Any,
) -> None:
    """Choose N hosts: fewest units and leaves (pack) or across failure domains (spread).

    Prints the hosts on stdout (hostfile, Slurm nodelist or JSON) and the cost and the hosts left
    out on stderr."""
    import json

    from fabric.exports.hostfile import hostfile
    from fabric.exports.tree import fold
    from fabric.placement import parse_host_list, place, unhealthy_hosts
    from probes.inventory import expand_hosts
    from topology.errors import UsageError

    if free_slurm and partition and free_slurm != partition:
        raise UsageError("--free-slurm is --partition: give one of them")
    partition = partition or free_slurm
    use_slurm = use_slurm or bool(partition or reservation or node_map)
    if free_file and use_slurm:
        raise UsageError("choose one of --free FILE and Slurm (--slurm, --partition, --free-slurm)")
    free = None
    slurm_busy: dict[str, str] = {}
    if free_file:
        from topology.textfile import read_input_text

        text = read_input_text(free_file, "free host list", max_bytes=16 << 20, strict=True)
        free = parse_host_list(text, free_file)
    elif use_slurm:
        from fabric.app.slurm import connect, hosts_for_jobs, read_node_map

        found = hosts_for_jobs(connect(), partition, reservation, read_node_map(node_map))
        # Slurm's busy nodes stay candidates so that each is left out with Slurm's reason.
        free, slurm_busy = [*found.free, *found.busy], dict(found.busy)
    exclude: dict[str, str] = dict(slurm_busy)
    for pattern in excluded:
        exclude.update({h: "on the command line" for h in expand_hosts(pattern, "--exclude")})
    d = discover_from(opts, db)
    health = None
    if exclude_unhealthy:
        from fabric.app.place import placement_health

        health = placement_health(d, db, health_hours)
        exclude = {**unhealthy_hosts(health), **exclude}
    p = place(d.fabric, d.classification, n, free=free, policy=policy, exclude=exclude, health=health)
    if fmt == "json":
        click.echo(json.dumps(p.to_dict(), indent=1))
    elif fmt == "slurm":
        click.echo(fold(p.hosts))
    else:
        click.echo(hostfile(p.hosts, "openmpi", slots), nl=False)
    c = p.cost
    click.echo(
        f"placed {len(p.hosts)} hosts ({policy}): {c.units} units (min {c.units_min}), "
        f"{c.leaves} leaves (min {c.leaves_min}), {c.crossings} spine crossings in the ring "
        f"(min {c.crossings_min}); units {','.join(p.units)}",
        err=True,
    )
    if c.worst_link is not None:
        click.echo(f"worst link on the paths: {c.worst_link} {'; '.join(c.worst_links)}".rstrip(), err=True)
    by_reason: dict[str, list[str]] = {}
    for lo in p.left_out:
        by_reason.setdefault(lo.reason, []).append(lo.name)
    for reason, hosts in by_reason.items():
        click.echo(f"left out ({len(hosts)}) {reason}: {fold(hosts)}", err=True)
