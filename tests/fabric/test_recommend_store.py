"""`ibfab recommend` reads the stored health by default: a link with rising symbol errors in a
lab becomes a safety-checked isolate_port action with commands for both subnet managers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from tests.labhealth import collect_rising_symbol_errors, rail_small_lab

pytestmark = pytest.mark.lab


lab_up = rail_small_lab


def test_recommend_uses_the_stored_assessment(lab_up: str, tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    collect_rising_symbol_errors(lab_up, db, "leaf-su01-r1", 5, (40, 400))
    res = CliRunner().invoke(main, ["recommend", "--lab", lab_up, "--db", db, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    isolations = [a for a in out["actions"] if a["kind"] == "isolate_port"]
    assert len(isolations) == 1
    act = isolations[0]
    assert "leaf-su01-r1" in act["target"] and ":5" in act["target"]
    commands = json.dumps(act["commands"])
    assert "ibportstate" in commands and "unhealthy_ports" in commands
    assert "no health data" not in res.stderr


def test_recommend_without_store_gives_routing_advice_only(lab_up: str, tmp_path: Path) -> None:
    res = CliRunner().invoke(
        main, ["recommend", "--lab", lab_up, "--db", str(tmp_path / "none.db"), "--json"]
    )
    assert res.exit_code == 0, res.output
    assert "no health data" in res.stderr
    kinds = {a["kind"] for a in json.loads(res.stdout)["actions"]}
    assert "isolate_port" not in kinds and kinds
