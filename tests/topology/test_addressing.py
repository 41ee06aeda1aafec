"""What the subnet manager assigns (topology.addressing): ports it has not configured, and GUIDs
and LIDs two devices claim. Each rule beside a clean case; both ibnetdiscover readers agree."""

from __future__ import annotations

import csv
import io

import pytest

from tests.conftest import realdata_files
from topology.anomaly import Anomaly
from topology.classify import classify
from topology.errors import UsageError
from topology.generate import design_from_dict, design_to_dict, generate, to_ibnetdiscover, to_ibsim_net
from topology.ibdiag_csv import parse_db_csv_fabric, read_db_csv
from topology.ibnetdiscover import parse_ibnetdiscover, parse_ibnetdiscover_text
from topology.ibnetdiscover_fast import parse_canonical
from topology.model import Fabric, Guid, PortRef
from topology.serialize import fabric_from_json, fabric_to_json
from topology.wiring import find_anomalies

FAT8 = "leafspine:leaves=4,spines=2,hosts=4,hcas=8,radix=64"


def found(fabric: Fabric) -> list[Anomaly]:
    return find_anomalies(fabric, classify(fabric))


def read_both(text: str) -> Fabric:
    """The whole-text reader's Fabric, checked equal to the line parser's (lids, duplicates too)."""
    fast = parse_ibnetdiscover_text(text, "t")
    line = parse_ibnetdiscover(text.splitlines(), "t")
    assert fast == line and fast.lids == line.lids and fast.duplicates == line.duplicates
    return fast


# -- ports the subnet manager has not configured ---------------------------------------------------
def test_a_configured_fabric_has_every_lid_and_reports_nothing() -> None:
    fabric = read_both(to_ibnetdiscover(generate(FAT8)))
    assert len(fabric.lids) == len(fabric.nodes)  # each switch's port 0, each HCA's one port
    assert found(fabric) == []


def test_ports_without_a_lid_are_one_anomaly_with_the_count_names_and_checks() -> None:
    """Rule: a cabled HCA port or a cabled switch whose LID is 65535 or 0 has none from the SM.
    Eleven of them (one whole host) are one anomaly, not eleven."""
    faults = ["no-lid:cn0001:2", "no-lid:cn0002:2", "no-lid:spine-01"] + [
        f"no-lid:cn0005:{i}" for i in range(8)
    ]
    d = generate(FAT8, faults)
    text = to_ibnetdiscover(d)
    assert "# lid 65535 lmc 0" in text and "enhanced port 0 lid 0 lmc 0" in text
    fabric = parse_ibnetdiscover_text(text)
    assert parse_canonical(text, "t") is not None  # the fast path reads it, and agrees
    (a,) = found(read_both(text))
    assert a.kind == "unconfigured_ports" and a.severity.value == "error"
    assert set(a.nodes) == {g for p in d.planted for g in p.guids}
    assert set(a.ports) == {r for p in d.planted for r in p.ports}
    assert a.message.startswith(
        "11 ports the subnet manager has not configured (11 have no LID: 10 LID 65535, 1 LID 0): "
        "cn0005 (every HCA), cn[0001-0002] mlx5_2, spine-01;"
    )
    assert "`sminfo`" in a.message and "opensm.log" in a.message and "`ibstat`" in a.message
    assert fabric.lids[PortRef(Guid(d.switch("spine-01").guid), 0)] == 0


def test_a_down_port_with_lid_0_in_a_ports_report_is_not_unconfigured() -> None:
    """``ibnetdiscover -p`` lists an HCA's second port, not cabled, with LID 0: a down port, not
    one the SM left out. The same HCA's cabled port with LID 0 is."""
    report = "\n".join(
        [
            "CA    12  1 0x0002c90300000001 4x EDR - SW     3 10 0x0002c90300000100 ( 'node1 mlx5_0' - 'leaf1' )",
            "CA     0  2 0x0002c90300000001 4x ???                                    'node1 mlx5_0'",
            "SW     3 10 0x0002c90300000100 4x EDR - CA    12  1 0x0002c90300000001 ( 'leaf1' - 'node1 mlx5_0' )",
        ]
    )
    assert not [a for a in found(parse_ibnetdiscover(report.splitlines())) if a.kind == "unconfigured_ports"]
    unset = report.replace("CA    12  1", "CA     0  1").replace("CA    12  1", "CA     0  1")
    (a,) = [a for a in found(parse_ibnetdiscover(unset.splitlines())) if a.kind == "unconfigured_ports"]
    assert a.ports == (PortRef(Guid("0x0002c90300000001"), 1),)
    assert a.message.startswith(
        "1 port the subnet manager has not configured (1 has no LID: 1 LID 0): node1 mlx5_0;"
    )


