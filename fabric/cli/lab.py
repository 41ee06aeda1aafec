"""``ibfab lab``: bring a simulated fabric up and down, inject faults, talk to the simulator console."""

from __future__ import annotations

from typing import Any

import click

from fabric.cli.jsonout import write_json
from fabric.cli.options import lab_session

_NAME = click.option(
    "--name", default="default", show_default=True, help="Lab name (one directory per name)."
)


def _echo_json(data: Any) -> None:
    write_json(data, sort_keys=True)


@click.group("lab")
def lab() -> None:
    """A simulated fabric (ibsim + OpenSM) that the real diag tools run against."""


@lab.command("up")
@click.option("--fabric", "spec", default=None, help="Fabric spec or preset (default rail-small).")
@click.option(
    "--fault", "faults", multiple=True, help="Plant a fault, e.g. miswire:dgx-0002:1:2 (repeatable)."
)
@_NAME
@click.option("--json", "as_json", is_flag=True, help="Print the lab state as JSON.")
def up_cmd(spec: str | None, faults: tuple[str, ...], name: str, as_json: bool) -> None:
    """Generate a fabric, start ibsim and OpenSM, and wait for SUBNET UP."""
    from fabric.app.lab import labs

    state = labs.up(spec, faults, name)
    if as_json:
        _echo_json(state.to_dict())
        return
    click.echo(
        f"lab {state.name} up in {state.up_seconds:.1f} s: {state.switches} switches, {state.hcas} HCAs "
        f"({state.spec}{'; faults: ' + ' '.join(state.faults) if state.faults else ''})"
    )
    for note in labs.simulator_notes(state.name):
        click.echo(f"note: {note}")
    _echo_env(state.to_dict())


def _echo_env(data: dict[str, Any]) -> None:
    env = " ".join(f"{k}={v}" for k, v in data["env"].items())
    click.echo(f"run tools with: cd {data['tool_cwd']} && {env} ibnetdiscover")


@lab.command("status")
@_NAME
@click.option("--all", "all_labs", is_flag=True, help="Every lab under the lab directory.")
@click.option("--json", "as_json", is_flag=True, help="Print the lab state as JSON.")
def status_cmd(name: str, all_labs: bool, as_json: bool) -> None:
    """Show whether the lab's ibsim and OpenSM are running, and how to reach them."""
    from fabric.app.lab import labs

    states = labs.list_labs() if all_labs else [labs.status(name)]
    if as_json:
        _echo_json([s.to_dict() for s in states] if all_labs else states[0].to_dict())
        return
    for s in states:
        word = "running" if s.running else "DEAD"
        click.echo(
            f"{s.name}: {word} (ibsim pid {s.ibsim_pid} {'up' if s.ibsim_alive else 'gone'}, "
            f"opensm pid {s.opensm_pid} {'up' if s.opensm_alive else 'gone'}); "
            f"{s.switches} switches, {s.hcas} HCAs; {s.spec}"
            + (f"; faults: {' '.join(s.faults)}" if s.faults else "")
        )
        _echo_env(s.to_dict())


@lab.command("down")
@_NAME
@click.option("--all", "all_labs", is_flag=True, help="Stop every lab under the lab directory.")
def down_cmd(name: str, all_labs: bool) -> None:
    """Stop the lab's OpenSM and ibsim (only the recorded PIDs) and clean up."""
    from fabric.app.lab import labs

    if all_labs:
        names = labs.down_all()
    else:
        labs.down(name)
        names = [name]
    for n in names:
        click.echo(f"lab {n} down")


@lab.group("inject")
@_NAME
@click.pass_context
def inject(ctx: click.Context, name: str) -> None:
    """Change the running fabric: unplug or replug cables, set counters, drop MADs."""
    ctx.obj = name


@inject.command("link-down")
@click.argument("node_port")
@click.pass_obj
def link_down_cmd(name: str, node_port: str) -> None:
    """Unplug the cable on NODE:PORT (OpenSM sees a trap and resweeps)."""
    from fabric.app.lab import labs

    _print_reply(labs.link_down(lab_session(name), node_port), f"{node_port} unlinked")


@inject.command("link-up")
@click.argument("node_port")
@click.pass_obj
def link_up_cmd(name: str, node_port: str) -> None:
    """Plug back the cable of NODE:PORT that link-down removed."""
    from fabric.app.lab import labs

    _print_reply(labs.link_up(lab_session(name), node_port), f"{node_port} relinked")


@inject.command("counter")
@click.argument("node_port")
@click.argument("assignment")
@click.pass_obj
def counter_cmd(name: str, node_port: str, assignment: str) -> None:
    """Set a port counter: NODE:PORT FIELD=VALUE (e.g. SymbolErrorCounter=120)."""
    from fabric.app.lab import labs

    _print_reply(labs.set_counter(lab_session(name), node_port, assignment), "")


@inject.command("error-rate")
@click.argument("node")
@click.argument("rate", type=click.IntRange(0, 100))
@click.option(
    "--attribute", type=int, default=None, help="Only MADs of this attribute id (16 NodeDescription)."
)
@click.pass_obj
def error_rate_cmd(name: str, node: str, rate: int, attribute: int | None) -> None:
    """Drop RATE % of the MADs arriving at NODE[:PORT] (all its ports without :PORT); 0 stops it."""
    from fabric.app.lab import labs

    labs.set_error_rate(lab_session(name), node, rate, attribute)
    click.echo(f"error rate {rate}% on {node}")


@lab.command("console")
@_NAME
@click.argument("command", nargs=-1, required=True)
def console_cmd(name: str, command: tuple[str, ...]) -> None:
    """Send one command to the simulator console and print its reply (e.g. Dump "leaf-su01-r0")."""
    from fabric.app.lab import labs

    reply = labs.console(lab_session(name), " ".join(command))
    if reply:
        click.echo(reply)


def _print_reply(reply: str, fallback: str) -> None:
    text = reply or fallback
    if text:
        click.echo(text)
