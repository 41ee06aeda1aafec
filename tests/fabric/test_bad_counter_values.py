"""A counter value no tool prints ("0x", "1e400", "-", Unicode digits...) in a real capture, copied
to tmp_path with that one value corrupted: the collection keeps every other port as the clean
capture reads it, and that port's counter is unknown (absent, never zero, never the garbage read
as a number), with a problem naming the file, the line and the port."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.counters.parse import parse_ibdiagnet_pm, parse_ibqueryerrors, parse_perfquery
from fabric.counters.samples import PortSample
from fabric.store import Store
from tests.conftest import REALDATA
from topology.errors import ParseError

BAD = ("0x", "1e400", "-", "abc", "\uff11\uff12", "\u0661\u0662", "1_000", "+5", "0x1g", "12abc")
PERFQUERY = REALDATA / "perfquery" / "treydock-perfquery-l-x-switch-port-errors-xmitdiscards.txt"
IBQUERYERRORS = REALDATA / "ibqueryerrors" / "linux-rdma-ml-2021-sx6036-ceph-errors-quoted.txt"
IBDIAG = REALDATA / "ibdiagnet"
DB_CSV = IBDIAG / "garyli-ndr-272nodes-ibdiagnet2.db_csv"
PM = IBDIAG / "garyli-ndr-272nodes-ibdiagnet2.pm"


def _corrupt(real: Path, tmp: Path, old: str, new: str) -> tuple[Path, int]:
    """A copy of ``real`` with the first ``old`` replaced; the copy and the line number."""
    text = real.read_text()
    at = text.index(old)
    copy = tmp / real.name
    copy.write_text(text[:at] + new + text[at + len(old) :])
    return copy, text.count("\n", 0, at) + 1


def _by_port(samples: list[PortSample]) -> dict[tuple[str | None, int, int | None], dict[str, int]]:
    return {(s.guid, s.port, s.lid): dict(s.values) for s in samples}


def _one_problem(problems: list[ParseError], where: str, lineno: int, port: str) -> None:
    assert len(problems) == 1, [p.one_line() for p in problems]
    line = problems[0].one_line()
    assert line.startswith(f"{where}:{lineno}: ") and port in line and "no numeric value" in line, line


@pytest.mark.parametrize("bad", BAD)
def test_perfquery(tmp_path: Path, bad: str) -> None:
    old = "PortXmitDiscards:................20046"
    copy, lineno = _corrupt(PERFQUERY, tmp_path, old, old.replace("20046", bad))
    clean = _by_port(parse_perfquery(PERFQUERY.read_text(), "x"))
    problems: list[ParseError] = []
    got = _by_port(parse_perfquery(copy.read_text(), str(copy), problems=problems))
    _one_problem(problems, str(copy), lineno, "LID 2052 port 1")
    [key] = [k for k, v in clean.items() if v.get("xmit_discards") == 20046]
    assert "xmit_discards" not in got[key]  # unknown: not 0, not a number made of the garbage
    assert got[key] == {k: v for k, v in clean[key].items() if k != "xmit_discards"}
    assert {k: v for k, v in got.items() if k != key} == {k: v for k, v in clean.items() if k != key}


@pytest.mark.parametrize("bad", BAD)
def test_ibqueryerrors(tmp_path: Path, bad: str) -> None:
    old = "[PortXmitDiscards == 15854]"
    copy, lineno = _corrupt(IBQUERYERRORS, tmp_path, old, f"[PortXmitDiscards == {bad}]")
    clean = parse_ibqueryerrors(IBQUERYERRORS.read_text(), "x")
    problems: list[ParseError] = []
    got = parse_ibqueryerrors(copy.read_text(), str(copy), problems=problems)
    _one_problem(problems, str(copy), lineno, "port ALL")
    assert got.ports_checked == clean.ports_checked and len(got.samples) == len(clean.samples)
    assert [s.values.get("xmit_discards") for s in got.sums] == [
        None if s.values.get("xmit_discards") == 15854 else s.values.get("xmit_discards") for s in clean.sums
    ]
    assert got.samples == clean.samples


@pytest.mark.parametrize("bad", BAD)
def test_ibdiagnet_pm(tmp_path: Path, bad: str) -> None:
    text = PM.read_text()
    head = "Port=2 Lid=0x00b4 GUID=0xb0cf0e0300d33fc0"
    at = text.index("symbol_error_counter=", text.index(head))
    copy = tmp_path / PM.name
    copy.write_text(text[:at] + f"symbol_error_counter={bad}" + text[text.index("\n", at) :])
    lineno = text.count("\n", 0, at) + 1
    clean = _by_port(parse_ibdiagnet_pm(text, "x"))
    problems: list[ParseError] = []
    got = _by_port(parse_ibdiagnet_pm(copy.read_text(), str(copy), problems=problems))
    _one_problem(problems, str(copy), lineno, "GUID 0xb0cf0e0300d33fc0 port 2")
    [key] = [k for k in clean if k[:2] == ("0xb0cf0e0300d33fc0", 2)]
    assert got[key] == {k: v for k, v in clean[key].items() if k != "symbol_errors"}
    assert {k: v for k, v in got.items() if k != key} == {k: v for k, v in clean.items() if k != key}


def _pm_info_copy(tmp_path: Path, bad: str) -> tuple[Path, int]:
    """The run's directory copied, one PM_INFO value of port 2 of the first switch corrupted."""
    run = tmp_path / "run"
    run.mkdir()
    lines = DB_CSV.read_text().split("\n")
    start = lines.index("START_PM_INFO")
    header = lines[start + 1].split(",")
    column = header.index("PortRcvSwitchRelayErrors")
    row = next(
        i
        for i in range(start + 2, len(lines))
        if lines[i].startswith("0xb0cf0e0300d33fc0,0xb0cf0e0300d33fc0,2,")
    )
    cells = lines[row].split(",")
    assert cells[column] == "158"
    cells[column] = bad
    lines[row] = ",".join(cells)
    (run / DB_CSV.name).write_text("\n".join(lines))
    return run, row + 1


@pytest.mark.parametrize("bad", ("0x", "1e400", "-", "\uff11\uff12"))
def test_counters_collect_ibdiagnet_keeps_every_other_port(tmp_path: Path, bad: str) -> None:
    run, lineno = _pm_info_copy(tmp_path, bad)
    db = str(tmp_path / "s.db")
    res = CliRunner().invoke(main, ["counters", "collect", "--ibdiagnet", str(run), "--db", db, "--json"])
    assert res.exit_code == 0, res.output
    stored = json.loads(res.stdout)
    assert stored["ports_read"] == 541 and stored["problems"] == 1
    clean = {(s.guid, s.port): dict(s.values) for s in parse_ibdiagnet_pm(DB_CSV.read_text(), "x")}
    with Store.open(db) as store:
        rows = store.load_port_counters(stored["snapshot_id"])
    got = {(r.guid, r.port): dict(r.counters) for r in rows if r.reachable}
    assert ("0xb0cf0e0300d33fc0", 2) not in got  # that port is unknown, not zeros
    assert got == {k: v for k, v in clean.items() if k != ("0xb0cf0e0300d33fc0", 2)}
    problems: list[ParseError] = []
    parse_ibdiagnet_pm((run / DB_CSV.name).read_text(), "db_csv", problems=problems)
    assert (
        problems[0].one_line().startswith(f"db_csv:{lineno}: ")
        and "PortRcvSwitchRelayErrors" in problems[0].one_line()
    )