def _db_csv_with(text: str, changes: dict[tuple[str, str], dict[str, str]]) -> str:
    """``text`` with PORTS rows (NodeGuid, PortNum) changed as given."""
    lines = text.split("\n")
    start = lines.index("START_PORTS") + 1
    end = lines.index("END_PORTS")
    header = next(csv.reader([lines[start]]))
    for i in range(start + 1, end):
        row = dict(zip(header, next(csv.reader([lines[i]])), strict=True))
        change = changes.get((row["NodeGuid"], row["PortNum"]))
        if change:
            row.update(change)
            out = io.StringIO()
            csv.writer(out, lineterminator="").writerow([row[h] for h in header])
            lines[i] = out.getvalue()
    return "\n".join(lines)


DB_CSV = [p for p in realdata_files("ibdiagnet") if p.name.endswith(".db_csv")]


@pytest.mark.parametrize("path", DB_CSV, ids=lambda p: p.name)
def test_ibdiagnet_ports_up_but_not_active_are_unconfigured(path: object) -> None:
    """Rule: ibdiagnet's PORTS states each port's state; a cabled port in Init or Armed is up but
    not in service. The real run (every port Active, every LID set) is quiet; with one HCA port
    in Init and another with LID 0, both are in the one anomaly."""
    from pathlib import Path

    assert isinstance(path, Path)
    text = read_db_csv(path)
    clean = parse_db_csv_fabric(text, "x")
    assert not [a for a in found(clean) if a.kind == "unconfigured_ports"]
    hcas = sorted(g for g, n in clean.nodes.items() if n.kind.value == "hca" and clean.neighbours(g))[:2]
    changed = _db_csv_with(text, {(hcas[0], "1"): {"PortState": "2"}, (hcas[1], "1"): {"LID": "0"}})
    fabric = parse_db_csv_fabric(changed, "x")
    assert dict(fabric.inactive) == {PortRef(hcas[0], 1): "Init"}
    (a,) = [a for a in found(fabric) if a.kind == "unconfigured_ports"]
    assert set(a.ports) == {PortRef(hcas[0], 1), PortRef(hcas[1], 1)}
    assert (
        "2 ports the subnet manager has not configured (1 has no LID: 1 LID 0; 1 is up but not Active: 1 Init)"
        in a.message
    )


# -- GUIDs and LIDs two devices claim ---------------------------------------------------------------
def test_two_devices_with_one_guid_are_one_error_naming_both_and_nothing_else() -> None:
    """Rule: a record whose GUID an earlier record has is a second device with that GUID (never
    merged into the first, never a parse error). cn0010's card is there under cn0004's GUID: it
    is not reported missing."""
    d = generate(FAT8, ["dup-guid:cn0004:0:cn0010:0"])
    text = to_ibnetdiscover(d)
    assert parse_canonical(text, "t") is None  # the fast path leaves it to the line parser
    fabric = read_both(text)
    (second,) = fabric.duplicates
    first = d.hcas[next(i for i, h in enumerate(d.hcas) if h.description == "cn0004 mlx5_0")]
    assert second.guid == first.guid and second.description == "cn0010 mlx5_0"
    assert fabric.nodes[first.guid].description == "cn0004 mlx5_0"
    (a,) = found(fabric)
    assert a.kind == "duplicate_guid" and a.severity.value == "error"
    assert a.message.startswith(f"GUID {first.guid} is claimed by two devices: 'cn0004 mlx5_0' (LID ")
    assert "'cn0010 mlx5_0' (LID " in a.message and "port 1 to leaf-03 port 9" in a.message
    assert first.guid in a.nodes


