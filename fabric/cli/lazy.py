"""A click group whose commands are imported when they run (or when ``--help`` lists them).

``ibfab --version`` then imports click and this module, nothing of the fabric; ``ibfab discover``
imports the discover command's module and what it uses. The registry is a mapping of command
name -> ``"module:attribute"``; a new command joins it with one line (see fabric/cli/main.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

import click


def load(target: str) -> click.Command:
    """The command object that ``"module:attribute"`` names."""
    module, _, attribute = target.partition(":")
    command = getattr(importlib.import_module(module), attribute)
    if not isinstance(command, click.Command):  # a wrong registry line: a programming error
        raise TypeError(f"{target} is not a click command")
    return command


class LazyGroup(click.Group):
    """A group listing ``lazy`` commands by name and importing each the first time it is asked for.

    ``joins``: group name -> commands defined in other modules that join that group (imported with
    the group)."""

    def __init__(
        self,
        *args: Any,
        lazy: Mapping[str, str] | None = None,
        joins: Mapping[str, Sequence[str]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, str] = dict(lazy or {})
        self.joins: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in (joins or {}).items()}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            command = load(self.lazy[cmd_name])
            if isinstance(command, click.Group):
                for target in self.joins.get(cmd_name, ()):
                    command.add_command(load(target))
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)
