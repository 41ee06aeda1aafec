"""`ibfab routes` and `ibfab routes check` from the command line: text, --json, exit 10 on an
error-level finding, the store round trip, and every bad-input case as one line (exit 3)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from tests.advise_fabrics import fabric_of, guid_of
from tests.conftest import ROOT
from topology.generate_routes import minhop_tables, write_dump_lfts
from topology.lft import NO_ROUTE

DATA = ROOT / "tests" / "data" / "lft"
TOPO = DATA / "ibnetdiscover-fattree-small.txt"
FTS = DATA / "dump_fts-fattree-small-minhop.txt"


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args), input=stdin)
    return res.exit_code, res.stdout, res.stderr


def one_line_error(err: str) -> str:
    """The one error line (a note naming the stored snapshot read may come before it)."""
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("ibfab: using stored")]
    assert len(lines) == 1 and lines[0].startswith("ibfab: error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_clean_tables_check_quietly_with_exit_0() -> None:
    code, out, _ = run("routes", "check", "--input", str(TOPO), "--tables", str(FTS))
    assert code == 0
    assert "6 of 6 switches have a table; 38 destination LIDs (32 HCAs)" in out
    assert "0 error(s), 0 warning(s)" in out
    assert "nothing to report" in out
    assert "leaf -> spine  -     32      768     24   24.0  24" in out


def _black_hole(tmp_path: Path) -> tuple[Path, Path, int]:
    d = fabric_of("fattree-small")
    t = minhop_tables(d.fabric)
    dst = d.fabric.nodes[guid_of(d, "cn0009 mlx5_0")].lid
    assert dst is not None
    leaf = t.row(guid_of(d, "leaf-02"))
    assert leaf is not None
    t.ports[leaf, dst] = NO_ROUTE
    topo, dump = tmp_path / "f.topo", tmp_path / "f.lfts"
    topo.write_text(d.raw_text)
    with dump.open("wb") as fh:
        write_dump_lfts(d.fabric, t, fh)
    return topo, dump, dst


def test_an_error_finding_exits_10_with_its_evidence(tmp_path: Path) -> None:
    topo, dump, dst = _black_hole(tmp_path)
    code, out, _ = run("routes", "check", "--input", str(topo), "--tables", str(dump))
    assert code == 10
    assert f"ERROR leaf-02 sends LID {dst} (cn0009 mlx5_0) nowhere: 31 host routes never arrive" in out
    code, out, _ = run("routes", "check", "--input", str(topo), "--tables", str(dump), "--json")
    assert code == 10
    doc = json.loads(out)
    (f,) = [x for x in doc["findings"] if x["severity"] == "error"]
    assert (f["kind"], f["lid"], f["count"], f["detail"]["reason"]) == ("no_route", dst, 31, "no entry")
    assert (f["path"] and f["path"][-1]["switch"] == guid_of(fabric_of("fattree-small"), "leaf-02")) or f[
        "path"
    ]


def test_json_schema(tmp_path: Path) -> None:
    code, out, _ = run("routes", "check", "--input", str(TOPO), "--tables", str(FTS), "--json")
    assert code == 0
    doc = json.loads(out)
    assert sorted(doc) == [
        "balance",
        "credit_loops",
        "engine",
        "findings",
        "format",
        "health",
        "isolations",
        "notes",
        "summary",
        "tables",
        "topology",
    ]
    assert doc["format"] == "dump_fts" and doc["findings"] == []
    assert len(doc["balance"]["links"]) == 64
    code, out, _ = run("routes", "check", "--input", str(TOPO), "--tables", str(FTS), "--json", "--no-links")
    assert "links" not in json.loads(out)["balance"]


def test_show_save_and_check_the_stored_snapshot(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    code, out, err = run("routes", "--input", str(TOPO), "--tables", str(FTS), "--save", "--db", db)
    assert code == 0, err
    assert "stored the tables with topology snapshot 1" in err
    assert "6 switch tables, 228 routes set" in out
    code, out, _ = run("routes", "--snapshot", "1", "--db", db, "--json")
    assert code == 0 and json.loads(out)["entries"] == 228
    code, out, _ = run("routes", "check", "--snapshot", "latest", "--db", db)
    assert code == 0 and "from snapshot 1 (dump_fts)" in out


def test_a_snapshot_without_tables_says_how_to_store_them(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    assert run("discover", "--input", str(TOPO), "--save", "--db", db)[0] == 0
    code, _, err = run("routes", "check", "--snapshot", "1", "--db", db)
    assert code == 2
    assert "topology snapshot 1 has no forwarding tables stored" in one_line_error(err)


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        (
            "Unicast lids [0x0-0x3] of switch Lid 2 guid 0x0c42a10300a00000 (x):\n0x0001 001 : (a)\n",
            "cut short",
        ),
        (
            "Unicast lids [0x0-0x3] of switch Lid 2 guid 0x0c42a10300a00000 (x):\n0xc001 001 : (a)\n",
            "unicast range",
        ),
        (
            "Unicast lids [0x0-0x3] of switch Lid 2 guid 0x0c42a10300a00000 (x):\n0x0001 041 : (a)\n",
            "port 41 is beyond the 40 ports of switch",
        ),
        (
            "Unicast lids [0x0-0x3] of switch Lid 2 guid 0x0000000000000077 (x):\n0x0001 001 : (a)\n1 valid lids dumped\n",
            "tables of another fabric",
        ),
    ],
)
def test_bad_tables_are_one_line_exit_3(tmp_path: Path, text: str, expect: str) -> None:
    bad = tmp_path / "bad.lfts"
    bad.write_text(text)
    code, _, err = run("routes", "check", "--input", str(TOPO), "--tables", str(bad))
    assert code == 3
    line = one_line_error(err)
    assert str(bad) in line and expect in line


def test_tables_are_needed_beside_a_saved_topology() -> None:
    code, _, err = run("routes", "check", "--input", str(TOPO))
    assert code == 2 and "--tables FILE" in one_line_error(err)


def test_sm_log_and_conf(tmp_path: Path) -> None:
    log = tmp_path / "opensm.log"
    log.write_text(
        "Nov 28 07:57:50 881064 [BCA746C0] 0x01 -> ucast_mgr_route: torus-2QoS: cannot build fwd tables\n"
        "Nov 28 07:57:50 883562 [BCA746C0] 0x02 -> osm_ucast_mgr_process: minhop tables configured on all switches\n"
    )
    conf = tmp_path / "opensm.conf"
    conf.write_text("# routing\nrouting_engine torus-2QoS,minhop\n")
    code, out, _ = run(
        "routes",
        "check",
        "--input",
        str(TOPO),
        "--tables",
        str(FTS),
        "--sm-log",
        str(log),
        "--sm-conf",
        str(conf),
    )
    assert code == 10
    assert "the SM fell back: torus-2QoS could not build the tables, minhop configured the switches" in out
    assert "the SM says minhop after torus-2QoS failed; opensm.conf: routing_engine torus-2QoS,minhop" in out


# -- credit loops per virtual lane (real ring captures: tests/data/sl2vl/README.md) -----------
RING = ROOT / "tests" / "data" / "sl2vl"


def _ring(run: str, *extra: str) -> tuple[int, str, str]:
    return run_ring(f"dump_fts-ring5-{run}.txt", *extra)


def run_ring(fts: str, *extra: str) -> tuple[int, str, str]:
    return run(
        "routes",
        "check",
        "--input",
        str(RING / "ibnetdiscover-ring5.txt"),
        "--tables",
        str(RING / fts),
        *extra,
    )


def _lanes(run: str) -> tuple[str, ...]:
    return (
        "--sl2vl",
        str(RING / f"smpquery-sl2vl-ring5-{run}.txt"),
        "--path-records",
        str(RING / f"saquery-p-ring5-{run}.txt"),
    )


def test_without_lanes_the_ring_loop_is_an_error_saying_one_lane() -> None:
    code, out, _ = _ring("dfsssp")
    assert code == 10
    assert "ERROR credit loop: 5 links wait on each other in a ring" in out
    assert "lanes: one lane: the SL of each route and the SL-to-VL tables are not known" in out


def test_dfsssp_lanes_break_the_loop_exit_0() -> None:
    code, out, _ = _ring("dfsssp", *_lanes("dfsssp"))
    assert code == 0, out
    assert (
        "Credit loops: none (" in out and "VLs used 0, 1, 2, 3, 4, 5, 6, 7; per VL: SL2VL tables from" in out
    )
    assert "nothing to report" in out


def test_minhop_lanes_show_the_loop_on_vl0_link_by_link() -> None:
    code, out, _ = _ring("minhop", *_lanes("minhop"))
    assert code == 10
    assert "ERROR credit loop on VL 0: 5 links wait on each other in a ring" in out
    assert "VL of each link: 0, 0, 0, 0, 0" in out
    assert "ring-sw01 [7] -> ring-sw02 [8] on VL 0  (waits for the next link: routes to LID " in out
    code, out, _ = _ring("minhop", *_lanes("minhop"), "--json")
    c = json.loads(out)["credit_loops"]
    assert (c["found"], c["lanes_known"], c["cycle_vls"], c["vls_used"]) == (True, True, [0] * 5, [0])
    assert c["lanes"].startswith("per VL: SL2VL tables from ")
    f = next(f for f in json.loads(out)["findings"] if f["kind"] == "credit_loop")
    assert f["detail"]["cycle_vls"] == [0] * 5


def test_opensm_sl2vl_dump_is_read_as_well() -> None:
    code, out, _ = run_ring(
        "opensm-lfts-ring5-dfsssp-qos.dump",
        "--sl2vl",
        str(RING / "opensm-sl2vl-ring5-dfsssp-qos.dump"),
        "--path-records",
        str(RING / "saquery-p-ring5-dfsssp-qos.txt"),
        "--json",
    )
    c = json.loads(out)["credit_loops"]
    assert code == 0 and not c["found"] and c["lanes_known"]
    assert "(opensm-sl2vl.dump)" in c["lanes"]


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda t: t.replace("|14| 7|", "|14|99|", 1),
            r"smpquery-sl2vl\.txt:3: sl2vl output: VL 99 out of range \(0-15\)",
        ),
        (lambda t: t[: t.index("|14| 7|", 500)], r"smpquery-sl2vl\.txt:\d+: sl2vl output: 14 VLs where 16"),
        (
            lambda t: t.replace("out  7:", "out  9:", 1),
            r"smpquery-sl2vl\.txt:3: sl2vl output: out port 9 beyond LID 5's 8 ports",
        ),
    ],
)
def test_bad_sl2vl_text_is_one_line_exit_3(tmp_path: Path, edit: object, expected: str) -> None:
    bad = tmp_path / "smpquery-sl2vl.txt"
    bad.write_text(edit((RING / "smpquery-sl2vl-ring5-dfsssp.txt").read_text()))  # type: ignore[operator]
    code, _, err = _ring(
        "dfsssp", "--sl2vl", str(bad), "--path-records", str(RING / "saquery-p-ring5-dfsssp.txt")
    )
    assert code == 3
    assert re.search(expected, one_line_error(err)), err


def test_lanes_live_needs_a_source_that_runs_tools() -> None:
    code, _, err = _ring("dfsssp", "--lanes")
    assert code == 2
    assert "--lanes reads the SL2VL tables and path records where tools run" in one_line_error(err)
