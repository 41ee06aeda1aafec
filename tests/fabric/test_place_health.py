"""`ibfab place --exclude-unhealthy` and `ibfab export k8s-labels --health` on stored health:
a host whose HCA cable collects symbol errors in a lab is left out, with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from tests.labhealth import collect_rising_symbol_errors, rail_small_lab

pytestmark = pytest.mark.lab


lab_up = rail_small_lab


def test_unhealthy_host_is_left_out_with_its_reason(lab_up: str, tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    # dgx-0002 mlx5_3 sits on leaf-su01-r3 port 2
    collect_rising_symbol_errors(lab_up, db, "leaf-su01-r3", 2, (50, 500))
    res = CliRunner().invoke(
        main,
        ["place", "--nodes", "4", "--lab", lab_up, "--exclude-unhealthy", "--format", "json", "--db", db],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert "dgx-0002" not in out["hosts"] and len(out["hosts"]) == 4
    reasons = {x["host"]: x["reason"] for x in out["left_out"]}
    assert "dgx-0002" in reasons and "leaf-su01-r3:2" in reasons["dgx-0002"]
    # without the flag it may be chosen: pack fills unit 1 (dgx-0001..0004) first
    res = CliRunner().invoke(main, ["place", "--nodes", "4", "--lab", lab_up, "--format", "json", "--db", db])
    assert "dgx-0002" in json.loads(res.stdout)["hosts"]
    # the health label on the Kubernetes export says the same
    res = CliRunner().invoke(main, ["export", "k8s-labels", "--lab", lab_up, "--health", "--db", db])
    assert res.exit_code == 0, res.output
    line = next(ln for ln in res.stdout.splitlines() if "dgx-0002" in ln)
    assert "critical" in line
