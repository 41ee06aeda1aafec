"""The root click group, error mapping and command registry."""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any

import click

from topology.errors import IbfabError

# module path -> attribute holding a click command or group. Add a line to add a command.
_COMMANDS: tuple[tuple[str, str], ...] = (
    ("fabric.cli.lab", "lab"),
    ("fabric.cli.discover", "discover_cmd"),
    ("fabric.cli.discover", "topology_group"),
    ("fabric.cli.hosts", "hca_cmd"),
    ("fabric.cli.hosts", "hosts_group"),
    ("fabric.cli.demo", "demo_cmd"),
    ("fabric.cli.sweep", "sweep_group"),
    ("fabric.cli.advise", "recommend_cmd"),
    ("fabric.cli.advise", "isolate_cmd"),
    ("fabric.cli.drain", "drain_group"),
    ("fabric.cli.advise", "whatif_group"),
    ("fabric.cli.exporter", "exporter_cmd"),
    ("fabric.cli.place", "place_cmd"),
    ("fabric.cli.export", "export_group"),
    ("fabric.cli.counters", "counters_group"),
    ("fabric.cli.health", "health_cmd"),
    ("tui.cli", "tui_cmd"),
    ("fabric.cli.schedule", "schedule_group"),
    ("fabric.cli.schedule", "daemon_cmd"),
    ("fabric.cli.probe", "probe_group"),
    ("fabric.cli.store", "store_group"),
)
# (group, module path, attribute): commands that join a group defined in another module.
_SUBCOMMANDS: tuple[tuple[str, str, str], ...] = (
    ("topology", "fabric.cli.plan", "check_cmd"),
    ("topology", "fabric.cli.snapshots", "list_cmd"),
    ("topology", "fabric.cli.cables", "cable_cmd"),
    ("export", "fabric.cli.plan", "export_plan_cmd"),
)


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


for _module, _attr in _COMMANDS:
    main.add_command(getattr(importlib.import_module(_module), _attr))
for _group, _module, _attr in _SUBCOMMANDS:
    _parent = main.commands[_group]
    assert isinstance(_parent, click.Group)
    _parent.add_command(getattr(importlib.import_module(_module), _attr))
