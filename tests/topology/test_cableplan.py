"""Cable plans (UFM NDT CSV): every real plan read or refused as UFM does, in both forms,
and after transformations (columns reordered, CRLF, extra columns)."""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path

import pytest

from tests.conftest import REALDATA, realdata_files
from topology.cableplan import (
    PlanParseError,
    PortForm,
    merge_plans,
    parse_cable_plan,
    parse_port,
    parse_rate,
    read_cable_plan,
)

NDT = realdata_files("ndt")
# The three plans UFM rejects, and what UFM says (SOURCES.tsv): which line and column we name.
REFUSED = {
    "ufm-ndt-negative_flow_ndts-garbage.ndt": (1, 0, "no header naming the StartDevice"),
    "ufm-ndt-negative_flow_ndts-incorrect_columns.ndt": (1, 0, "header has no StartPort column"),
    "ufm-ndt-negative_flow_ndts-incorrect_ports.ndt": (2, 2, "StartPort 'abra' is not a port"),
}


def _data_rows(path: Path) -> tuple[int, list[str]]:
    """(distinct cables, header) of a plan as csv reads it: rows that name a device in their first
    device column, a cable listed from both ends counted once (UFM's switch plans list each twice)."""
    rows = list(csv.reader(io.StringIO(path.read_text())))
    header = rows[0]
    cols = [next(i for i, c in enumerate(header) if name in c) for name in ("StartDevice", "StartPort")]
    cols += [header.index(name) for name in ("EndDevice", "EndPort")]

    def cell(r: list[str], i: int) -> str:
        return " ".join(r[i].split()).casefold()

    cables = {
        frozenset({(cell(r, cols[0]), cell(r, cols[1])), (cell(r, cols[2]), cell(r, cols[3]))})
        for r in rows[1:]
        if len(r) > cols[0] and r[cols[0]].strip()
    }
    return len(cables), header


def test_every_real_plan_is_covered() -> None:
    assert len(NDT) >= 5
    assert {p.name for p in NDT} >= set(REFUSED)


@pytest.mark.parametrize("path", NDT, ids=[p.name for p in NDT])
def test_real_plan_read_or_refused(path: Path) -> None:
    if path.name in REFUSED:
        line, column, words = REFUSED[path.name]
        with pytest.raises(PlanParseError) as err:
            read_cable_plan(path)
        e = err.value
        assert (e.lineno, e.column) == (line, column)
        assert words in str(e)
        assert e.one_line().startswith(f"{path}:{line}: cable plan: ")
        assert "\n" not in str(e)
        return
    plan = read_cable_plan(path)
    # Every row that names a device is a cable (these plans have no other link types).
    cables, header = _data_rows(path)
    assert len(plan.cables) == cables
    assert plan.skipped_rows == 0
    for cable in plan.cables:
        if "Speed" in header:
            assert cable.rate is not None and cable.rate.gbps == 200.0  # "200000" (Mb/s) in every row
        if "Cable Length" in header:
            assert cable.length.isdigit()
        assert cable.source == str(path)


def test_spreadsheet_plan_fields() -> None:
    plan = read_cable_plan(REALDATA / "ndt" / "ufm-ndt-other_ndts-ndt.csv")
    first = plan.cables[0]
    assert (first.start.device, str(first.start.port)) == ("DSM07-0101-0806-01IB0", "Port 21")
    assert first.end.port.form is PortForm.BLADE
    assert (first.end.port.blade, first.end.port.asic, first.end.port.number) == (1, 1, 1)
    assert first.line == 2 and first.length == "10"
    # This real spreadsheet cables some director ports twice (ports 23 and 31 of each leaf both go
    # to 'Blade 1_Port 1/N'): kept as conflicts for the check to report, not a refused file.
    assert plan.conflicts
    conflict = plan.conflicts[0]
    assert len({c.line for c in conflict.cables}) == len(conflict.cables) >= 2


def test_host_plan_ports() -> None:
    plan = read_cable_plan(REALDATA / "ndt" / "ufm-ndt-other_ndts-ndth2s.csv")
    first = plan.cables[0]
    assert first.start.device == "Server 1 IB Port 1"
    assert first.start.port.form is PortForm.HOST and first.start.port.number == 1


# -- transformations of the real plans ---------------------------------------------------------
def _rewrite(path: Path, order: list[int] | None = None, extra: bool = False, crlf: bool = False) -> str:
    rows = list(csv.reader(io.StringIO(path.read_text())))
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    if order is not None:
        rows = [[r[i] for i in order] for r in rows]
    if extra:
        rows = [["Notes" if i == 0 else f"note {i}", *r, "x"] for i, r in enumerate(rows)]
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n" if crlf else "\n").writerows(rows)
    return out.getvalue()


def _ends(plan_text: str, source: str) -> list[tuple[str, str, str, str, str | None, str]]:
    plan = parse_cable_plan(plan_text, source)
    return [
        (str(c.start.device), str(c.start.port), c.end.device, str(c.end.port), str(c.rate), c.length)
        for c in plan.cables
    ]


READABLE = [p for p in NDT if p.name not in REFUSED]


