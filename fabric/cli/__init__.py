"""The ``ibfab`` command line: a thin layer that parses options, calls fabric.app.readmodel and renders.

Each command group lives in its own module and is registered in ``_COMMANDS``; heavy imports
(pandas, paramiko, textual) happen inside the commands so that ``ibfab --help`` stays fast.
"""

from __future__ import annotations

from fabric.cli.main import main

__all__ = ["main"]
