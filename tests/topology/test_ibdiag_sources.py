"""ibdiagnet as a source: the Fabric of db_csv equals ibnetdiscover's of the same fabric; AR, FEC
and temperatures; the cable inventory of ibdiagnet2.cables. Every real file is read in place."""

from __future__ import annotations

import csv
import io
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import REALDATA, realdata_files
from topology.cables import by_node, parse_cables, read_cables
from topology.errors import ParseError
from topology.ibdiag_csv import (
    db_csv_sections,
    link_speed,
    link_width,
    node_of_port_guid,
    parse_db_csv_fabric,
    read_db_csv,
    run_time,
)
from topology.ibdiag_state import parse_db_csv_state
from topology.ibnetdiscover import read_ibnetdiscover
from topology.model import Guid, PortRef

IBDIAG = realdata_files("ibdiagnet")
DB_CSV = [p for p in IBDIAG if p.name.endswith(".db_csv")]
CABLES = [p for p in IBDIAG if p.name.endswith(".cables")]
# The ibnetdiscover file ibdiagnet wrote in the same run (SOURCES.tsv says which).
SAME_FABRIC = {
    "garyli-ndr-272nodes-ibdiagnet2.db_csv": REALDATA
    / "ibnetdiscover"
    / "garyli-ibdiagnet2-ndr-272nodes-label-ports.txt"
}


def test_real_files_present() -> None:
    assert DB_CSV and CABLES


@pytest.mark.parametrize("path", DB_CSV, ids=[p.name for p in DB_CSV])
def test_db_csv_fabric_equals_ibnetdiscover(path: Path) -> None:
    fabric = parse_db_csv_fabric(read_db_csv(path), str(path))
    other_path = SAME_FABRIC.get(path.name)
    if other_path is None:
        pytest.skip("no ibnetdiscover capture of this fabric")
    other = read_ibnetdiscover(other_path)
    assert dict(fabric.nodes) == dict(other.nodes)  # kinds, descriptions, ports, LIDs, ids
    assert fabric.links == other.links  # ends, widths, speeds
    assert fabric.unconnected == other.unconnected == ()
    assert Counter(f"{lk.width}x{lk.speed}" for lk in fabric.links) == {"4xNDR": 271}


