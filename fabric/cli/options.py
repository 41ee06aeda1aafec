"""Option groups shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def ssh_options(fn: F) -> F:
    """``--inventory``, ``--known-hosts``, ``--accept-new-host-key``, ``--identity`` for SSH sources."""
    for opt in reversed(
        (
            click.option(
                "--inventory", metavar="FILE", help="Host inventory (user, port, key, jump host per host)."
            ),
            click.option("--known-hosts", metavar="FILE", help="known_hosts to verify host keys against."),
            click.option(
                "--accept-new-host-key",
                is_flag=True,
                help="Trust and record a host key seen for the first time (a changed key is still refused).",
            ),
            click.option("--identity", metavar="KEYFILE", help="Private key for SSH."),
        )
    ):
        fn = opt(fn)
    return fn
