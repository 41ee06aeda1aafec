"""`ibfab topology check`, `ibfab export plan` and `ibfab discover --ibdiagnet` on saved captures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.cli.plan import EXIT_DIFFERS, EXIT_UNCHECKED
from tests.conftest import REALDATA
from topology.generate import generate, to_ibnetdiscover

CAPTURE_272 = REALDATA / "ibnetdiscover" / "garyli-ibdiagnet2-ndr-272nodes-label-ports.txt"
IBDIAG_DIR = REALDATA / "ibdiagnet"


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout, res.stderr


def test_export_then_check_clean(tmp_path: Path) -> None:
    plan = tmp_path / "plan.csv"
    code, _, err = run("export", "plan", "--input", str(CAPTURE_272), "-o", str(plan))
    assert code == 0 and "wrote 264 cables" in err
    assert plan.read_text().startswith("#StartDevice,StartPort,EndDevice,EndPort,LinkType,Speed\n")
    code, out, _ = run("topology", "check", "--plan", str(plan), "--input", str(CAPTURE_272))
    assert code == 0 and "The fabric matches the plan." in out
    # The same fabric read from the ibdiagnet run of it matches the plan too.
    code, out, _ = run("topology", "check", "--plan", str(plan), "--ibdiagnet", str(IBDIAG_DIR), "--json")
    data = json.loads(out)
    assert code == 0 and data["summary"]["differs"] is False and data["summary"]["matched"] == 264


def test_planted_faults_exit_10_and_json(tmp_path: Path) -> None:
    clean, faulty = tmp_path / "clean.txt", tmp_path / "faulty.txt"
    clean.write_text(to_ibnetdiscover(generate("rail-small")))
    design = generate("rail-small", ("missing-link:leaf-su01-r2", "degraded-width:leaf-su01-r0:1"))
    faulty.write_text(to_ibnetdiscover(design))
    plan = tmp_path / "plan.csv"
    assert run("export", "plan", "--input", str(clean), "-o", str(plan))[0] == 0
    code, out, _ = run("topology", "check", "--plan", str(plan), "--input", str(faulty), "--json")
    assert code == EXIT_DIFFERS
    data = json.loads(out)
    assert sorted(f["verdict"] for f in data["findings"]) == ["below_plan", "missing"]
    for f in data["findings"]:
        assert f["evidence"] and f["expected"]
    code, out, _ = run("topology", "check", "--plan", str(plan), "--input", str(faulty))
    assert code == EXIT_DIFFERS
    assert "Missing in the fabric (1):" in out and "Slower than planned (1):" in out
    assert "leaf-su01-r0" in out


def test_unchecked_only_exit_11(tmp_path: Path) -> None:
    plan = tmp_path / "p.csv"
    plan.write_text(
        "#StartDevice,StartPort,EndDevice,EndPort,LinkType\n"
        "Quantum-2 Mellanox Technologies,Port 1,ib-switch-sequoia,Port 1,Data\n"
    )
    code, out, _ = run("topology", "check", "--plan", str(plan), "--input", str(CAPTURE_272))
    assert code == EXIT_UNCHECKED and "Could not check (1):" in out


@pytest.mark.parametrize(
    "name", ["ufm-ndt-negative_flow_ndts-garbage.ndt", "ufm-ndt-negative_flow_ndts-incorrect_ports.ndt"]
)
def test_unreadable_plan_is_one_line(name: str) -> None:
    path = REALDATA / "ndt" / name
    code, out, err = run("topology", "check", "--plan", str(path), "--input", str(CAPTURE_272))
    assert code == 3 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"ibfab: error: {path}:")


def test_sources_are_exclusive(tmp_path: Path) -> None:
    plan = tmp_path / "p.csv"
    plan.write_text("#StartDevice,StartPort,EndDevice,EndPort\na,Port 1,b,Port 1\n")
    code, _, err = run(
        "topology", "check", "--plan", str(plan), "--input", str(CAPTURE_272), "--ibdiagnet", str(IBDIAG_DIR)
    )
    assert code == 2 and "choose one of --input, --ssh, --lab, --ibdiagnet" in err


def test_discover_ibdiagnet() -> None:
    code, out, _ = run("discover", "--ibdiagnet", str(IBDIAG_DIR), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["summary"]["switches"] == 9 and data["summary"]["links"] == 271
    code, _, err = run("discover", "--ibdiagnet", str(REALDATA / "ndt"))
    assert code == 2 and "no ibdiagnet2.db_csv" in err


def test_discover_ibdiagnet_save(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    code, _, err = run("discover", "--ibdiagnet", str(IBDIAG_DIR), "--save", "--db", str(db))
    assert code == 0 and "saved topology snapshot" in err
