"""Option groups shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from fabric.app.discovery.discover import Discovery

F = TypeVar("F", bound=Callable[..., Any])


def host_key_options(fn: F) -> F:
    """``--known-hosts``, ``--accept-new-host-key`` (alias ``--accept-new``), ``--identity``."""
    for opt in reversed(
        (
            click.option(
                "--known-hosts",
                metavar="FILE",
                type=click.Path(dir_okay=False),
                help="known_hosts to verify host keys against.",
            ),
            click.option(
                "--accept-new-host-key",
                "--accept-new",
                "accept_new_host_key",
                is_flag=True,
                help="Trust and record a host key seen for the first time (a changed key is still refused).",
            ),
            click.option(
                "--identity", metavar="KEYFILE", help="Private key for SSH (overrides the inventory's)."
            ),
        )
    ):
        fn = opt(fn)
    return fn


def ssh_options(fn: F) -> F:
    """``--inventory`` and the :func:`host_key_options` for commands that reach hosts over SSH."""
    fn = host_key_options(fn)
    return click.option(
        "--inventory", metavar="FILE", help="Host inventory (user, port, key, jump host per host)."
    )(fn)


def source_options(fn: F) -> F:
    """Where the fabric comes from, the same for every command that reads one: ``--input``,
    ``--ssh``, ``--lab``, ``--ibdiagnet``, ``--snapshot``, the store ``--db`` and the SSH options.

    Read them with :func:`discover_from`."""
    fn = ssh_options(fn)
    for opt in reversed(
        (
            click.option(
                "--input", "input_path", metavar="FILE", help="Saved ibnetdiscover output ('-' for stdin)."
            ),
            click.option("--ssh", metavar="HOST", help="Run ibnetdiscover on a management host over SSH."),
            click.option("--lab", metavar="NAME", help="Run the real ibnetdiscover against a lab fabric."),
            click.option(
                "--ibdiagnet",
                "ibdiagnet_dir",
                metavar="DIR",
                help="An ibdiagnet output directory (or its ibdiagnet2.db_csv): the fabric that run saw.",
            ),
            click.option(
                "--snapshot",
                metavar="latest|ID|LABEL",
                help="A stored topology snapshot (see 'ibfab topology list'); nothing runs.",
            ),
            click.option("--db", metavar="PATH", help="Store path (default: the user's data directory)."),
        )
    ):
        fn = opt(fn)
    return fn


def discover_from(opts: dict[str, Any], db: str | None = None, *, stored_default: bool = True) -> Discovery:
    """Discovery from the :func:`source_options` (popped from ``opts``; ``db`` when the command
    took ``--db`` as a parameter of its own).

    With no source given, a command that only reads (``stored_default``) uses the newest stored
    snapshot when the store has one, instead of running ibnetdiscover here; whenever a stored
    snapshot is read, stderr says which."""
    from fabric.app.discovery.discover import discover
    from fabric.app.source import SshOptions, read_source
    from fabric.present.discovery import stored_snapshot_line

    db = opts.pop("db", None) or db
    src, text = read_source(
        opts.pop("input_path"),
        opts.pop("ssh"),
        opts.pop("lab"),
        ibdiagnet=opts.pop("ibdiagnet_dir"),
        snapshot=opts.pop("snapshot"),
        db=db,
        stored_default=stored_default,
    )
    ssh = SshOptions(
        opts.pop("inventory"), opts.pop("known_hosts"), opts.pop("accept_new_host_key"), opts.pop("identity")
    )
    d = discover(src, text, ssh)
    line = stored_snapshot_line(d)
    if line:
        click.echo(f"ibfab: {line}", err=True)
    return d