@pytest.mark.parametrize("path", READABLE, ids=[p.name for p in READABLE])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_transformed_plans_read_the_same(path: Path, seed: int) -> None:
    want = _ends(path.read_text(), "p")
    width = max(len(r) for r in csv.reader(io.StringIO(path.read_text())))
    order = list(range(width))
    random.Random(seed).shuffle(order)
    assert _ends(_rewrite(path, order=order), "p") == want
    assert _ends(_rewrite(path, crlf=True), "p") == want
    assert _ends(_rewrite(path, extra=True), "p") == want
    assert _ends(_rewrite(path, order=order, extra=True, crlf=True), "p") == want


@pytest.mark.parametrize("path", [p for p in NDT if p.name in REFUSED], ids=lambda p: p.name)
def test_refused_plans_stay_refused_with_crlf(path: Path) -> None:
    with pytest.raises(PlanParseError) as err:
        parse_cable_plan(path.read_text().replace("\n", "\r\n"), path.name)
    assert (err.value.lineno, err.value.column) == REFUSED[path.name][:2]


# -- the parts ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "form", "number"),
    [
        ("Port 21", PortForm.SWITCH, 21),
        ("port21", PortForm.SWITCH, 21),
        ("7", PortForm.SWITCH, 7),
        ("Blade 16_Port 2/20", PortForm.BLADE, 20),
        ("blade 3_port 1/ 4", PortForm.BLADE, 4),
        ("IB Port 8", PortForm.HOST, 8),
        ("mlx5_3", PortForm.ADAPTER, None),
        ("mlx5_3/2", PortForm.ADAPTER, 2),
        ("HCA-1", PortForm.ADAPTER, None),
        ("ibp12s0f0", PortForm.ADAPTER, None),
    ],
)
def test_port_spellings(text: str, form: PortForm, number: int | None) -> None:
    port = parse_port(text)
    assert (port.form, port.number) == (form, number)
    assert parse_port(str(port)).key == port.key  # what we write reads back the same


@pytest.mark.parametrize("text", ["abra", "cadabra", "Port", "Blade 1", "Port 1/1", ""])
def test_not_ports(text: str) -> None:
    with pytest.raises(ValueError, match="is not a port"):
        parse_port(text)


@pytest.mark.parametrize(
    ("text", "width", "speed", "gbps"),
    [
        ("200000", None, None, 200.0),
        ("4xHDR", 4, "HDR", 200.0),
        ("2x NDR", 2, "NDR", 200.0),
        ("NDR", None, "NDR", None),
        ("400G", None, None, 400.0),
        ("200 Gb/s", None, None, 200.0),
        ("100", None, None, 100.0),
    ],
)
def test_rates(text: str, width: int | None, speed: str | None, gbps: float | None) -> None:
    rate = parse_rate(text)
    assert rate is not None and (rate.width, rate.speed, rate.gbps) == (width, speed, gbps)


def test_empty_rate_is_unknown_and_nonsense_is_refused() -> None:
    assert parse_rate("") is None and parse_rate("N/A") is None
    text = "#StartDevice,StartPort,EndDevice,EndPort,LinkType,Speed\na,Port 1,b,Port 2,Data,fast\n"
    with pytest.raises(PlanParseError) as err:
        parse_cable_plan(text, "p.csv")
    assert (err.value.lineno, err.value.column) == (2, 6)


def test_other_link_types_are_skipped_and_blank_rows_ignored() -> None:
    text = (
        "#StartDevice,StartPort,EndDevice,EndPort,LinkType\n"
        "a,Port 1,b,Port 1,Data\n"
        ",,,,\n"
        "a,Port 2,mgmt,Port 1,Management\n"
        "a,Port 3,b,Port 3,data\n"
    )
    plan = parse_cable_plan(text, "p")
    assert [c.line for c in plan.cables] == [2, 5] and plan.skipped_rows == 1


def test_empty_cell_names_its_column() -> None:
    text = "#StartDevice,StartPort,EndDevice,EndPort,LinkType\na,Port 1,b,,Data\n"
    with pytest.raises(PlanParseError) as err:
        parse_cable_plan(text, "p")
    assert (err.value.lineno, err.value.column) == (2, 4) and "EndPort is empty" in str(err.value)


def test_cable_listed_from_both_ends_is_one_cable_and_conflicts_are_kept() -> None:
    text = (
        "#StartDevice,StartPort,EndDevice,EndPort,LinkType\n"
        "A,Port 1,b,Port 1,Data\n"
        "b,port 1,a,1,Data\n"
        "a,Port 2,b,Port 2,Data\n"
    )
    plan = parse_cable_plan(text, "p")
    assert len(plan.cables) == 2 and not plan.conflicts
    other = parse_cable_plan("#StartDevice,StartPort,EndDevice,EndPort\na,Port 2,c,Port 9\n", "q")
    merged = merge_plans([plan, other])
    assert merged.sources == ("p", "q") and len(merged.cables) == 3
    (conflict,) = merged.conflicts
    assert conflict.end.device == "a" and {c.source for c in conflict.cables} == {"p", "q"}


def test_empty_file() -> None:
    with pytest.raises(PlanParseError, match="empty or not a cable plan"):
        parse_cable_plan("", "empty.csv")
