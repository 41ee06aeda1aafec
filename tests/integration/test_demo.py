"""`ibfab demo` end to end: every step checks itself against what it planted and exits 1 if not."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.lab import simulator as lab

pytestmark = [pytest.mark.lab, pytest.mark.slow]


def test_demo_finds_what_it_planted(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["demo", "--no-keep", "--db", str(tmp_path / "demo.db")])
    assert res.exit_code == 0, res.output
    out = res.output
    assert "every planted fault was found" in out
    assert "both planted links are on top" in out
    assert "the degraded cables rank first" in out
    assert "isolate_port: leaf-su01-r1:5 <-> spine-01:2" in out
    assert "the rewired one differs by exactly the planted miswire" in out
    assert (tmp_path / "demo-plan.csv").read_text().startswith("#StartDevice,StartPort,EndDevice,EndPort")
    assert "culprit: node dgx-0006" in out and "the planted node was found in 5 rounds (at most 5)" in out
    # it ends with ibfab status: each planted fault one entry, every source that saw it, its action
    assert "8. What is wrong, one list (ibfab status" in out
    assert "every planted fault is one entry (7), each with its action; nothing else listed" in out
    assert "- [plan] leaf-su01-r5/Port 3 <-> dgx-0003/mlx5_5 is missing" in out
    assert "MISSED" not in out
    assert not [s for s in lab.list_labs() if s.name in ("demo", "demo-plan", "demo-triage")]
