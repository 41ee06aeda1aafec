"""Credit loops per virtual lane in the lab, read live: OpenSM routes a ring (the real capture in
tests/data/sl2vl) and a fat tree, ``ibfab routes check --lanes`` reads the ports' SL2VL tables with
the real ``smpquery sl2vl`` and each host route's SL with the real ``saquery -p``.

ibsim answers SLtoVL MADs (Get and Set) per in/out port, reports VLCap VL0-7, and starts every
table at SL n to VL n (SL 15 to VL 7); OpenSM without QoS leaves them so, and dfsssp (8 VLs
available) answers path records with the SL of the layer it put each route in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from tests.conftest import ROOT

pytestmark = pytest.mark.lab

RING = ROOT / "tests" / "data" / "sl2vl" / "ibnetdiscover-ring5.txt"


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout, res.stderr


@contextmanager
def lab(name: str, *up: str) -> Iterator[str]:
    code, out, err = run("lab", "up", "--name", name, *up)
    assert code == 0, out + err
    try:
        yield name
    finally:
        run("lab", "down", "--name", name)


def credit(name: str, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run("routes", "check", "--lab", name, "--json", *extra)
    assert code in (0, 10), out + err
    return code, json.loads(out)["credit_loops"]


def test_dfsssp_on_a_ring_breaks_the_one_lane_loop_over_vls() -> None:
    with lab("ringd", "--from", str(RING), "--routing", "dfsssp") as name:
        code, one = credit(name)
        assert code == 10 and one["found"] and not one["lanes_known"]
        code, per_vl = credit(name, "--lanes")
        assert code == 0 and not per_vl["found"] and per_vl["lanes_known"]
        assert len(per_vl["vls_used"]) >= 2  # dfsssp needs 2 layers on the ring
        assert str(per_vl["lanes"]).startswith(f"per VL: SL2VL tables from smpquery sl2vl on lab {name}")


def test_minhop_on_a_ring_holds_the_loop_on_vl0() -> None:
    with lab("ringm", "--from", str(RING), "--routing", "minhop") as name:
        code, per_vl = credit(name, "--lanes")
        assert code == 10 and per_vl["found"] and per_vl["lanes_known"]
        assert per_vl["cycle_vls"] == [0] * 5 and per_vl["vls_used"] == [0]


def test_a_clean_fat_tree_with_lanes_reports_nothing() -> None:
    with lab("ftl", "--fabric", "fattree-small", "--routing", "dfsssp") as name:
        code, out, err = run("routes", "check", "--lab", name, "--lanes")
        assert code == 0, out + err
        assert "Credit loops: none (" in out and "per VL: SL2VL tables from smpquery sl2vl" in out
        assert "0 error(s), 0 warning(s)" in out
