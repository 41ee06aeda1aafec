"""The root click group, error mapping and command registry (``ibfab tui`` joins it in
:mod:`tui.program`, the ``ibfab`` script, because fabric may not import tui)."""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from fabric.cli.advise import isolate_cmd, recommend_cmd, whatif_group
from fabric.cli.cables import cable_cmd
from fabric.cli.counters import counters_group
from fabric.cli.demo import demo_cmd
from fabric.cli.discover import discover_cmd, topology_group
from fabric.cli.drain import drain_group
from fabric.cli.export import export_group
from fabric.cli.exporter import exporter_cmd
from fabric.cli.health import health_cmd
from fabric.cli.hosts import hca_cmd, hosts_group
from fabric.cli.lab import lab
from fabric.cli.place import place_cmd
from fabric.cli.plan import check_cmd, export_plan_cmd
from fabric.cli.probe import probe_group
from fabric.cli.probe_read import read_cmd
from fabric.cli.routes import routes_group
from fabric.cli.schedule import daemon_cmd, schedule_group
from fabric.cli.snapshots import list_cmd
from fabric.cli.status import status_cmd
from fabric.cli.store import store_group
from fabric.cli.sweep import sweep_group
from fabric.cli.triage import triage_group
from topology.errors import IbfabError


class _Root(click.Group):
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


class _Warnings(logging.Handler):
    """Warnings of the layers below (a damaged snapshot skipped, ...) as one ``ibfab: warning:``
    line each on stderr, whatever stderr is at the time (CliRunner swaps it)."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"ibfab: warning: {' '.join(record.getMessage().split())}", err=True)


_fabric_log = logging.getLogger("fabric")
if not any(isinstance(h, _Warnings) for h in _fabric_log.handlers):
    _fabric_log.addHandler(_Warnings(logging.WARNING))  # (Python's last-resort handler then stays quiet)


@click.group(cls=_Root, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.version_option(package_name="ibfab")
def main(debug: bool) -> None:
    """InfiniBand fabric health and routing toolkit."""


# The commands. Each imports what it runs inside its body, so that ``ibfab --help`` stays fast.
# Add a command: import it above, list it here.

for _command in (
    lab,
    discover_cmd,
    topology_group,
    hca_cmd,
    hosts_group,
    demo_cmd,
    sweep_group,
    recommend_cmd,
    isolate_cmd,
    drain_group,
    whatif_group,
    exporter_cmd,
    place_cmd,
    export_group,
    counters_group,
    health_cmd,
    schedule_group,
    daemon_cmd,
    probe_group,
    store_group,
    triage_group,
    routes_group,
    status_cmd,
):
    main.add_command(_command)
# commands that join a group defined in another module
topology_group.add_command(check_cmd)
topology_group.add_command(list_cmd)
topology_group.add_command(cable_cmd)
export_group.add_command(export_plan_cmd)
probe_group.add_command(read_cmd)
