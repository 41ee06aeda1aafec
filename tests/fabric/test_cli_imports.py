"""What the ``ibfab`` program imports: ``--version`` and ``--help`` nothing heavy (textual,
paramiko, pandas, numpy, the store), a command only what it uses (``discover --input FILE``
without ``--save`` neither numpy nor pandas nor the store, nor ClusterShell or the inventory), and ``--help`` still lists every
command of the registry."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from fabric.cli.lazy import load
from fabric.cli.main import COMMANDS, JOINS, main
from topology.generate import generate, to_ibnetdiscover

# ClusterShell and the inventory: a report folds its one-number host names without them
# (probes.hostfold); they are for SSH sources and multi-number names.
HEAVY = (
    "textual",
    "paramiko",
    "pandas",
    "numpy",
    "fabric.store",
    "sqlite3",
    "ClusterShell",
    "probes.inventory",
)


def loaded_after(*argv: str, succeeds: bool = True) -> list[str]:
    """The heavy modules loaded once ``ibfab ARGV`` has run in a new interpreter (the script's own
    entry point, :mod:`tui.program`)."""
    probe = (
        "import atexit, json, sys\n"
        f"heavy = {list(HEAVY)!r}\n"
        "atexit.register(lambda: sys.__stderr__.write('\\nLOADED ' + json.dumps("
        "sorted(h for h in heavy if h in sys.modules)) + '\\n'))\n"
        f"sys.argv = ['ibfab', *{list(argv)!r}]\n"
        "from tui.program import main\nmain()\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert (out.returncode == 0) is succeeds, out.stderr
    line = next(x for x in out.stderr.splitlines() if x.startswith("LOADED "))
    loaded: list[str] = json.loads(line.removeprefix("LOADED "))
    return loaded


@pytest.mark.parametrize("argv", [["--version"], ["--help"]], ids=["version", "help"])
def test_version_and_help_load_nothing_heavy(argv: list[str]) -> None:
    assert loaded_after(*argv) == []


def test_discover_without_save_loads_no_numpy_pandas_or_store(tmp_path: Path) -> None:
    capture = tmp_path / "fabric.topo"
    capture.write_text(to_ibnetdiscover(generate("rail-small")))
    assert loaded_after("discover", "--input", str(capture)) == []


def test_the_check_sees_a_heavy_import(tmp_path: Path) -> None:
    # the same probe does see what a command that reads the store loads: the tests above can fail
    assert {"numpy", "pandas", "fabric.store"} <= set(
        loaded_after("health", "--db", str(tmp_path / "none.db"), succeeds=False)
    )


def test_the_tui_is_not_imported_by_the_program() -> None:
    code = "import json, sys; import tui.program; print(json.dumps('textual' in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) is False
    code = "import json, sys; import tui.app; print(json.dumps('textual' in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) is True


def test_every_registered_command_loads_under_its_own_name() -> None:
    # a registry line names a module of fabric.cli only: the import contracts see every edge
    # from those modules, so the strings cannot reach around a layer
    registered = [*COMMANDS.values(), *(t for group in JOINS.values() for t in group)]
    assert all(t.startswith("fabric.cli.") and t.count(":") == 1 for t in registered)
    for name, target in COMMANDS.items():
        assert load(target).name == name, target
    for group, targets in JOINS.items():
        assert isinstance(load(COMMANDS[group]), click.Group)
        assert all(load(t).name for t in targets)


def test_help_lists_every_command_and_the_joined_ones_run_under_their_group() -> None:
    runner = CliRunner()
    listed = runner.invoke(main, ["--help"]).output.split("Commands:")[1]
    names = {line.split()[0] for line in listed.splitlines() if line.startswith("  ") and line.split()}
    assert set(COMMANDS) <= names
    for group, targets in JOINS.items():
        sub = runner.invoke(main, [group, "--help"]).output
        for target in targets:
            assert f"  {load(target).name} " in sub, (group, target)


def test_an_unknown_command_is_a_usage_error() -> None:
    out = CliRunner().invoke(main, ["no-such-command"])
    assert out.exit_code == 2 and "No such command 'no-such-command'" in out.output
