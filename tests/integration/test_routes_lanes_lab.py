"""Credit loops per virtual lane in the lab, read live: OpenSM routes a ring (the real capture in
tests/data/sl2vl) and a fat tree, ``ibfab routes check --lanes`` reads the ports' SL2VL tables with
the real ``smpquery sl2vl`` and each host route's SL with the real ``saquery -p``.

ibsim answers SLtoVL MADs (Get and Set) per in/out port, reports VLCap VL0-7, and starts every
table at SL n to VL n (SL 15 to VL 7); OpenSM without QoS leaves them so, and dfsssp (8 VLs
available) answers path records with the SL of the layer it put each route in. With QoS
(``ibfab lab up --qos``: OpenSM ``-Q``) OpenSM writes its own tables to every port (its default
qos_sl2vl cut to the 8 operational VLs: SL n to VL n mod 8) and dumps them (opensm-sl2vl.dump).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.lab.driver import LabDriver, lab_dir, status
from tests.conftest import ROOT
from topology.sl2vl import parse_sl2vl

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


def one_lane_warning(name: str, engine: str) -> None:
    """Without the lanes, the ring's one-lane cycle under an engine that gives routes SLs is a
    warning naming the engine the SM's log says it ran (no exit 10 on a cycle not known to be
    one), and the cycle is still shown."""
    code, out, err = run("routes", "check", "--lab", name, "--json")
    assert code == 0, out + err
    doc = json.loads(out)
    assert doc["credit_loops"]["found"] and not doc["credit_loops"]["lanes_known"]
    loops = [f for f in doc["findings"] if f["kind"] == "credit_loop"]
    assert [f["severity"] for f in loops] == ["warning"], loops
    assert loops[0]["detail"]["sm_engine_spreads_vls"] == engine


def test_dfsssp_on_a_ring_breaks_the_one_lane_loop_over_vls() -> None:
    with lab("ringd", "--from", str(RING), "--routing", "dfsssp") as name:
        one_lane_warning(name, "dfsssp")
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


def test_lash_on_a_ring_breaks_the_one_lane_loop_over_its_layers() -> None:
    with lab("ringl", "--from", str(RING), "--routing", "lash") as name:
        one_lane_warning(name, "lash")
        code, per_vl = credit(name, "--lanes")
        assert code == 0 and not per_vl["found"] and per_vl["lanes_known"]
        # one VL per layer lash says it needed (its SL n on ibsim's SL n to VL n)
        log = (lab_dir(name) / "osm.log").read_text()
        needed = re.findall(r"lash_core: Lanes needed: (\d+)", log)
        assert needed and per_vl["vls_used"] == list(range(int(needed[-1]))), needed


# -- OpenSM with QoS (-Q): its own SL2VL tables on every port ---------------------------------
def qos_tables_set(name: str, lid: int, port: int) -> bool:
    """Whether the port's tables read live are OpenSM's QoS ones (SL 8-15 to VL 0-7, where
    ibsim's own map SL 8 to VL 8) for every in port."""
    text = LabDriver(name).run_tool(["smpquery", "sl2vl", str(lid), str(port)], 30).stdout
    rows = parse_sl2vl(text, "smpquery").nodes[lid].rows
    return bool(rows) and all(row == tuple(range(8)) * 2 for row in rows.values())


def test_dfsssp_with_qos_on_a_ring_breaks_the_loop_over_its_own_tables(tmp_path: Path) -> None:
    with lab("ringq", "--from", str(RING), "--routing", "dfsssp", "--qos") as name:
        assert status(name).sm_options == ("-R", "dfsssp", "-Q")
        assert qos_tables_set(name, 1, 7) and qos_tables_set(name, 1, 8)  # ring-sw01's ring ports
        assert (lab_dir(name) / "opensm" / "opensm-sl2vl.dump").stat().st_size > 0
        one_lane_warning(name, "dfsssp")
        code, per_vl = credit(name, "--lanes")
        assert code == 0 and not per_vl["found"] and per_vl["lanes_known"]
        assert len(per_vl["vls_used"]) >= 2
        # the live lanes stored with the tables, judged again from the snapshot alone
        db = str(tmp_path / "s.db")
        code, _, err = run("routes", "--lab", name, "--lanes", "--save", "--db", db)
        assert code == 0 and "stored the tables and their lanes with topology snapshot 1" in err, err
        code, out, err = run("routes", "check", "--snapshot", "latest", "--db", db, "--json")
        assert code == 0, out + err
        stored = json.loads(out)["credit_loops"]
        assert not stored["found"] and stored["lanes_known"] and stored["vls_used"] == per_vl["vls_used"]
        assert f"smpquery sl2vl on lab {name}, stored with topology snapshot 1" in stored["lanes"]


def test_minhop_with_qos_on_a_ring_holds_the_loop_on_vl0() -> None:
    with lab("ringmq", "--from", str(RING), "--routing", "minhop", "--qos") as name:
        assert qos_tables_set(name, 1, 7)
        code, per_vl = credit(name, "--lanes")
        assert code == 10 and per_vl["found"] and per_vl["lanes_known"]
        assert per_vl["cycle_vls"] == [0] * 5 and per_vl["vls_used"] == [0]


def test_without_qos_the_ports_keep_ibsims_tables_and_a_restart_keeps_qos() -> None:
    with lab("ftq", "--fabric", "fattree-small", "--routing", "dfsssp") as name:
        assert status(name).sm_options == ("-R", "dfsssp")
        assert not qos_tables_set(name, 2, 1)  # leaf-01's first port: SL 8 to VL 8, ibsim's
    with lab("ftq", "--fabric", "fattree-small", "--routing", "dfsssp", "--qos") as name:
        assert qos_tables_set(name, 2, 1)
        code, out, err = run("lab", "restart", "--name", name)
        assert code == 0, out + err
        assert status(name).sm_options == ("-R", "dfsssp", "-Q") and qos_tables_set(name, 2, 1)


def test_one_switch_has_no_table_to_query_and_no_credit_loop(tmp_path: Path) -> None:
    """The ring capture cut to one switch and its two hosts: no switch-to-switch cable, so --lanes
    queries no SL2VL table (it said 'no SL2VL table found', exit 3, before) and finds nothing."""
    blocks = []
    for b in RING.read_text().split("\n\n"):
        if "switchguid=0xc42a10300b00000" in b:
            blocks.append("\n".join(ln for ln in b.splitlines() if not ln.startswith(("[7]", "[8]"))))
        elif (
            b.startswith("#")
            or "caguid=0x1070fd0300b00000\n" in b + "\n"
            or "caguid=0x1070fd0300b00010\n" in b + "\n"
        ):
            blocks.append(b)
    topo = tmp_path / "one.topo"
    topo.write_text("\n\n".join(blocks) + "\n")
    with lab("lanesone", "--from", str(topo)) as name:
        code, c = credit(name, "--lanes")
    assert code == 0 and c["lanes_known"] and not c["found"] and c["dependencies"] == 0
    assert "no switch-to-switch cable to query" in c["lanes"]
