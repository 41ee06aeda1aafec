"""Side by side with ibdmchk (ibutils 1.5.7) on credit loops per virtual lane.

ibdmchk's verification mode takes OpenSM's dumps of the ring lab (``opensm-subnet.lst``,
``opensm.fdbs``, ``opensm.mcfdbs``: tests/data/sl2vl) and, per its own help text (``ibdmchk -h
1``), the SL of each CA-to-CA path (``-c``: "srcguid dlid sl" per line) and the switches' SL2VL
tables (``-d``: "swguid iport oport 0x(sl0)(sl1) 0x(sl2)(sl3)..."). Both files are written here
from the same real captures ibfab reads (saquery -p, smpquery sl2vl), so both tools judge the same
routes, SLs and tables:

* no SLs: both find the ring's loop in one lane, through port 7 of every switch;
* dfsssp's SLs: neither finds a credit loop;
* minhop's SLs (all 0): both find it on VL 0, the same five channels;
* lash's SLs (0 and 1, one per layer; ibsim's own tables, no QoS): neither finds a credit loop.

ibdmchk needs a table for every in and out port a path uses, HCA ports included (``Unassigned
SL2VL entry``): the dfsssp run under QoS and the lash run, whose captures have out ports 1, 2, 7
and 8, are the ones compared.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT
from topology.classify import classify
from topology.credit_loops_vl import Lanes
from topology.ibnetdiscover import parse_ibnetdiscover_text
from topology.lft import parse_lfts
from topology.model import NodeKind, normalise_guid
from topology.route_checks import RouteReport, check_routes
from topology.sl2vl import PathSls, Sl2Vl, parse_path_records, parse_sl2vl

pytestmark = pytest.mark.skipif(shutil.which("ibdmchk") is None, reason="ibutils (ibdmchk) is not installed")

DATA = ROOT / "tests" / "data" / "sl2vl"
FABRIC = parse_ibnetdiscover_text((DATA / "ibnetdiscover-ring5.txt").read_text())
_LOOP = re.compile(r"S([0-9a-fA-F]{16})/U1/P(\d+) VL: (\d+)")


def files(run: str) -> tuple[Sl2Vl, PathSls]:
    return (
        parse_sl2vl((DATA / f"smpquery-sl2vl-ring5-{run}.txt").read_text(), run),
        parse_path_records((DATA / f"saquery-p-ring5-{run}.txt").read_text(), run),
    )


def ibdmchk(tmp: Path, lanes: tuple[Sl2Vl, PathSls] | None) -> str:
    args = [
        "-s",
        "opensm-subnet-ring5.lst",
        "-f",
        "opensm-ring5-minhop.fdbs",
        "-m",
        "opensm-ring5-minhop.mcfdbs",
    ]
    for name in ("opensm-subnet-ring5.lst", "opensm-ring5-minhop.fdbs", "opensm-ring5-minhop.mcfdbs"):
        shutil.copy(DATA / name, tmp / name)
    if lanes is not None:
        tables, paths = lanes
        by_lid = FABRIC.by_lid()
        with (tmp / "psl").open("w") as fh:
            for s, d, sl in zip(paths.slid.tolist(), paths.dlid.tolist(), paths.sl.tolist(), strict=True):
                src, dst = by_lid.get(s), by_lid.get(d)
                if src is not None and dst is not None and NodeKind.SWITCH not in (src.kind, dst.kind):
                    fh.write(f"{src.guid} {d} {sl}\n")
        with (tmp / "slvl").open("w") as fh:
            for lid, i, o, v in zip(
                tables.lid.tolist(),
                tables.in_port.tolist(),
                tables.out_port.tolist(),
                tables.vls.tolist(),
                strict=True,
            ):
                node = by_lid[lid]
                if node.kind is NodeKind.SWITCH:
                    pairs = " ".join(f"0x{v[2 * k]:x}{v[2 * k + 1]:x}" for k in range(8))
                    fh.write(f"{node.guid} {i} {o} {pairs}\n")
        args += ["-c", "psl", "-d", "slvl"]
    res = subprocess.run(
        ["ibdmchk", *args], cwd=tmp, capture_output=True, text=True, timeout=300, check=False
    )
    assert "Analyzing Fabric for Credit Loops" in res.stdout, res.stdout[-2000:] + res.stderr[-2000:]
    assert "Unassigned SL2VL entry" not in res.stdout
    return res.stdout


def theirs(report: str) -> set[tuple[str, int, int]]:
    """The switch channels ibdmchk names on its loop (it names the CA ports its paths start at too)."""
    at = report.index("Analyzing Fabric for Credit Loops")
    switches = {n.guid for n in FABRIC.switches()}
    found = {(normalise_guid("0x" + g), int(p), int(vl)) for g, p, vl in _LOOP.findall(report[at:])}
    return {c for c in found if c[0] in switches}


def ours(run: str, lanes: Lanes | None) -> RouteReport:
    lfts = parse_lfts((DATA / "opensm-ring5-minhop.fdbs").read_text(), "opensm.fdbs")
    return check_routes(FABRIC, classify(FABRIC), lfts, lanes=lanes)


def test_one_lane_both_find_the_ring(tmp_path: Path) -> None:
    report = ibdmchk(tmp_path, None)
    assert "1 SLs, 1 VLs used" in report and "no credit loops found" not in report
    r = ours("none", None)
    assert r.credit.found
    assert {(h.switch, h.port, 0) for h in r.credit.cycle} == theirs(report)


def test_dfsssp_sls_neither_finds_a_credit_loop(tmp_path: Path) -> None:
    lanes = files("dfsssp-qos")
    report = ibdmchk(tmp_path, lanes)
    assert "8 SLs, 8 VLs used" in report and "-I- no credit loops found" in report
    r = ours("dfsssp-qos", Lanes(*lanes))
    assert r.credit.lanes_known and not r.credit.found


def test_minhop_sls_both_find_the_ring_on_vl0(tmp_path: Path) -> None:
    lanes = files("minhop")
    report = ibdmchk(tmp_path, lanes)
    assert "1 SLs" in report and "no credit loops found" not in report
    r = ours("minhop", Lanes(*lanes))
    assert r.credit.lanes_known and r.credit.found
    assert {(h.switch, h.port, vl) for h, vl in zip(r.credit.cycle, r.credit.vls, strict=True)} == theirs(
        report
    )


def test_lash_sls_neither_finds_a_credit_loop(tmp_path: Path) -> None:
    lanes = files("lash")
    report = ibdmchk(tmp_path, lanes)
    # ibdmchk's VL count is the tables' top VL + 1, not the VLs the paths use: ibsim's own tables
    # map SL 14 to VL 14 (SL 15 to VL 7), hence 15; the paths' 2 SLs use VLs 0 and 1 (ibfab's vls_used)
    assert "2 SLs, 15 VLs used" in report and "-I- no credit loops found" in report
    r = ours("lash", Lanes(*lanes))
    assert r.credit.lanes_known and not r.credit.found and r.credit.vls_used == (0, 1)
