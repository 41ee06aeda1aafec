"""Option groups shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

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
