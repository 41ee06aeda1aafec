"""A damaged ibdiagnet run (issue 30 item 2): `discover --ibdiagnet` and `counters collect
--ibdiagnet` on the real 272-node run with one defect planted each give a one-line error naming
the file, the line and what is wrong (exit 3), or go on where the data still means something
(a renamed LID column: LIDs unknown; a bad PM_INFO row: that port left out, named)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from fabric.cli import main
from fabric.store import Store
from tests.conftest import REALDATA

RUN = REALDATA / "ibdiagnet" / "garyli-ndr-272nodes-ibdiagnet2.db_csv"
BASE = RUN.read_text()
FIRST_NODE = '"MF0;ib-switch-sequoia:MQM9700/U1",65'
FIRST_PORT = "0xb0cf0e0300d33fc0,0xb0cf0e0300d33fc0,0,0x0000"
FIRST_PM = "0xb0cf0e0300d33fc0,0xb0cf0e0300d33fc0,1,0,0,0"


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def _drop(text: str, name: str) -> str:
    return re.sub(rf"START_{name}\n.*?END_{name}\n", "", text, flags=re.S)


def _run(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "ibdiagnet2.db_csv").write_text(text)
    return folder


def _ibfab(*args: str) -> Result:
    res = CliRunner().invoke(main, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output
    return res


def _one_line_error(res: Result, exit_code: int, *parts: str) -> None:
    assert res.exit_code == exit_code, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ibfab: error: "), res.stderr
    for part in parts:
        assert part in lines[0], lines[0]


# (name, text, where the error points, what it says): both commands refuse these
REFUSED = [
    (
        "bare CR in a NODES row",
        BASE.replace(FIRST_NODE, "MF0;ib-switch\rsequoia,65", 1),
        _line_of(BASE, FIRST_NODE),
        "NODES: a carriage return inside a row",
    ),
    (
        "bare CR in a PORTS row",
        BASE.replace(FIRST_PORT, FIRST_PORT.replace("0xb0cf0e0300d33fc0,0", "0xb0cf0e0300d\r33fc0,0"), 1),
        _line_of(BASE, FIRST_PORT),
        "PORTS: a carriage return inside a row",
    ),
    (
        "a quoted field over 128 KiB",
        BASE.replace('"MF0;ib-switch-sequoia:MQM9700/U1"', '"' + "x" * 140_000 + '"', 1),
        _line_of(BASE, FIRST_NODE),
        "NODES: a field longer than 128 KiB",
    ),
    (
        "NodeGUID renamed in NODES",
        BASE.replace("SystemImageGUID,NodeGUID,PortGUID", "SystemImageGUID,NodeGUlD,PortGUID", 1),
        _line_of(BASE, "NodeDesc,NumPorts,NodeType"),
        "NODES: no NodeGUID column in its header",
    ),
    (
        "NodeGuid renamed in PORTS",
        BASE.replace("START_PORTS\nNodeGuid,", "START_PORTS\nNodeGuld,", 1),
        _line_of(BASE, "START_PORTS") + 1,
        "PORTS: no NodeGuid column in its header",
    ),
]


@pytest.mark.parametrize(("name", "text", "line", "what"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_run_that_does_not_read_is_a_one_line_error(
    tmp_path: Path, name: str, text: str, line: int, what: str
) -> None:
    folder = _run(tmp_path, text)
    where = f"{folder / 'ibdiagnet2.db_csv'}:{line}:"
    _one_line_error(_ibfab("discover", "--ibdiagnet", str(folder), "--json"), 3, where, what)
    db = tmp_path / "s.db"
    res = _ibfab("counters", "collect", "--ibdiagnet", str(folder), "--db", str(db))
    _one_line_error(res, 3, where, what)


@pytest.mark.parametrize(
    ("header", "renamed"),
    [("NodeGUID", "NodeGUlD"), ("PortNumber", "PortNumbr")],
    ids=["NodeGUID", "PortNumber"],
)
def test_a_pm_info_header_without_its_keys_is_a_one_line_error(
    tmp_path: Path, header: str, renamed: str
) -> None:
    text = BASE.replace(
        "START_PM_INFO\nNodeGUID,PortGUID,PortNumber",
        "START_PM_INFO\nNodeGUID,PortGUID,PortNumber".replace(header, renamed),
        1,
    )
    folder = _run(tmp_path, text)
    assert _ibfab("discover", "--ibdiagnet", str(folder), "--json").exit_code == 0  # the fabric reads
    res = _ibfab("counters", "collect", "--ibdiagnet", str(folder), "--db", str(tmp_path / "s.db"))
    where = f"{folder / 'ibdiagnet2.db_csv'}:{_line_of(BASE, 'START_PM_INFO') + 1}:"
    _one_line_error(res, 3, where, f"PM_INFO: no {header} column in its header")


def test_a_missing_pm_info_section_says_the_run_read_no_counters(tmp_path: Path) -> None:
    folder = _run(tmp_path, _drop(BASE, "PM_INFO"))
    assert _ibfab("discover", "--ibdiagnet", str(folder), "--json").exit_code == 0
    res = _ibfab("counters", "collect", "--ibdiagnet", str(folder), "--db", str(tmp_path / "s.db"))
    _one_line_error(res, 2, "the run read no port counters (no PM_INFO section and no ibdiagnet2.pm")


def test_a_pm_info_section_cut_short_is_a_one_line_error(tmp_path: Path) -> None:
    folder = _run(tmp_path, BASE.replace("END_PM_INFO\n", "", 1))
    res = _ibfab("counters", "collect", "--ibdiagnet", str(folder), "--db", str(tmp_path / "s.db"))
    _one_line_error(res, 3, "section PM_INFO", "END_PM_INFO")


def test_a_renamed_lid_column_leaves_the_lids_unknown_and_everything_else_read(tmp_path: Path) -> None:
    folder = _run(tmp_path, BASE.replace("MSMLID,LID,CapMsk", "MSMLID,LlD,CapMsk", 1))
    res = _ibfab("discover", "--ibdiagnet", str(folder), "--json")
    assert res.exit_code == 0, res.output
    good = json.loads(_ibfab("discover", "--ibdiagnet", str(RUN), "--json").stdout)
    got = json.loads(res.stdout)
    assert len(got["nodes"]) == len(good["nodes"]) == 272 and len(got["links"]) == len(good["links"])
    assert all(n.get("lid") is None for n in got["nodes"])
    db, clean_db = tmp_path / "s.db", tmp_path / "clean.db"
    res = _ibfab("counters", "collect", "--ibdiagnet", str(folder), "--db", str(db))
    assert res.exit_code == 0, res.output
    assert _ibfab("counters", "collect", "--ibdiagnet", str(RUN), "--db", str(clean_db)).exit_code == 0
    with Store.open(db, create=False) as store, Store.open(clean_db, create=False) as clean:
        (snap,) = store.list_counter_snapshots()
        rows = store.load_port_counters(snap.id)
        (clean_snap,) = clean.list_counter_snapshots()
        clean_rows = clean.load_port_counters(clean_snap.id)
        assert len(rows) == len(clean_rows) > 500 and all(r.lid is None for r in rows)
        assert [(r.guid, r.port, dict(r.counters)) for r in rows] == [
            (r.guid, r.port, dict(r.counters)) for r in clean_rows
        ]


def test_a_bare_cr_in_one_pm_info_row_costs_that_port_only(tmp_path: Path) -> None:
    folder = _run(
        tmp_path, BASE.replace(FIRST_PM, FIRST_PM.replace("0300d33fc0,1,", "03\r00d33fc0,1,", 1), 1)
    )
    db = tmp_path / "s.db"
    res = _ibfab("counters", "collect", "--ibdiagnet", str(folder), "--db", str(db), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    clean = _ibfab("counters", "collect", "--ibdiagnet", str(RUN), "--db", str(tmp_path / "c.db"), "--json")
    assert out["problems"] == 1 and out["ports_read"] == json.loads(clean.stdout)["ports_read"] - 1
