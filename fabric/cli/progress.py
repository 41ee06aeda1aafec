"""A transient status line for steps that take a second or more: on a terminal only (stderr),
erased when the step ends, so piped or logged output stays exactly the result."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click


@contextmanager
def status(text: str) -> Iterator[None]:
    """``text`` on stderr while the block runs, if stderr is a terminal; nothing otherwise."""
    shown = sys.stderr.isatty()
    if shown:
        click.echo(f"{text} ...", err=True, nl=False)
    try:
        yield
    finally:
        if shown:
            click.echo("\r\x1b[K", err=True, nl=False)
