"""``ibfab discover`` ends its process without freeing the fabric (fabric.cli.quickexit), only
when it is the ibfab program itself: the output is the same bytes as an in-process run's, the
exit handlers still run, the status is 0; a caller passing its own arguments, and CliRunner,
get the command back as usual."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from topology.generate import generate, to_ibnetdiscover

# The program as its console script runs it, with an exit handler and a ``finally`` that only a
# normal exit reaches (os._exit skips it: the quick exit happened).
PROGRAM = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.__stderr__.write('EXIT HANDLER RAN\\n'))\n"
    "sys.argv = ['ibfab', *sys.argv[1:]]\n"
    "from tui.program import main\n"
    "try:\n"
    "    main()\n"
    "finally:\n"
    "    sys.__stderr__.write('UNWOUND\\n')\n"
)


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("quickexit") / "fabric.topo"
    path.write_text(to_ibnetdiscover(generate("rail-small", ["miswire:dgx-0002:1:2"])))
    return path


@pytest.mark.parametrize("extra", [[], ["--json"], ["--all-anomalies"]], ids=["text", "json", "all"])
def test_the_program_ends_at_once_with_the_same_output(capture: Path, extra: list[str]) -> None:
    argv = ["discover", "--input", str(capture), *extra]
    inside = CliRunner().invoke(main, argv)
    assert inside.exit_code == 0, inside.output
    out = subprocess.run([sys.executable, "-c", PROGRAM, *argv], capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode() == inside.stdout
    assert "EXIT HANDLER RAN" in out.stderr.decode()
    assert "UNWOUND" not in out.stderr.decode()  # the quick exit: nothing after the command ran


def test_a_caller_with_its_own_arguments_gets_the_command_back(capture: Path) -> None:
    code = (
        "from tui.program import main\n"
        f"main(['discover', '--input', {str(capture)!r}], standalone_mode=False)\n"
        "print('CALLER CONTINUES')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip().endswith("CALLER CONTINUES")


def test_a_normal_exit_where_the_store_was_written(capture: Path, tmp_path: Path) -> None:
    argv = ["discover", "--input", str(capture), "--save", "--db", str(tmp_path / "s.db")]
    out = subprocess.run([sys.executable, "-c", PROGRAM, *argv], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "saved topology snapshot" in out.stderr
    assert "UNWOUND" in out.stderr  # --save: the process ends the usual way
