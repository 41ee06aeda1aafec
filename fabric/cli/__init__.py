"""The ``ibfab`` command line: a thin layer that parses options, calls fabric.app.readmodel.service and renders.

Each command group lives in its own module and is listed in fabric/cli/main.py (``ibfab tui``
joins in tui/program.py, the program's entry point); heavy imports
(pandas, paramiko, textual) happen inside the commands so that ``ibfab --help`` stays fast.
"""

from __future__ import annotations

from fabric.cli.main import main

__all__ = ["main"]
