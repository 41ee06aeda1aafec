"""``ibfab hca`` (this machine's HCAs) and ``ibfab hosts run|check`` (fan-out over SSH).

Output of many hosts is folded: hosts that answered identically are one host range.
Exit codes of ``hosts``: 0 all hosts fine, 1 a command failed or a port is down somewhere,
7 (TransportError) when at least one host could not be reached, authenticated or verified.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import click

from fabric.cli.jsonout import write_json
from fabric.cli.options import host_key_options
from topology.errors import TransportError

if TYPE_CHECKING:
    from fabric.app.hosts import HostsRequest
    from probes.transport import CommandResult

_SYSFS = "/sys/class/infiniband"


@click.command("hca")
@click.option("--json", "as_json", is_flag=True, help="Print the ports as JSON.")
@click.option("--sysfs-root", default=_SYSFS, show_default=True, hidden=True, help="Read another sysfs tree.")
def hca_cmd(as_json: bool, sysfs_root: str) -> None:
    """RDMA devices and ports of this machine (pyverbs, else sysfs)."""
    from fabric.app.hosts import local_ports
    from fabric.present.hosts import render_hca_ports

    ports = local_ports(socket.gethostname(), sysfs_root)
    if as_json:
        write_json([asdict(p) for p in ports])
        return
    click.echo(render_hca_ports(ports))


@click.group("hosts")
def hosts_group() -> None:
    """Run commands and HCA preflight on the hosts of an inventory, over SSH."""


def _ssh_options(f: Callable[..., None]) -> Callable[..., None]:
    options = [
        click.option("-i", "--inventory", required=True, help="Host inventory."),
        click.option(
            "-w", "--hosts", "pattern", default=None, help="Only these hosts, e.g. 'dgx-[0001-0008]'."
        ),
        click.option("-f", "--concurrency", default=16, show_default=True, type=click.IntRange(1, 512)),
        click.option(
            "--workers",
            default=None,
            type=click.IntRange(1, 64),
            help="Processes to spread the connections over (default: one per core from 128 hosts; 1: none).",
        ),
        click.option("-t", "--timeout", default=60.0, show_default=True, type=click.FloatRange(min=0.1)),
        click.option("--connect-timeout", default=10.0, show_default=True, type=click.FloatRange(min=0.1)),
        click.option("--retries", default=2, show_default=True, type=click.IntRange(0, 10)),
        click.option("--ssh-config", default="~/.ssh/config", show_default=True, help="ssh_config to merge."),
        click.option("--json", "as_json", is_flag=True, help="Print per-host results as JSON."),
    ]
    for option in reversed(options):
        f = option(f)
    return host_key_options(f)


def _request(opts: dict[str, Any]) -> HostsRequest:
    from fabric.app.hosts import HostsRequest

    return HostsRequest(
        inventory=opts["inventory"],
        pattern=opts["pattern"],
        identity=opts["identity"],
        known_hosts=opts["known_hosts"],
        accept_new_host_key=opts["accept_new_host_key"],
        concurrency=opts["concurrency"],
        workers=opts["workers"],
        timeout=opts["timeout"],
        connect_timeout=opts["connect_timeout"],
        retries=opts["retries"],
        ssh_config=opts["ssh_config"],
    )


@hosts_group.command("run", context_settings={"ignore_unknown_options": True})
@_ssh_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run_cmd(command: tuple[str, ...], **opts: Any) -> None:
    """Run COMMAND (argv, after --) on every host; identical answers are folded."""
    from fabric.app.hosts import exit_code_of, fold, fold_names, run_on_hosts
    from fabric.present.hosts import render_folded, results_json

    results = run_on_hosts(_request(opts), command)
    pieces = results_json(results) if opts["as_json"] else render_folded(fold(results))
    for piece in pieces:  # a host's output (up to 64 MiB) is decoded and written a piece at a time
        click.echo(piece, nl=False)
    bad = [r for r in results if not r.ok]
    if bad:
        click.echo(
            f"ibfab: {len(bad)} of {len(results)} hosts failed: {fold_names(r.host for r in bad)}", err=True
        )
        raise click.exceptions.Exit(exit_code_of(bad))


@hosts_group.command("check")
@_ssh_options
def check_cmd(**opts: Any) -> None:
    """HCA preflight on every host: devices, port state, rate; identical hosts are folded."""
    from fabric.app.hosts import check_hosts, group_preflight
    from fabric.present.hosts import render_preflight

    reports = check_hosts(_request(opts))
    if opts["as_json"]:
        out = [
            {
                "host": r.host,
                "problem": r.problem,
                "ports": [asdict(p) for p in r.ports],
                **_failure(r.result),
            }
            for r in reports
        ]
        write_json(out)
    elif reports:
        click.echo(render_preflight(group_preflight(reports)))
    bad = [r for r in reports if r.problem is not None]
    if bad:
        unreachable = sum(r.result.failure is not None for r in bad)
        click.echo(f"ibfab: {len(bad)} of {len(reports)} hosts not ready", err=True)
        raise click.exceptions.Exit(TransportError.exit_code if unreachable else 1)


def _failure(r: CommandResult) -> dict[str, Any]:
    return {"failure": r.failure.value if r.failure else None, "message": r.message}