def _shuffle_columns(text: str, seed: int) -> str:
    """Each section's columns in another order (the reader goes by header names)."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    rng = random.Random(seed)
    while i < len(lines):
        out.append(lines[i])
        if lines[i].startswith("START_"):
            name = lines[i][6:]
            j = lines.index(f"END_{name}", i)
            rows = list(csv.reader(lines[i + 1 : j]))
            if rows:
                order = list(range(len(rows[0])))
                rng.shuffle(order)
                buf = io.StringIO()
                csv.writer(buf, lineterminator="\n").writerows([[r[k] for k in order] for r in rows])
                out += buf.getvalue().splitlines()
            i = j
            continue
        i += 1
    return "\r\n".join(out) + "\r\n"


@pytest.mark.parametrize("path", DB_CSV, ids=[p.name for p in DB_CSV])
def test_db_csv_transformed_reads_the_same(path: Path) -> None:
    text = read_db_csv(path)
    want = parse_db_csv_fabric(text, "x")
    got = parse_db_csv_fabric(_shuffle_columns(text, 7), "x")
    assert dict(got.nodes) == dict(want.nodes) and got.links == want.links
    state = parse_db_csv_state(_shuffle_columns(text, 3))
    assert state == parse_db_csv_state(text)


def test_db_csv_truncated_or_missing_sections() -> None:
    text = read_db_csv(DB_CSV[0])
    cut = text[: text.index("END_LINKS")]
    with pytest.raises(ParseError, match="no END_LINKS"):
        parse_db_csv_fabric(cut, "cut.db_csv")
    without_links = text.replace("START_LINKS", "START_LINKZ").replace("END_LINKS", "END_LINKZ")
    with pytest.raises(ParseError, match="no LINKS section"):
        parse_db_csv_fabric(without_links, "x.db_csv")
    with pytest.raises(ParseError, match="no NODES section"):
        parse_db_csv_fabric("not a db_csv\n", "x")


def test_db_csv_link_to_unknown_node_is_refused() -> None:
    text = read_db_csv(DB_CSV[0]).replace(
        "NodeGuid1,PortNum1,NodeGuid2,PortNum2\n", "NodeGuid1,PortNum1,NodeGuid2,PortNum2\n0x1,1,0x2,1\n"
    )
    with pytest.raises(ParseError, match="not in NODES") as err:
        parse_db_csv_fabric(text, "x")
    assert err.value.lineno > 0


@pytest.mark.parametrize(
    ("code", "speed"),
    [(2052, "NDR"), (1025, "HDR"), (513, "EDR"), (1 << 16 | 4, "FDR10"), (4, "QDR"), (1, "SDR"), (0, "???")],
)
def test_speed_codes(code: int, speed: str) -> None:
    assert link_speed(code) == speed


def test_width_codes() -> None:
    assert [link_width(c) for c in (1, 2, 4, 8, 16, 0, 3)] == [1, 4, 8, 12, 2, 0, 0]


@pytest.mark.parametrize("path", DB_CSV, ids=[p.name for p in DB_CSV])
def test_db_csv_state(path: Path) -> None:
    text = read_db_csv(path)
    state = parse_db_csv_state(text)
    fabric = parse_db_csv_fabric(text, "x")
    # This run has an AR_INFO table with no rows: AR state is unknown, not "off".
    assert state.ar_section_present and state.ar == {}
    # FEC per port: the modes this run's net_dump names; the aggregation ports say N/A.
    assert Counter(f.mode for f in state.fec.values()) == {
        "RS_FEC_544_514": 320,
        "MLNX_RS_271_257_PLR": 208,
        None: 7,
    }
    cabled = {end for lk in fabric.links for end in (lk.a, lk.b)}
    assert {ref for ref, f in state.fec.items() if f.mode} <= cabled
    # A temperature for every node, in a plausible range.
    assert set(state.temperature) == set(fabric.nodes)
    assert all(20 <= t <= 110 for t in state.temperature.values())


def test_ar_info_rows() -> None:
    text = (
        "START_AR_INFO\n"
        "NodeGUID,e,by_sl_en,enable_by_sl_mask,fr_enabled,by_sl_hbf_en\n"
        "0x0000000000000001,1,1,0x0003,1,0\n"
        "0x0000000000000002,1,0,0xffff,0,0\n"
        "0x0000000000000003,0,0,0x0000,0,0\n"
        "0x0000000000000004,N/A,N/A,N/A,N/A,N/A\n"
        "END_AR_INFO\n"
    )
    ar = parse_db_csv_state(text).ar
    assert [ar[Guid(f"0x{i:016x}")].describe() for i in (1, 2, 3, 4)] == [
        "AR on for SL 0,1",
        "AR on for all SLs",
        "AR off",
        "AR state unknown",
    ]


@pytest.mark.parametrize("path", CABLES, ids=[p.name for p in CABLES])
def test_cable_inventory(path: Path) -> None:
    inventory = read_cables(path)
    blocks = path.read_text().count("\nPort=")
    assert len(inventory) == blocks
    for ref, cable in inventory.items():
        assert cable.ref == ref and cable.vendor and cable.part_number and cable.serial
        assert len(cable.rx_power_dbm) == len(cable.tx_power_dbm) == len(cable.tx_bias_ma) > 0
        # -999.999 mW / inf mW are "no reading", never a power.
        assert all(v is None or -40 < v < 10 for v in (*cable.rx_power_dbm, *cable.tx_power_dbm))
        if cable.copper:
            assert cable.temperature_c is None  # passive copper has no sensor ("0C")
            assert cable.length_m is not None
        elif cable.fields.get("Temperature", "N/A") not in ("N/A", "NA"):
            assert cable.temperature_c is not None and cable.temperature_c > 0


def test_cable_inventory_keys_meet_the_fabric() -> None:
    db_csv = next(p for p in DB_CSV if "272nodes" in p.name)
    cables = next(p for p in CABLES if "272nodes" in p.name)
    text = read_db_csv(db_csv)
    fabric = parse_db_csv_fabric(text, "x")
    inventory = by_node(read_cables(cables), node_of_port_guid(text))
    assert {ref.guid for ref in inventory} <= set(fabric.nodes)


def test_cables_errors() -> None:
    with pytest.raises(ParseError, match="before any 'Port=N"):
        parse_cables("Vendor: FS\n", "c")
    with pytest.raises(ParseError, match="not a 'Key: value' line") as err:
        parse_cables("Port=1 Lid=0x1 GUID=0x1 Port Name=x\nVendor: FS\ngarbage\n", "c")
    assert err.value.lineno == 3


def test_cables_crlf_reads_the_same() -> None:
    text = CABLES[0].read_text()
    assert parse_cables(text.replace("\n", "\r\n")) == parse_cables(text)


def test_sections_reader() -> None:
    sections = db_csv_sections("# c\nSTART_A\nx,y\n1,2\nEND_A\nSTART_B\nEND_B\n")
    assert sections["A"].rows == ({"x": "1", "y": "2"},) and sections["A"].line_of(0) == 4
    assert sections["B"].rows == ()
    assert PortRef(Guid("0x1"), 1) == PortRef(Guid("0x1"), 1)


@pytest.mark.parametrize(
    ("date", "expected"),
    [
        ("2025-03-31 23:43:18 UTC +0000", 1743464598.0),
        ("2025-03-31 23:43:18 UTC", 1743464598.0),
        ("2025-04-01 01:43:18 +02:00", 1743464598.0),
        ("2025-03-31 18:43:18 -0500", 1743464598.0),
        ("2025-03-31 23:43:18", None),  # no zone: not a time
        ("yesterday", None),
        ("", None),
    ],
)
def test_run_time(date: str, expected: float | None) -> None:
    text = f'START_RUN_INFO\nIBDIAGNET_Version,Date,Args\n"x","{date}",""\nEND_RUN_INFO\n'
    assert run_time(text) == expected
    assert run_time("START_NODES\nNodeGUID\nEND_NODES\n") is None


@pytest.mark.parametrize("path", DB_CSV, ids=lambda p: p.name)
def test_real_run_time_is_the_logged_timestamp(path: Path) -> None:
    # The run's log beside it says the same ("Running timestamp: ...").
    when = run_time(read_db_csv(path), str(path))
    assert when is not None
    log_path = path.with_name(path.name.replace(".db_csv", ".log"))
    if not log_path.is_file():
        pytest.skip(f"no log beside {path.name}")
    log = log_path.read_text()
    stamp = re.search(r"Running timestamp: (.+)", log)
    assert stamp is not None
    crafted = f"START_RUN_INFO\nDate\n{stamp.group(1).strip()}\nEND_RUN_INFO\n"
    assert run_time(crafted) == when


@pytest.mark.parametrize("path", CABLES, ids=lambda p: p.name)
def test_cables_fields_reordered_and_extra_read_the_same(path: Path) -> None:
    """Each port block's fields in another order, plus a field a newer ibdiagnet might add."""
    text = path.read_text()
    rng = random.Random(5)
    out: list[str] = []
    block: list[str] = []

    def flush() -> None:
        rng.shuffle(block)
        out.extend([*block, "Vendor Specific Note: x"] if block else [])
        block.clear()

    for line in text.splitlines():
        if line.startswith("Port="):
            flush()
            out.append(line)
        elif ":" in line and not line.startswith("#") and out:
            block.append(line)
        else:
            flush()
            out.append(line)
    flush()
    want, got = parse_cables(text), parse_cables("\r\n".join(out))
    assert got.keys() == want.keys()
    for ref, cable in want.items():
        other = got[ref]
        assert {k: v for k, v in other.fields.items() if k != "Vendor Specific Note"} == dict(cable.fields)
        assert (other.vendor, other.part_number, other.serial, other.length_m, other.temperature_c) == (
            cable.vendor,
            cable.part_number,
            cable.serial,
            cable.length_m,
            cable.temperature_c,
        )
        assert (other.rx_power_dbm, other.tx_power_dbm, other.tx_bias_ma) == (
            cable.rx_power_dbm,
            cable.tx_power_dbm,
            cable.tx_bias_ma,
        )
