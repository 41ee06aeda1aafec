"""Stored topology snapshots as a source: ``--snapshot latest|ID|LABEL`` for every command that
reads a fabric, and the newest snapshot when such a command is given no source (nothing runs).

PATH is emptied for these tests: a command that tried to run ibnetdiscover would fail with
"ibnetdiscover: command not found", so a zero exit shows that no tool ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.store import Store, default_db_path
from tests.conftest import REALDATA

CAPTURE = REALDATA / "ibnetdiscover" / "garyli-ibdiagnet2-ndr-272nodes-label-ports.txt"
IBDIAG_DIR = REALDATA / "ibdiagnet"


@pytest.fixture(autouse=True)
def _no_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "no-tools"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout, res.stderr


def save(*args: str) -> None:
    code, _, err = run("discover", *args, "--save")
    assert code == 0, err


def test_no_store_runs_ibnetdiscover_here() -> None:
    assert not default_db_path().exists()
    code, _, err = run("export", "slurm-topology")
    assert code != 0 and "ibnetdiscover" in err and "not found" in err


def test_a_store_without_topology_snapshots_still_runs_here() -> None:
    Store.open().close()
    code, _, err = run("export", "hostfile")
    assert code != 0 and "ibnetdiscover: command not found" in err


def test_exports_read_the_newest_snapshot_when_no_source_is_given() -> None:
    save("--input", str(CAPTURE), "--label", "clean")
    for command in (
        ["export", "slurm-topology"],
        ["export", "hostfile"],
        ["export", "k8s-labels"],
        ["export", "kueue"],
        ["export", "json"],
        ["export", "plan"],
    ):
        code, stored, err = run(*command)
        assert code == 0, (command, err)
        assert 'using stored topology snapshot 1 "clean", taken ' in err
        assert f"from {CAPTURE}" in err and "(9 switches, 263 HCAs, 271 cables)" in err
        # The same document as from the capture itself (the stored fabric is the parsed one).
        code, direct, direct_err = run(*command, "--input", str(CAPTURE))
        assert code == 0 and stored == direct
        assert "using stored topology snapshot" not in direct_err


def test_place_from_a_snapshot_by_label_id_and_latest() -> None:
    save("--input", str(CAPTURE), "--label", "before")
    save("--ibdiagnet", str(IBDIAG_DIR), "--label", "after")
    code, direct, _ = run("place", "--nodes", "6", "--format", "slurm", "--input", str(CAPTURE))
    assert code == 0 and direct.strip()
    for ref, shown in (("before", "1"), ("1", "1"), ("after", "2"), ("latest", "2"), ("2", "2")):
        code, out, err = run("place", "--nodes", "6", "--format", "slurm", "--snapshot", ref)
        assert code == 0, err
        # Both snapshots are the same fabric (ibnetdiscover and ibdiagnet of one run).
        assert out == direct
        assert f"using stored topology snapshot {shown} " in err
    code, out, _ = run("place", "--nodes", "6", "--format", "slurm")
    assert code == 0 and out == direct


def test_unknown_snapshot_is_one_line() -> None:
    save("--input", str(CAPTURE))
    code, out, err = run("export", "hostfile", "--snapshot", "nightly")
    assert code == 5 and out == ""
    assert err.count("\n") == 1 and "no topology snapshot 'nightly'" in err


def test_snapshot_of_an_explicit_store(tmp_path: Path) -> None:
    db = str(tmp_path / "site.db")
    code, _, _ = run("discover", "--input", str(CAPTURE), "--save", "--db", db, "--label", "site")
    assert code == 0 and not default_db_path().exists()
    code, out, err = run("export", "hostfile", "--db", db)
    assert code == 0 and 'snapshot 1 "site"' in err and "is-north-7-compute-1 slots=8" in out
    code, _, err = run("export", "hostfile", "--snapshot", "site")  # the default store has none
    assert code == 5 and "no ibfab store there" in err


def test_sources_are_exclusive() -> None:
    code, _, err = run("export", "hostfile", "--snapshot", "latest", "--input", str(CAPTURE))
    assert code == 2
    assert "choose one of --input, --ssh, --lab, --ibdiagnet, --snapshot" in err


def test_discover_never_reads_a_snapshot_unasked() -> None:
    save("--input", str(CAPTURE))
    code, _, err = run("discover")
    assert code != 0 and "ibnetdiscover: command not found" in err
    code, out, err = run("discover", "--snapshot", "latest", "--json")
    assert code == 0 and json.loads(out)["summary"]["links"] == 271
    assert "using stored topology snapshot 1" in err
    code, _, err = run("discover", "--snapshot", "latest", "--save")
    assert code == 2 and "store that snapshot again" in err


def test_check_sweep_plan_and_recommend_from_the_stored_snapshot(tmp_path: Path) -> None:
    save("--input", str(CAPTURE), "--label", "clean")
    plan = tmp_path / "plan.csv"
    assert run("export", "plan", "-o", str(plan))[0] == 0
    code, out, err = run("topology", "check", "--plan", str(plan), "--json")
    assert code == 0 and json.loads(out)["fabric"] == "snapshot 1"
    assert "using stored topology snapshot 1" in err
    code, out, err = run("sweep", "plan", "--snapshot", "clean", "--json")
    assert code == 0 and json.loads(out)["rounds"] >= 1
    code, direct, _ = run("sweep", "plan", "--input", str(CAPTURE), "--json")
    assert json.loads(direct) == json.loads(out)
    # recommend: the subnet manager is not asked (no sminfo runs for a stored fabric).
    code, out, err = run("recommend", "--json")
    assert code == 0, err
    assert "using stored topology snapshot 1" in err
    sm = json.loads(out)["routing"]["subnet_manager"]
    assert sm["sources"] == {} and sm["notes"] == [] and sm["lid"] is None
