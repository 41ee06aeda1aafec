"""Numbers with bounds (issue 30 item 3): every parser that reads a LID, a port number or a GUID
checks its range before anything is stored, so no capture can poison later commands.

The issue's reproduction: a 5,000-digit LID in a ports file ended in Python's int limit; a
23-digit LID was saved, after which `discover --json` and `--snapshot latest --json` failed every
time (the JSON encoder refuses integers past 64 bits). LIDs 0 and 65535 ("not configured by the
SM") stay legal in a capture; 49152-65534 (multicast) and anything past 65535 are refused with
the file and the line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from fabric.cli import main
from fabric.counters.ibdiagnet import parse_pm
from fabric.counters.parse import parse_perfquery
from fabric.store import Store
from probes.iblinkinfo import parse_iblinkinfo
from tests.conftest import REALDATA
from topology.cables import parse_cables
from topology.errors import ParseError
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover_text
from topology.ibnetdiscover_fast import parse_canonical
from topology.model import Fabric, Lid, Node

PORTS_REPORT = REALDATA / "ibnetdiscover" / "treydock-ibnetdiscover-p-ports-edr-osc.txt"
TOPOLOGY = REALDATA / "ibnetdiscover" / "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt"
DB_CSV = REALDATA / "ibdiagnet" / "garyli-ndr-272nodes-ibdiagnet2.db_csv"
BAD_LIDS = ["9" * 5000, "9" * 23, "70000", "65536", "49152", "50000"]


def _ibfab(*args: str) -> Result:
    res = CliRunner().invoke(main, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output
    return res


def _refused(res: Result, where: str, what: str) -> None:
    assert res.exit_code == 3, res.output
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith(f"ibfab: error: {where}") and what in line, line


@pytest.mark.parametrize("lid", BAD_LIDS, ids=lambda x: x[:8])
def test_a_lid_out_of_range_in_a_ports_report_is_refused_with_its_line(tmp_path: Path, lid: str) -> None:
    path = tmp_path / "ports.txt"
    path.write_text(PORTS_REPORT.read_text().replace("CA   134  1", f"CA   {lid}  1", 1))
    _refused(_ibfab("discover", "--input", str(path), "--json"), f"{path}:1:", "LID")


@pytest.mark.parametrize("lid", BAD_LIDS, ids=lambda x: x[:8])
def test_a_lid_out_of_range_in_a_topology_file_is_refused_with_its_line(tmp_path: Path, lid: str) -> None:
    path = tmp_path / "fabric.topo"
    text = TOPOLOGY.read_text().replace("enhanced port 0 lid 13 lmc 0", f"enhanced port 0 lid {lid} lmc 0", 1)
    path.write_text(text)
    res = _ibfab("discover", "--input", str(path), "--json", "--save", "--db", str(tmp_path / "s.db"))
    _refused(res, f"{path}:10:", "LID")
    assert not (tmp_path / "s.db").exists() or not Store.open(tmp_path / "s.db").list_topologies()


@pytest.mark.parametrize("lid", ["0", "65535"])
def test_lids_the_sm_did_not_configure_are_legal_in_a_capture(tmp_path: Path, lid: str) -> None:
    path = tmp_path / "ports.txt"
    path.write_text(PORTS_REPORT.read_text().replace("CA   134  1", f"CA   {lid}  1", 1))
    assert _ibfab("discover", "--input", str(path), "--json").exit_code == 0


def _canonical() -> str:
    return to_ibnetdiscover(generate("leafspine:leaves=2,spines=2,hosts=2"))


@pytest.mark.parametrize("lid", BAD_LIDS, ids=lambda x: x[:8])
def test_the_fast_path_leaves_a_bad_lid_to_the_general_parser(lid: str) -> None:
    """The fast path reads only what it can read completely; a LID out of range (on a node line,
    an HCA's port line or as a far end's LID) sends the text to the general parser, which names
    the line."""
    text = _canonical()
    assert parse_canonical(text, "x") is not None
    node_line = next(ln for ln in text.splitlines() if ln.startswith("Switch") and " lid " in ln)
    own = next(ln for ln in text.splitlines() if ln.startswith("[") and "# lid " in ln)
    far = next(ln for ln in text.splitlines() if ln.startswith("[") and '" lid ' in ln)
    for line, old in ((node_line, " lid "), (own, "# lid "), (far, '" lid ')):
        head, _, tail = line.partition(old)
        bad = f"{head}{old}{lid}{tail[tail.index(' ') :]}"
        mutated = text.replace(line, bad, 1)
        assert parse_canonical(mutated, "x") is None
        with pytest.raises(ParseError, match="LID") as err:
            parse_ibnetdiscover_text(mutated, "x")
        assert err.value.lineno == text.splitlines().index(line) + 1


def test_a_port_or_width_of_many_digits_is_refused_by_both_parsers() -> None:
    text = _canonical()
    line = next(ln for ln in text.splitlines() if ln.startswith("["))
    for bad in (line.replace("[", "[" + "9" * 5000, 1), line.replace("4xHDR", "9" * 5000 + "xHDR")):
        mutated = text.replace(line, bad, 1)
        assert parse_canonical(mutated, "x") is None
        with pytest.raises(ParseError):
            parse_ibnetdiscover_text(mutated, "x")


@pytest.mark.parametrize(
    ("old", "new", "what"),
    [
        (",180,180,3880835146,", ",180,70000,3880835146,", "PORTS: bad LID"),
        (",180,180,3880835146,", ",180,50000,3880835146,", "PORTS: bad LID"),
        (",180,180,3880835146,", ",180," + "9" * 5000 + ",3880835146,", "PORTS: bad LID"),
        (
            "0xb0cf0e0300e5b940,1,0x5c25730300c06f60,1",
            "0xb0cf0e0300e5b940,300,0x5c25730300c06f60,1",
            "LINKS: bad PortNum1",
        ),
        ('"MF0;ib-switch-sequoia:MQM9700/U1",65,', '"MF0;ib-switch-sequoia:MQM9700/U1",6500,', "NODES"),
    ],
    ids=["lid-70000", "lid-multicast", "lid-5000-digits", "link-port-300", "num-ports"],
)
def test_db_csv_values_out_of_range_are_refused_with_their_line(
    tmp_path: Path, old: str, new: str, what: str
) -> None:
    text = DB_CSV.read_text()
    assert old in text
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "ibdiagnet2.db_csv").write_text(text.replace(old, new, 1))
    line = text[: text.index(old)].count("\n") + 1
    res = _ibfab("discover", "--ibdiagnet", str(folder), "--json")
    _refused(res, f"{folder / 'ibdiagnet2.db_csv'}:{line}:", what)


def test_iblinkinfo_lids_ports_and_guids_out_of_range_are_parse_errors() -> None:
    good = 'Switch: 0x0c42a10300a00000 sw:\n           2    5[  ] ==(                Down/ Polling)==>   [  ] "" ( )\n'
    assert len(parse_iblinkinfo(good)) == 1
    for bad, what in (
        (good.replace("  2    5[", "  70000    5["), "LID"),
        (good.replace("  2    5[", "  2    " + "9" * 5000 + "["), "port"),
        (good.replace("0x0c42a10300a00000", "0x0c42a10300a0000000"), "64-bit GUID"),
    ):
        with pytest.raises(ParseError, match=what):
            parse_iblinkinfo(bad, "f")


def test_perfquery_and_pm_headers_out_of_range_cost_their_block() -> None:
    text = (REALDATA / "perfquery" / "treydock-perfquery-E-rcverrordetails.txt").read_text()
    assert len(parse_perfquery(text, "f")) == 1
    problems: list[ParseError] = []
    bad = text.replace("Lid 1719 port 1", "Lid " + "9" * 23 + " port 1", 1)
    assert parse_perfquery(bad, "f", problems=problems) == []
    assert [p.lineno for p in problems] == [1] and "LID" in problems[0].problem
    with pytest.raises(ParseError, match="LID"):
        parse_perfquery(bad, "f")
    pm = (REALDATA / "ibdiagnet" / "garyli-ndr-272nodes-ibdiagnet2.pm").read_text()
    whole = parse_pm(pm, "f")
    problems = []
    got = parse_pm(pm.replace("Port=1 Lid=0x00b4", "Port=1 Lid=0x1ffff", 1), "f", problems=problems)
    assert len(got) == len(whole) - 1 and len(problems) == 1 and problems[0].lineno == 16


def test_cables_headers_out_of_range_are_parse_errors() -> None:
    head = "Port=1 Lid=0x0018 GUID=0x0000000000000001 Port Name=x\nVendor: FS\n"
    assert len(parse_cables(head)) == 1
    for bad in (
        head.replace("0x0018", "0x10000"),
        head.replace("Port=1", "Port=256"),
        head.replace("0x0000000000000001", "0x1" + "0" * 20),
    ):
        with pytest.raises(ParseError):
            parse_cables(bad, "f")
    lanes = head + "RX" + "9" * 12 + " Power: 1.0 mW, 0.0 dBm\n"  # not a lane: kept as a field only
    assert parse_cables(lanes)[next(iter(parse_cables(lanes)))].rx_power_dbm == ()


def test_a_store_an_older_version_poisoned_reads_around_that_snapshot(tmp_path: Path) -> None:
    """A topology stored with a 23-digit LID (as an older ibfab did) is refused with a warning;
    the snapshot before it serves `--snapshot latest`; by id it is a one-line error; `store check`
    names it and `store repair` sets it aside."""
    db = tmp_path / "ibfab.db"
    good = parse_ibnetdiscover_text(TOPOLOGY.read_text(), str(TOPOLOGY))
    first = next(iter(good.nodes.values()))
    poisoned = Fabric.build(
        [
            Node(n.guid, n.kind, n.description, n.nports, Lid(10**22) if n is first else n.lid)
            for n in good.nodes.values()
        ],
        list(good.links),
    )
    with Store.open(db) as store:
        store.save_topology(good, "", "ibnetdiscover", "file")
        bad_id = store.save_topology(poisoned, "", "ibnetdiscover", "file")
    res = _ibfab("discover", "--snapshot", "latest", "--json", "--db", str(db))
    assert res.exit_code == 0, res.output
    assert f"topology snapshot {bad_id} is damaged" in res.stderr and "LID" in res.stderr
    assert len(json.loads(res.stdout)["nodes"]) == len(good.nodes)
    res = _ibfab("discover", "--snapshot", str(bad_id), "--json", "--db", str(db))
    assert res.exit_code == 5 and len(res.stderr.strip().splitlines()) == 1
    res = _ibfab("store", "check", "--db", str(db), "--json")
    assert res.exit_code == 1 and [(d["kind"], d["ref"]) for d in json.loads(res.stdout)["damage"]] == [
        ("topology", bad_id)
    ]
    assert _ibfab("store", "repair", "--db", str(db)).exit_code == 0
    assert _ibfab("discover", "--snapshot", "latest", "--json", "--db", str(db)).stderr.count("damaged") == 0
