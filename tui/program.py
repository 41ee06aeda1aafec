"""The ``ibfab`` program: every command of :mod:`fabric.cli` and ``ibfab tui``.

It lives in the top layer because it assembles both front ends: the command line (fabric.cli,
which may not import tui) and the terminal UI's command (:mod:`tui.cli`). pyproject.toml's
``ibfab`` script points here. Textual is still imported only when ``ibfab tui`` runs.
"""

from __future__ import annotations

from fabric.cli.main import main
from tui.cli import tui_cmd

main.add_command(tui_cmd)

__all__ = ["main"]
