"""``ibfab lab``: bring a simulated fabric up and down, inject faults, talk to the simulator console."""

from __future__ import annotations

from typing import Any

import click

from fabric.cli.jsonout import write_json
from fabric.cli.options import build_session, lab_session
from topology.errors import LabError

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
@click.option(
    "--name",
    default=None,
    help="Lab name (one directory per name; default 'default', a twin's: twin-<its lowest switch GUID>).",
)
@click.option(
    "--from",
    "from_ref",
    metavar="SNAPSHOT|FILE",
    help="A twin of a real fabric: a saved ibnetdiscover capture, an ibdiagnet run's directory or a stored snapshot.",
)
@click.option(
    "--engine", metavar="ENGINE", help="With --from: the site's routing engine(s), when no evidence says."
)
@click.option("--sm-log", metavar="FILE", help="With --from: the site SM's log (the engine it routes with).")
@click.option(
    "--sm-conf", metavar="FILE", help="With --from: the site SM's opensm.conf (its routing_engine)."
)
@click.option("--db", metavar="PATH", help="With --from SNAPSHOT: the store holding it.")
@click.option(
    "--routing",
    metavar="ENGINE",
    help="OpenSM's routing engine(s), e.g. ftree or updn,minhop (default minhop; 'file' with --lfts).",
)
@click.option(
    "--lfts", metavar="DUMP", help="Forwarding tables for OpenSM's file engine to load (a dump_fts)."
)
@click.option(
    "--qos",
    is_flag=True,
    help="Run OpenSM with QoS (-Q): it sets every port's SL2VL table (dfsssp and lash then spread "
    "routes over VLs that way; without it the ports keep ibsim's SL n to VL n).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the lab state as JSON.")
def up_cmd(
    spec: str | None,
    faults: tuple[str, ...],
    name: str | None,
    from_ref: str | None,
    engine: str | None,
    sm_log: str | None,
    sm_conf: str | None,
    db: str | None,
    routing: str | None,
    lfts: str | None,
    qos: bool,
    as_json: bool,
) -> None:
    """Generate a fabric (or copy a real one with --from), start ibsim and OpenSM, wait for SUBNET UP."""
    from fabric.app.lab import labs

    if from_ref is not None:
        _twin_up(from_ref, name, engine or routing, sm_log, sm_conf, db, lfts, spec, faults, as_json, qos)
        return
    if engine or sm_log or sm_conf:
        raise click.UsageError("--engine, --sm-log and --sm-conf go with --from (else use --routing)")
    state = labs.up(spec, faults, name or "default", routing=routing, lfts_file=lfts, qos=qos)
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


def _twin_up(
    from_ref: str,
    name: str | None,
    engine: str | None,
    sm_log: str | None,
    sm_conf: str | None,
    db: str | None,
    lfts: str | None,
    spec: str | None,
    faults: tuple[str, ...],
    as_json: bool,
    qos: bool = False,
) -> None:
    from fabric.app import twin
    from fabric.present.twin import twin_up_text

    if spec or faults:
        raise click.UsageError("--from copies a real fabric: it takes no --fabric or --fault")
    t = twin.up_from(
        from_ref,
        build_session(db=db),
        name=name,
        engine=engine,
        sm_log=sm_log,
        sm_conf=sm_conf,
        lfts_file=lfts,
        qos=qos,
    )
    if as_json:
        _echo_json(t.to_dict())
    else:
        click.echo(twin_up_text(t))
        _echo_env(t.state.to_dict())
    twin.require_equal(t)  # exit 6 when the twin does not show the fabric it copies


def _echo_env(data: dict[str, Any]) -> None:
    env = " ".join(f"{k}={v}" for k, v in data["env"].items())
    click.echo(f"run tools with: cd {data['tool_cwd']} && {env} ibnetdiscover")


@lab.command("status")
@_NAME
@click.option("--all", "all_labs", is_flag=True, help="Every lab under the lab directory.")
@click.option("--json", "as_json", is_flag=True, help="Print the lab state as JSON.")
def status_cmd(name: str, all_labs: bool, as_json: bool) -> None:
    """Ask the lab whether it works: its processes, a new client attaching, the subnet manager.
    Exit 6 when one is not working (lab restart brings it back)."""
    from fabric.app.lab import labs
    from fabric.present.labs import lab_problem_line, render_lab_health

    checked = labs.check_all() if all_labs else [labs.check(name)]
    if as_json:
        _echo_json([h.to_dict() for h in checked] if all_labs else checked[0].to_dict())
    else:
        for h in checked:
            for line in render_lab_health(h):
                click.echo(line)
            _echo_env(h.state.to_dict())
    sick = [h for h in checked if not h.healthy]
    for h in sick:
        click.echo(f"ibfab: {lab_problem_line(h)}", err=True)
    if sick:
        raise click.exceptions.Exit(LabError.exit_code)


@lab.command("restart")
@_NAME
@click.option("--json", "as_json", is_flag=True, help="Print the lab state as JSON.")
def restart_cmd(name: str, as_json: bool) -> None:
    """Stop the lab's OpenSM and ibsim by PID and bring the same fabric up again (fresh client
    slots, OpenSM sweeping anew); what was injected into the running lab is lost."""
    from fabric.app.lab import labs

    state = labs.restart(name)
    if as_json:
        _echo_json(state.to_dict())
        return
    click.echo(
        f"lab {state.name} restarted in {state.up_seconds:.1f} s: {state.switches} switches, {state.hcas} HCAs"
    )
    _echo_env(state.to_dict())


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
