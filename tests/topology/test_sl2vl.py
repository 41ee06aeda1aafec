"""SL2VL tables (smpquery sl2vl, OpenSM's opensm-sl2vl.dump) and path records (saquery -p),
read from real lab captures (tests/data/sl2vl/README.md), and every bad-input case as one
ParseError naming file and line."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from topology.errors import ParseError
from topology.sl2vl import OPENSM_SL2VL, SMPQUERY, parse_path_records, parse_sl2vl

DATA = ROOT / "tests" / "data" / "sl2vl"
SMP = DATA / "smpquery-sl2vl-ring5-dfsssp.txt"
SMP_QOS = DATA / "smpquery-sl2vl-ring5-dfsssp-qos.txt"
OSM_QOS = DATA / "opensm-sl2vl-ring5-dfsssp-qos.dump"
IDENTITY = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7)  # ibsim's own table
QOS = (0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7)  # OpenSM -Q: qos_sl2vl over 8 VLs


def text(name: str) -> str:
    return (DATA / name).read_text()


@pytest.mark.parametrize(
    ("name", "form", "nodes", "rows"),
    [
        ("smpquery-sl2vl-ring5-dfsssp.txt", SMPQUERY, 15, 145),  # 5 x 2 out ports x 9 in + 15 x out 0
        ("smpquery-sl2vl-ring5-dfsssp-qos.txt", SMPQUERY, 15, 190),
        ("smpquery-sl2vl-ring5-minhop.txt", SMPQUERY, 15, 190),
        ("opensm-sl2vl-ring5-dfsssp-qos.dump", OPENSM_SL2VL, 15, 190),  # 5 x 4 cabled x 9 in + 10 HCAs
    ],
)
def test_every_capture_reads_whole(name: str, form: str, nodes: int, rows: int) -> None:
    t = parse_sl2vl(text(name), name)
    assert (t.format, len(t.nodes), t.entries()) == (form, nodes, rows)


def test_smpquery_rows_are_the_ports_own_tables() -> None:
    t = parse_sl2vl(SMP.read_text(), str(SMP))
    assert t.nodes[5].rows[(3, 7)] == IDENTITY  # "ports: in  3, out  7: | 0| 1|...|14| 7|"
    assert t.vl(5, 8, 7, 15) == 7
    assert t.vl(5, 8, 6, 0) is None  # out port 6 was not asked for
    assert t.nodes[3].rows == {(0, 0): IDENTITY}  # an HCA: its one table


def test_opensm_dump_and_smpquery_of_the_same_run_agree() -> None:
    osm = parse_sl2vl(OSM_QOS.read_text(), str(OSM_QOS))
    smp = parse_sl2vl(SMP_QOS.read_text(), str(SMP_QOS))
    assert osm.nodes[1].switch is True and osm.nodes[3].switch is False
    for lid, node in osm.nodes.items():
        for key, vls in node.rows.items():
            assert vls == QOS
            assert smp.nodes[lid].rows[key] == vls


def test_path_records_give_each_pair_its_sl() -> None:
    p = parse_path_records(text("saquery-p-ring5-minhop.txt"), "minhop")
    assert p.records == 90 and set(p.sl.tolist()) == {0}
    d = parse_path_records(text("saquery-p-ring5-dfsssp.txt"), "dfsssp")
    assert d.records == 210 and set(d.sl.tolist()) == set(range(8))
    assert (int(d.slid[1]), int(d.dlid[1])) == (1, 3)


# -- bad input -------------------------------------------------------------------------------
def _error(body: str, **kw: object) -> str:
    with pytest.raises(ParseError) as exc:
        parse_sl2vl(body, "t.sl2vl", **kw)  # type: ignore[arg-type]
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_a_row_cut_short_names_file_and_line() -> None:
    lines = SMP.read_text().splitlines()
    cut = "\n".join(lines[:5]) + "\n" + lines[5][:30] + "\n"
    assert _error(cut).startswith("t.sl2vl:6: sl2vl output: 2 VLs where 16 (SL 0-15) are listed: cut short?")


def test_a_header_without_rows_is_cut_short() -> None:
    lines = SMP.read_text().splitlines()
    assert "t.sl2vl:12: " in _error("\n".join(lines[:13]) + "\n")  # header and ruler of the 2nd table


def test_a_vl_out_of_range() -> None:
    lines = SMP.read_text().splitlines()
    lines[4] = lines[4].replace("|14|", "|16|")
    assert "t.sl2vl:5: sl2vl output: VL 16 out of range (0-15)" in _error("\n".join(lines))


def test_a_port_beyond_the_switch() -> None:
    body = SMP.read_text()
    assert "t.sl2vl:3: sl2vl output: out port 7 beyond LID 5's 6 ports" in _error(body, port_counts={5: 6})


def test_a_row_before_any_header_and_a_foreign_line() -> None:
    rows = [ln for ln in SMP.read_text().splitlines() if ln.startswith("ports:")]
    assert "t.sl2vl:1: sl2vl output: a row before any 'SL2VL table' header" in _error(rows[0])
    assert "t.sl2vl:1: sl2vl output: not part of an SL2VL table" in _error("0x0001 001 : (Channel Adapter)")


def test_mixed_forms_and_directed_routes_are_refused() -> None:
    assert "mixed dumps" in _error(SMP.read_text() + OSM_QOS.read_text())
    assert "query them by LID" in _error("# SL2VL table: DR path slid 0; dlid 0; 0,1\n")


def test_a_port_listed_twice_with_other_vls() -> None:
    first = SMP.read_text().splitlines()[:3]
    again = [first[0], first[1], first[2].replace("| 0| 1|", "| 1| 1|", 1)]
    assert "t.sl2vl:6: sl2vl output: LID 5 in 0 out 7 listed at line 3 with other VLs" in _error(
        "\n".join(first + again)
    )


def test_a_path_record_cut_short() -> None:
    lines = text("saquery-p-ring5-minhop.txt").splitlines()
    with pytest.raises(ParseError) as exc:
        parse_path_records("\n".join(lines[:26]), "p.txt")  # the 2nd record cut before its sl
    assert str(exc.value).startswith("p.txt:18: path records output: a path record without sl: cut short?")
    bad = "\n".join(lines[:17]).replace("sl......................0x0", "sl......................0x1F")
    with pytest.raises(ParseError, match=r"p.txt:12: .*SL 31 out of range"):
        parse_path_records(bad, "p.txt")


@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_file_cut_after_the_last_records_sl_is_cut_short(as_bytes: bool) -> None:
    """A capture cut inside its last record, past its sl: that record's SL reads, but the file is
    not whole (records after it are lost), so it is refused rather than read as fewer routes."""
    body = text("saquery-p-ring5-minhop.txt")
    at = body.index("\t\tpreference", body.index("PathRecord dump:", 1))  # in the 2nd record
    cases = (
        (body[: at + len("\t\tpreference....")], "p.txt:33: .*a path record's last line cut short"),
        (body[:at], "p.txt:18: .*the last path record has 14 fields where the first has 16: cut short?"),
    )
    for cut, said in cases:
        with pytest.raises(ParseError, match=said):
            parse_path_records(cut.encode() if as_bytes else cut, "p.txt")
    whole = body[: body.index("PathRecord dump:", at)]  # two whole records
    assert parse_path_records(whole.encode() if as_bytes else whole, "p.txt").records == 2


@pytest.mark.parametrize(
    "name", ["saquery-p-ring5-dfsssp.txt", "saquery-p-ring5-dfsssp-qos.txt", "saquery-p-ring5-minhop.txt"]
)
def test_whole_records_read_in_one_pass_as_line_by_line(name: str) -> None:
    body = text(name)
    fast = parse_path_records(body, name)  # whole saquery records: the one-pass reader
    slow = parse_path_records(iter(body.splitlines()), name)  # a stream: line by line
    assert fast.records == slow.records
    for a, b in ((fast.slid, slow.slid), (fast.dlid, slow.dlid), (fast.sl, slow.sl)):
        assert a.tolist() == b.tolist()


@pytest.mark.parametrize(
    "name",
    [
        "smpquery-sl2vl-ring5-dfsssp.txt",
        "smpquery-sl2vl-ring5-dfsssp-qos.txt",
        "smpquery-sl2vl-ring5-minhop.txt",
    ],
)
def test_smpquery_rows_decoded_as_columns_as_line_by_line(name: str) -> None:
    body = text(name)
    fast = parse_sl2vl(body, name)  # fixed-width rows: decoded as numpy columns
    slow = parse_sl2vl("\n" + body, name)  # a leading blank line: read line by line
    assert fast.entries() == slow.entries()
    assert fast.nodes == slow.nodes
