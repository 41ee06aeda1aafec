"""The root click group, error mapping and command registry (``ibfab tui`` joins it in
:mod:`tui.program`, the ``ibfab`` script, because fabric may not import tui)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from fabric import __version__
from fabric.cli.lazy import LazyGroup
from fabric.core.warnlog import on_logging
from topology.errors import IbfabError


class _Root(LazyGroup):
    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if args is None and standalone_mode:  # the ibfab program itself (reads sys.argv, exits)
            from fabric.cli import quickexit

            quickexit.allow()
        return super().main(args, prog_name, complete_var, standalone_mode, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except IbfabError as exc:
            if ctx.params.get("debug"):
                raise
            click.echo(f"ibfab: error: {exc.one_line()}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("ibfab: interrupted", err=True)
            ctx.exit(130)
        except BrokenPipeError:
            sys.stderr.close()
            ctx.exit(141)


# The commands, by name: each module is imported when its command runs (or ``--help`` lists it),
# and each command imports what it runs inside its body, so that ``ibfab --version`` and
# ``ibfab --help`` stay fast. Add a command: one line here.
COMMANDS: dict[str, str] = {
    "counters": "fabric.cli.counters:counters_group",
    "daemon": "fabric.cli.schedule:daemon_cmd",
    "demo": "fabric.cli.demo:demo_cmd",
    "discover": "fabric.cli.discover:discover_cmd",
    "drain": "fabric.cli.drain:drain_group",
    "export": "fabric.cli.export:export_group",
    "exporter": "fabric.cli.exporter:exporter_cmd",
    "hca": "fabric.cli.hosts:hca_cmd",
    "health": "fabric.cli.health:health_cmd",
    "hosts": "fabric.cli.hosts:hosts_group",
    "isolate": "fabric.cli.advise:isolate_cmd",
    "lab": "fabric.cli.lab:lab",
    "place": "fabric.cli.place:place_cmd",
    "routes": "fabric.cli.routes:routes_group",
    "probe": "fabric.cli.probe:probe_group",
    "recommend": "fabric.cli.advise:recommend_cmd",
    "schedule": "fabric.cli.schedule:schedule_group",
    "status": "fabric.cli.status:status_cmd",
    "store": "fabric.cli.store:store_group",
    "sweep": "fabric.cli.sweep:sweep_group",
    "topology": "fabric.cli.discover:topology_group",
    "triage": "fabric.cli.triage:triage_group",
    "whatif": "fabric.cli.advise:whatif_group",
}
# commands that join a group defined in another module
JOINS: dict[str, tuple[str, ...]] = {
    "topology": ("fabric.cli.plan:check_cmd", "fabric.cli.snapshots:list_cmd", "fabric.cli.cables:cable_cmd"),
    "export": ("fabric.cli.plan:export_plan_cmd",),
    "probe": ("fabric.cli.probe_read:read_cmd",),
}


def _warn_on_stderr() -> None:
    """Warnings of the layers below (a damaged snapshot skipped, ...) as one ``ibfab: warning:``
    line each on stderr, whatever stderr is at the time (CliRunner swaps it). Installed when a
    command runs, once logging is imported (fabric.core.warnlog): ``ibfab --version``, ``--help``
    and the commands whose modules never log never import it."""
    on_logging(_install_warning_lines)


def _install_warning_lines() -> None:
    import logging

    class _Warnings(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            click.echo(f"ibfab: warning: {' '.join(record.getMessage().split())}", err=True)

    fabric_log = logging.getLogger("fabric")
    if not any(type(h).__name__ == "_Warnings" for h in fabric_log.handlers):
        fabric_log.addHandler(_Warnings(logging.WARNING))  # (Python's last-resort handler then stays quiet)


@click.group(cls=_Root, lazy=COMMANDS, joins=JOINS, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.version_option(__version__, prog_name="ibfab")  # not package_name: importlib.metadata costs 20 ms
def main(debug: bool) -> None:
    """InfiniBand fabric health and routing toolkit."""
    _warn_on_stderr()
