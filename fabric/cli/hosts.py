"""``ibfab hca`` (this machine's HCAs) and ``ibfab hosts run|check`` (fan-out over SSH).

Output of many hosts is folded: hosts that answered identically are one host range.
Exit codes of ``hosts``: 0 all hosts fine, 1 a command failed or a port is down somewhere,
7 (TransportError) when at least one host could not be reached, authenticated or verified.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

import click

from fabric.cli.options import host_key_options
from fabric.present.table import table
from topology.errors import TransportError

if TYPE_CHECKING:
    from probes.fanout import FoldedResult
    from probes.inventory import HostEntry, Inventory
    from probes.transport import CommandResult, Transport

_SYSFS = "/sys/class/infiniband"


@click.command("hca")
@click.option("--json", "as_json", is_flag=True, help="Print the ports as JSON.")
@click.option("--sysfs-root", default=_SYSFS, show_default=True, hidden=True, help="Read another sysfs tree.")
def hca_cmd(as_json: bool, sysfs_root: str) -> None:
    """RDMA devices and ports of this machine (pyverbs, else sysfs)."""
    from probes.preflight import local_hcas

    ports = local_hcas(socket.gethostname(), sysfs_root)
    if as_json:
        click.echo(json.dumps([asdict(p) for p in ports], indent=2))
        return
    rows = [
        (
            p.device,
            p.port,
            p.state,
            p.phys_state,
            f"{p.rate_gbps:g}",
            p.link_layer,
            p.lid,
            p.guid,
            p.node_desc,
        )
        for p in ports
    ]
    click.echo(table(("DEVICE", "PORT", "STATE", "PHYS", "GB/S", "LINK", "LID", "GUID", "DESC"), rows))


@click.group("hosts")
def hosts_group() -> None:
    """Run commands and HCA preflight on the hosts of an inventory, over SSH."""


def _ssh_options(f: Callable[..., None]) -> Callable[..., None]:
    options = [
        click.option(
            "-i", "--inventory", required=True, type=click.Path(dir_okay=False), help="Host inventory."
        ),
        click.option(
            "-w", "--hosts", "pattern", default=None, help="Only these hosts, e.g. 'dgx-[0001-0008]'."
        ),
        click.option("-f", "--concurrency", default=16, show_default=True, type=click.IntRange(1, 512)),
        click.option("-t", "--timeout", default=60.0, show_default=True, type=click.FloatRange(min=0.1)),
        click.option("--connect-timeout", default=10.0, show_default=True, type=click.FloatRange(min=0.1)),
        click.option("--retries", default=2, show_default=True, type=click.IntRange(0, 10)),
        click.option("--ssh-config", default="~/.ssh/config", show_default=True, help="ssh_config to merge."),
        click.option("--json", "as_json", is_flag=True, help="Print per-host results as JSON."),
    ]
    for option in reversed(options):
        f = option(f)
    return host_key_options(f)


def _setup(opts: dict[str, Any]) -> tuple[Inventory, Callable[[HostEntry], Transport]]:
    from fabric.app.source import with_identity
    from probes.inventory import read_inventory
    from probes.ssh import ssh_transport_factory

    inventory = read_inventory(opts["inventory"])
    if opts["pattern"]:
        inventory = inventory.select(opts["pattern"])
    if opts["identity"]:
        inventory = replace(
            inventory, hosts=tuple(with_identity(h, opts["identity"]) for h in inventory.hosts)
        )
    factory = ssh_transport_factory(
        known_hosts=opts["known_hosts"],
        accept_new=opts["accept_new_host_key"],
        connect_timeout=opts["connect_timeout"],
        retries=opts["retries"],
        ssh_config=opts["ssh_config"] or None,
    )
    return inventory, factory


@hosts_group.command("run", context_settings={"ignore_unknown_options": True})
@_ssh_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run_cmd(command: tuple[str, ...], **opts: Any) -> None:
    """Run COMMAND (argv, after --) on every host; identical answers are folded."""
    from probes.fanout import fan_out, fold

    inventory, factory = _setup(opts)
    results = fan_out(inventory.hosts, list(command), factory, opts["concurrency"], opts["timeout"])
    if opts["as_json"]:
        click.echo(json.dumps({"results": [_result_json(r) for r in results]}, indent=2))
    else:
        click.echo(render_folded(fold(results)), nl=False)
    _exit_for(results)


@hosts_group.command("check")
@_ssh_options
def check_cmd(**opts: Any) -> None:
    """HCA preflight on every host: devices, port state, rate; identical hosts are folded."""
    from probes.inventory import fold_names, host_sort_key
    from probes.preflight import preflight_hosts

    inventory, factory = _setup(opts)
    reports = preflight_hosts(inventory.hosts, factory, opts["concurrency"], opts["timeout"])
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
        click.echo(json.dumps(out, indent=2))
    else:
        groups: dict[tuple[bool, str], list[str]] = {}
        for r in reports:
            groups.setdefault((r.problem is None, r.summary()), []).append(r.host)
        rows = sorted(groups.items(), key=lambda kv: min(host_sort_key(h) for h in kv[1]))
        for (fine, summary), names in rows:
            mark = "ok" if fine else "FAIL"
            click.echo(f"{fold_names(names)} ({len(names)}): {mark}: {summary}")
    bad = [r for r in reports if r.problem is not None]
    if bad:
        unreachable = sum(r.result.failure is not None for r in bad)
        click.echo(f"ibfab: {len(bad)} of {len(reports)} hosts not ready", err=True)
        raise click.exceptions.Exit(TransportError.exit_code if unreachable else 1)


def render_folded(folded: Sequence[FoldedResult]) -> str:
    """Headers per group of identical hosts, then their output (stderr lines marked ``!``)."""
    lines: list[str] = []
    for f in folded:
        n = f"{f.count} host" + ("s" if f.count != 1 else "")
        status = f"exit {f.exit_code}" if f.failure is None else f"{f.failure.value}: {f.message}"
        lines.append(f"== {f.hosts} ({n}): {status}")
        lines += f.stdout.splitlines()
        lines += [f"! {ln}" for ln in f.stderr.splitlines()]
    return "\n".join(lines) + ("\n" if lines else "")


def _result_json(r: CommandResult) -> dict[str, Any]:
    return {
        "host": r.host,
        "argv": list(r.argv),
        "exit_code": r.exit_code,
        "stdout": r.stdout,
        "stderr": r.stderr,
        "duration": round(r.duration, 4),
        **_failure(r),
    }


def _failure(r: CommandResult) -> dict[str, Any]:
    return {"failure": r.failure.value if r.failure else None, "message": r.message}


def _exit_for(results: Sequence[CommandResult]) -> None:
    from probes.inventory import fold_names

    bad = [r for r in results if not r.ok]
    if not bad:
        return
    click.echo(
        f"ibfab: {len(bad)} of {len(results)} hosts failed: {fold_names(r.host for r in bad)}", err=True
    )
    unreachable = any(r.failure is not None and r.failure.value != "command_timeout" for r in bad)
    raise click.exceptions.Exit(TransportError.exit_code if unreachable else 1)