def test_a_record_listed_twice_alike_is_read_once_with_a_warning() -> None:
    text = to_ibnetdiscover(generate("fattree-small"))
    records = text.split("\n\n")
    doubled = "\n\n".join([*records, records[3], records[-2]])
    fabric = parse_ibnetdiscover_text(doubled)
    assert fabric == parse_ibnetdiscover_text(text)
    assert fabric.duplicates == ()
    assert fabric.warnings == (
        "2 records listed twice with the same content (a capture pasted twice?): read once",
    )
    assert found(fabric) == []


@pytest.mark.parametrize(
    ("fault", "names"),
    [
        ("dup-lid:cn0002:1:cn0006:1", "cn0002 mlx5_1 port 1, cn0006 mlx5_1 port 1"),
        ("dup-lid:leaf-01:spine-02", "switch leaf-01, switch spine-02"),
    ],
)
def test_one_lid_on_two_devices_is_an_error_naming_both(fault: str, names: str) -> None:
    d = generate(FAT8, [fault])
    (a,) = found(read_both(to_ibnetdiscover(d)))
    (planted,) = d.planted
    assert a.kind == planted.kind == "duplicate_lid" and set(a.nodes) == set(planted.guids)
    assert f"is held by 2 ports: {names}: packets for it reach only one of them" in a.message


@pytest.mark.parametrize("path", realdata_files("ibnetdiscover"), ids=lambda p: p.name)
def test_real_captures_have_no_unset_or_shared_identity(path: object) -> None:
    """Every real capture: no LID 0/65535 on a cabled port, no LID twice, no GUID recorded twice
    (the -p excerpt whose aggregation node is pasted with two LIDs keeps the first: one LID)."""
    from pathlib import Path

    from topology.ibnetdiscover import read_ibnetdiscover

    assert isinstance(path, Path)
    fabric = read_ibnetdiscover(path)
    assert fabric.duplicates == ()
    kinds = {"unconfigured_ports", "duplicate_guid", "duplicate_lid"}
    assert [a.message for a in found(fabric) if a.kind in kinds] == []


# -- the generator and the model's records ----------------------------------------------------------
def test_the_lab_refuses_what_only_a_subnet_manager_makes() -> None:
    with pytest.raises(UsageError, match="no-lid:cn0001:2: the simulator's OpenSM assigns LIDs"):
        to_ibsim_net(generate(FAT8, ["no-lid:cn0001:2"]))


def test_lids_states_and_second_records_survive_the_json_round_trip() -> None:
    d = generate(FAT8, ["dup-guid:cn0004:0:cn0010:0", "no-lid:cn0001:2"])
    fabric = parse_ibnetdiscover_text(to_ibnetdiscover(d))
    again = fabric_from_json(fabric_to_json(fabric))
    assert again == fabric and again.duplicates == fabric.duplicates and again.lids == fabric.lids
    db = parse_db_csv_fabric(_db_csv_with(read_db_csv(DB_CSV[0]), {}), "x")
    assert fabric_from_json(fabric_to_json(db)).inactive == db.inactive
    assert design_from_dict(design_to_dict(d)) == d


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ("no-lid:nosuch", "no switch named 'nosuch'"),
        ("dup-lid:cn0001:1:cn0001:1", "cannot share a LID with itself"),
        ("dup-lid:cn0001:1:cn0002", "dup-lid takes two switches or HOST:N:HOST2:M"),
        ("dup-guid:cn0001:1:cn0002", "takes 4 arguments"),
        ("dup-guid:cn0001:1:cn0001:1", "two different HCAs"),
    ],
)
def test_bad_subnet_faults_are_one_line_errors(fault: str, error: str) -> None:
    with pytest.raises(UsageError, match=error):
        generate(FAT8, [fault])


def test_a_subnet_fault_on_an_absent_hca_is_refused() -> None:
    with pytest.raises(UsageError, match="absent"):
        generate(FAT8, ["no-lid:cn0001:2", "missing-hca:cn0001:2"])
