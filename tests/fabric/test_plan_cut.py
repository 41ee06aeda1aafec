"""`ibfab sweep plan` says when its tables are cut short, and --all shows every row."""

from __future__ import annotations

from click.testing import CliRunner

from fabric.cli import main
from tests.conftest import REALDATA

SELENE = REALDATA / "ibnetdiscover" / "ufm-sdk-selene-storage-hdr-edr-1407nodes.txt"
SMALL = REALDATA / "ibnetdiscover" / "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt"


def test_a_cut_table_says_so_and_all_shows_every_round() -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["sweep", "plan", "--input", str(SELENE), "--pattern", "pairwise"])
    assert res.exit_code == 0, res.output
    head = res.stdout.splitlines()[0]
    rounds = int(head.split(" probes in ")[1].split()[0])
    assert f"(40 of {rounds} rounds shown; --all)" in res.stdout
    assert "cables not crossed shown; --all)" in res.stdout
    full = runner.invoke(main, ["sweep", "plan", "--input", str(SELENE), "--pattern", "pairwise", "--all"])
    assert full.exit_code == 0 and "shown; --all" not in full.stdout
    table_rows = [ln for ln in full.stdout.splitlines() if ln.split() and ln.split()[0].isdigit()]
    assert len(table_rows) == rounds


def test_a_table_that_fits_says_nothing_about_cutting() -> None:
    res = CliRunner().invoke(main, ["sweep", "plan", "--input", str(SMALL), "--pattern", "rail-pairs"])
    assert res.exit_code == 0, res.output
    assert "shown; --all" not in res.stdout
