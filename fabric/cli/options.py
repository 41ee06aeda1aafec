"""Option groups shared by several commands, and the one place a command builds its session."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from fabric.app.discovery.discover import Discovery
    from fabric.app.session import Session
    from fabric.app.source import Source

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


def build_session(
    *,
    db: str | None = None,
    source: Source | None = None,
    thresholds: str | None = None,
    node_map: str | None = None,
    inventory: str | None = None,
    known_hosts: str | None = None,
    accept_new_host_key: bool = False,
    identity: str | None = None,
) -> Session:
    """The command's session: where its fabric is (``source``; this machine when None), its store
    (``--db``), the site's thresholds and node map files (read here: a bad file is a one-line error
    before anything runs) and the SSH options. Every command builds its session here."""
    from fabric.app.session import open_session
    from fabric.app.source import SshOptions

    return open_session(
        source,
        db=Path(db) if db else None,
        thresholds_file=Path(thresholds) if thresholds else None,
        node_map_file=Path(node_map) if node_map else None,
        ssh=SshOptions(inventory, known_hosts, accept_new_host_key, identity),
    )


def lab_session(name: str, db: str | None = None) -> Session:
    """The session on lab ``name`` (``ibfab lab`` and ``triage plant|clear`` name the lab only)."""
    from fabric.app.source import Source

    return build_session(db=db, source=Source.lab(name))


def chosen_source(
    db: str | None,
    input_path: str | None = None,
    ssh: str | None = None,
    lab: str | None = None,
    *,
    ibdiagnet: str | None = None,
    snapshot: str | None = None,
    stored_default: bool = False,
) -> Source:
    """The source the command line chose (one of them; a saved file's text read here)."""
    from fabric.app.session import StoreAccess, choose_source

    return choose_source(
        StoreAccess.at(Path(db) if db else None),
        input_path,
        ssh,
        lab,
        ibdiagnet=ibdiagnet,
        snapshot=snapshot,
        stored_default=stored_default,
    )


def source_session(
    opts: dict[str, Any],
    db: str | None = None,
    *,
    stored_default: bool = True,
    thresholds: str | None = None,
    node_map: str | None = None,
) -> Session:
    """The session of a command with the :func:`source_options` (popped from ``opts``; ``db`` when
    the command took ``--db`` as a parameter of its own).

    With no source given, a command that only reads (``stored_default``) uses the newest stored
    snapshot when the store has one, instead of running ibnetdiscover here."""
    db = opts.pop("db", None) or db
    source = chosen_source(
        db,
        opts.pop("input_path"),
        opts.pop("ssh"),
        opts.pop("lab"),
        ibdiagnet=opts.pop("ibdiagnet_dir"),
        snapshot=opts.pop("snapshot"),
        stored_default=stored_default,
    )
    return build_session(
        db=db,
        source=source,
        thresholds=thresholds,
        node_map=node_map,
        inventory=opts.pop("inventory"),
        known_hosts=opts.pop("known_hosts"),
        accept_new_host_key=opts.pop("accept_new_host_key"),
        identity=opts.pop("identity"),
    )


def discover_in(session: Session) -> Discovery:
    """Discovery of the session's fabric; whenever a stored snapshot is read, stderr says which."""
    from fabric.app.discovery.discover import discover
    from fabric.present.discovery import stored_snapshot_line

    d = discover(session)
    line = stored_snapshot_line(d)
    if line:
        click.echo(f"ibfab: {line}", err=True)
    return d


def discover_from(opts: dict[str, Any], db: str | None = None, *, stored_default: bool = True) -> Discovery:
    """Discovery from the :func:`source_options` (popped from ``opts``; see :func:`source_session`)."""
    return discover_in(source_session(opts, db, stored_default=stored_default))
