"""Cable plans read as a stream (issue 30 item 8): a 92 MB plan took 89 s and 1.7 GB, holding the
file, its lines and its CSV rows at once beside the cables. Now a file is read a row at a time:
the result is the one the whole text gives (every real plan, in every encoding and line ending a
spreadsheet saves), and the memory the read needs beyond the plan it returns is a fraction of it
(bench/bench_cableplan.py has the figures at 1.5 M cables)."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pytest

from tests.conftest import realdata_files
from topology.cableplan import CablePlan, PlanParseError, parse_cable_plan, read_cable_plan
from topology.errors import ParseError

PLANS = realdata_files("ndt")


def _plan_rows(rows: int) -> str:
    out = ["#StartDevice,StartPort,EndDevice,EndPort,LinkType,Speed"]
    for i in range(rows):
        host, hca = divmod(i, 8)
        leaf, port = divmod(i, 64)
        out.append(f"node{host:07d},node{host:07d} mlx5_{hca},leaf{leaf:05d},Port {port + 1},Data,4xNDR")
    return "\n".join(out) + "\n"


def _same(a: CablePlan, b: CablePlan) -> None:
    assert a.cables == b.cables and a.conflicts == b.conflicts and a.skipped_rows == b.skipped_rows


def _read_or_error(path: Path) -> CablePlan | str:
    try:
        return read_cable_plan(path)
    except ParseError as exc:
        return str(exc)


@pytest.mark.parametrize("path", PLANS, ids=lambda p: p.name)
@pytest.mark.parametrize("form", ["as saved", "crlf", "latin-1", "utf-16", "utf-8 bom"])
def test_a_plan_file_reads_as_its_whole_text_does(tmp_path: Path, path: Path, form: str) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    if form == "crlf":
        text = text.replace("\n", "\r\n")
    if form == "latin-1":  # a spreadsheet saved on Windows: a name with an accent
        text += "caf\u00e9,Port 1,bar,Port 2,Ethernet\n"
    data = {
        "latin-1": text.encode("latin-1", "replace"),
        "utf-16": text.encode("utf-16"),
        "utf-8 bom": b"\xef\xbb\xbf" + text.encode(),
    }.get(form, text.encode())
    file = tmp_path / path.name
    file.write_bytes(data)
    try:
        whole: CablePlan | str = parse_cable_plan(text, str(file))
    except PlanParseError as exc:
        whole = str(exc)
    streamed = _read_or_error(file)
    if isinstance(whole, str):
        assert streamed == whole
    else:
        assert not isinstance(streamed, str), streamed
        _same(streamed, whole)


def test_a_large_plan_file_reads_as_its_text_does(tmp_path: Path) -> None:
    text = _plan_rows(20_000)
    file = tmp_path / "plan.csv"
    file.write_text(text)
    streamed, whole = read_cable_plan(file), parse_cable_plan(text, str(file))
    _same(streamed, whole)
    assert len(streamed.cables) == 20_000 and not streamed.conflicts


def test_reading_a_plan_needs_little_beyond_the_plan_it_returns(tmp_path: Path) -> None:
    """The peak of the read (traced allocations) against what the plan keeps: the file's text,
    its lines and its CSV rows were all held at once (4x what the plan keeps); a row at a time,
    the read needs the plan and the index that folds both listings of a cable."""
    file = tmp_path / "plan.csv"
    file.write_text(_plan_rows(10_000))
    gc.collect()
    tracemalloc.start()
    try:
        plan = read_cable_plan(file)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(plan.cables) == 10_000
    assert peak < 2 * kept, f"peak {peak / 2**20:.1f} MiB for a plan of {kept / 2**20:.1f} MiB"


def test_bounds_still_hold_when_streaming(tmp_path: Path) -> None:
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"#StartDevice,StartPort,EndDevice,EndPort\na,Port 1,b,Port\x002\n")
    with pytest.raises(ParseError, match=r"binary\.csv:2: cable plan: binary data"):
        read_cable_plan(binary)
    long = tmp_path / "long.csv"
    long.write_bytes(b"#StartDevice,StartPort,EndDevice,EndPort\n" + b"a" * (2 << 20) + b"\n")
    with pytest.raises(ParseError, match=r"long\.csv:2: cable plan: line 2 is longer than 1 MiB"):
        read_cable_plan(long)


def test_a_huge_cell_is_quoted_cut_and_the_error_stays_one_short_line(tmp_path: Path) -> None:
    """Found by the CLI fuzz (tests/fabric/test_parsers_fuzz.py): a stray quote made a Speed cell
    of 18,000 characters, quoted whole, and the one-line error ran past its 400 characters."""
    file = tmp_path / "plan.csv"
    file.write_text(
        "#StartDevice,StartPort,EndDevice,EndPort,LinkType,Speed\na,Port 1,b,Port 2,Data,"
        + "z" * 20_000
        + "\n"
    )
    with pytest.raises(PlanParseError) as err:
        read_cable_plan(file)
    assert "(20000 characters)" in str(err.value) and len(err.value.one_line()) <= 400
