"""Options for commands that can run through Slurm (``--launcher slurm`` and where in Slurm)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from fabric.app.sweeps.sweep_slurm import SlurmChoice

F = TypeVar("F", bound=Callable[..., Any])

# The options' names, as a scheduled sweep stores them too (fabric.app.daemon.jobs.SLURM_KEYS).
SLURM_OPTION_KEYS = (
    "launcher",
    "partition",
    "reservation",
    "nodes",
    "idle",
    "node_map",
    "time_limit",
    "shared_dir",
)


def slurm_choice(
    launcher: str,
    partition: str | None,
    reservation: str | None,
    nodes: str | None,
    idle: bool,
    node_map: str | None,
    time_limit: int | None,
    shared_dir: str | None,
) -> SlurmChoice | None:
    """The Slurm options as one choice, or None when the launcher is not Slurm."""
    from topology.errors import UsageError

    if launcher != "slurm":
        given = [
            name
            for name, value in (
                ("--partition", partition),
                ("--reservation", reservation),
                ("--nodes", nodes),
                ("--idle", idle or None),
                ("--node-map", node_map),
                ("--time-limit", time_limit),
                ("--shared-dir", shared_dir),
            )
            if value is not None
        ]
        if given:
            raise UsageError(f"{', '.join(given)} only apply with --launcher slurm")
        return None
    from fabric.app.slurm import read_node_map
    from fabric.app.sweeps.sweep_slurm import SlurmChoice

    return SlurmChoice(
        partition, reservation, nodes, idle, read_node_map(node_map), time_limit, shared_dir=shared_dir
    )


def slurm_sweep_options(fn: F) -> F:
    """``--launcher ssh|slurm`` and the Slurm options; the command receives them as ``slurm``
    (a :class:`~fabric.app.sweeps.sweep_slurm.SlurmChoice`, or None for the other launchers)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs["slurm"] = slurm_choice(*(kwargs.pop(k) for k in SLURM_OPTION_KEYS))
        return fn(*args, **kwargs)

    for opt in reversed(
        (
            click.option(
                "--launcher",
                type=click.Choice(["ssh", "slurm"]),
                default="ssh",
                show_default=True,
                help="slurm: one exclusive allocation (job ibfab-sweep), each pair side a job step.",
            ),
            click.option("--partition", metavar="P", help="Slurm partition to allocate from."),
            click.option("--reservation", metavar="R", help="Slurm reservation to allocate in."),
            click.option("--nodes", metavar="RANGE", help="Sweep only these Slurm nodes, e.g. gpu[001-064]."),
            click.option("--idle", is_flag=True, help="Sweep only the nodes Slurm has idle now."),
            click.option(
                "--node-map",
                metavar="FILE",
                help="Fabric host -> Slurm node, one pair a line (ranges allowed) where names differ.",
            ),
            click.option(
                "--time-limit",
                type=click.IntRange(1, 10080),
                metavar="MIN",
                help="The allocation's time limit (default: from the plan's rounds and --timeout).",
            ),
            click.option(
                "--shared-dir",
                metavar="DIR",
                help="Lab sweeps: a directory every Slurm node sees (default: the temp directory).",
            ),
        )
    ):
        wrapper = opt(wrapper)
    return wrapper  # type: ignore[return-value]
