"""Host ends of cable plans as UFM writes them, on the shared NDT plans of one real site.

The site's host plan names its hosts by a rack template (``Server 1 IB Port 1`` in every rack);
each test rewrites it into real host ends in one of the spellings plans use, writes the copy
(columns shuffled, CRLF) into tmp_path, builds the fabric the plans describe (hosts, HDR leaves and
director line boards, as ibnetdiscover prints them), plants differences, and checks that exactly
those are reported. The real files are never edited.
"""

from __future__ import annotations

import csv
import io
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fabric.present.plan import render_check
from tests.conftest import REALDATA
from tests.crafted import CraftedFabric
from topology.cableplan import (
    PlanParseError,
    PortForm,
    merge_plans,
    parse_cable_plan,
    parse_end,
    read_cable_plan,
)
from topology.model import Fabric, Link
from topology.plancheck import PlanCheck, Verdict, check_plan, check_to_dict

HOST_PLAN = REALDATA / "ndt" / "ufm-ndt-other_ndts-ndth2s.csv"
SWITCH_PLAN = REALDATA / "ndt" / "ufm-ndt-other_ndts-ndt.csv"
# PCI-named adapters, as the udev rules name a DGX's eight HCAs: IB Port M is the M-th.
ADAPTERS = ("ibp12s0", "ibp18s0f1", "ibp75s0f0", "ibp84s0", "ibp141s0", "ibp148s0f0", "ibp186s0", "ibp204s0")
# How a plan spells a host end: (device cell, port cell) for host h and adapter a (one port each).
FORMS: dict[str, Callable[[str, str], tuple[str, str]]] = {
    "description in the port cell": lambda h, a: (h, f"{h} {a}"),
    "host/adapter in the port cell": lambda h, a: (h, f"{h}/{a}"),
    "bare adapter, host in the device cell": lambda h, a: (h, a),
    "description in the device cell": lambda h, a: (f"{h} {a}", "IB Port 1"),
    "host/adapter in the device cell": lambda h, a: (f"{h}/{a}", "IB Port 1"),
}


def _rows(path: Path) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(path.read_text())))
    return rows[0], rows[1:]


def _col(header: list[str], name: str) -> int:
    return next(i for i, c in enumerate(header) if c.replace("#Fields:", "").lstrip("#") == name)


@dataclass
class Site:
    """The site both plans describe, as the test reads the plans (not through ibfab's parser)."""

    host_cables: list[tuple[str, str, int, str, int]] = field(
        default_factory=list
    )  # host, adapter, m, leaf, port
    uplinks: list[tuple[str, int, str, int, int, int]] = field(
        default_factory=list
    )  # leaf, port, dir, blade, asic, p
    uplink_lines: list[int] = field(default_factory=list)  # plan line of each uplink
    twice: set[int] = field(default_factory=set)  # switch plan lines whose port another line also cables


def _site() -> Site:
    site = Site()
    header, rows = _rows(HOST_PLAN)
    rack, dev, port, end, end_port = (
        _col(header, n) for n in ("rack #", "StartDevice", "StartPort", "EndDevice", "EndPort")
    )
    for r in rows:
        server, m = r[dev].split(" IB Port ")
        host = f"{r[rack].lower()}-{server.replace(' ', '').lower()}"
        site.host_cables.append((host, ADAPTERS[int(m) - 1], int(m), r[end], int(r[end_port].split()[1])))
    header, rows = _rows(SWITCH_PLAN)
    dev, port, end, end_port = (_col(header, n) for n in ("StartDevice", "StartPort", "EndDevice", "EndPort"))
    ports: Counter[tuple[str, str]] = Counter()
    for r in rows:
        ports[(r[dev], r[port])] += 1
        ports[(r[end], r[end_port])] += 1
    for lineno, r in enumerate(rows, 2):
        blade, rest = r[end_port].split("_Port ")
        asic, p = rest.split("/")
        site.uplinks.append(
            (r[dev], int(r[port].split()[1]), r[end], int(blade.split()[1]), int(asic), int(p))
        )
        site.uplink_lines.append(lineno)
        if ports[(r[dev], r[port])] > 1 or ports[(r[end], r[end_port])] > 1:
            site.twice.add(lineno)
    return site


def _host_plan_copy(form: str, tmp_path: Path, seed: int) -> Path:
    """The host plan with its host ends in ``form``, columns shuffled, CRLF line ends."""
    header, rows = _rows(HOST_PLAN)
    dev, port = _col(header, "StartDevice"), _col(header, "StartPort")
    site = _site()
    out_rows = [header]
    for r, (host, adapter, _, _, _) in zip(rows, site.host_cables, strict=True):
        r = list(r)
        r[dev], r[port] = FORMS[form](host, adapter)
        out_rows.append(r)
    width = max(len(r) for r in out_rows)
    order = list(range(width))
    random.Random(seed).shuffle(order)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerows(
        [[(r + [""] * width)[i] for i in order] for r in out_rows]
    )
    path = tmp_path / f"hosts-{seed}.csv"
    path.write_bytes(buf.getvalue().encode())
    return path


@dataclass
class Built:
    fabric: CraftedFabric
    hca: dict[tuple[str, str], int]
    switch: dict[str, int]
    board: dict[tuple[str, int, int], int]


def _build(site: Site) -> Built:
    """The fabric exactly as planned; a port the plan cables twice gets its first cable."""
    f = CraftedFabric()
    switch: dict[str, int] = {}
    board: dict[tuple[str, int, int], int] = {}
    hca: dict[tuple[str, str], int] = {}
    directors: dict[str, int] = {}

    def leaf(name: str) -> int:
        if name not in switch:
            switch[name] = f.switch(f"MF0;{name.lower()}:MQM8700/U1")
        return switch[name]

    for host, adapter, _, sw, port in site.host_cables:
        hca[(host, adapter)] = f.hca(f"{host} {adapter}")
        f.cable(hca[(host, adapter)], 1, leaf(sw), port)
    for sw, port, director, blade, asic, p in site.uplinks:
        key = (director, blade, asic)
        if key not in board:
            system = directors.setdefault(director, 0x0C42A103FF000000 + len(directors))
            board[key] = f.switch(f"MF0;{director.lower()}:MCS8500/L{blade:02d}/U{asic}", system=system)
        if (leaf(sw), port) in f.cables or (board[key], p) in f.cables:
            continue
        f.cable(leaf(sw), port, board[key], p)
    return Built(f, hca, switch, board)


def _plans(form: str, tmp_path: Path, seed: int = 1) -> tuple[Path, Path]:
    return _host_plan_copy(form, tmp_path, seed), SWITCH_PLAN


def _check(paths: tuple[Path, ...], fabric: Fabric) -> PlanCheck:
    return check_plan(merge_plans(read_cable_plan(p) for p in paths), fabric)


def _lines(check: PlanCheck, verdict: Verdict) -> list[list[tuple[str, int]]]:
    return sorted(
        sorted((Path(c.source).name, c.line) for c in f.expected)
        for f in check.findings
        if f.verdict is verdict
    )


def _link_ends(lk: Link, fabric: Fabric) -> set[str]:
    return {fabric.nodes[lk.a.guid].description, fabric.nodes[lk.b.guid].description}


@pytest.mark.parametrize("form", FORMS)
def test_every_host_end_spelling_reads_and_matches_its_fabric(form: str, tmp_path: Path) -> None:
    site = _site()
    fabric = _build(site).fabric.fabric()
    plans = _plans(form, tmp_path)
    check = _check(plans, fabric)
    assert check.findings == () and not check.differs
    assert check.absent_devices == () and check.absent_ports == ()
    # The switch plan cables some director ports twice: those rows, and only those, are unchecked.
    assert sorted(c.line for f in check.unchecked for c in f.expected) == sorted(site.twice)
    assert check.matched == len(site.host_cables) + len(site.uplinks) - len(site.twice)
    assert check.planned == check.matched + len(check.unchecked)


@pytest.mark.parametrize("form", FORMS)
def test_planted_differences_are_exactly_what_is_reported(form: str, tmp_path: Path) -> None:
    site = _site()
    built = _build(site)
    f = built.fabric
    host_plan, switch_plan = _plans(form, tmp_path, seed=7)
    host_line = {(h, a): i for i, (h, a, *_rest) in enumerate(site.host_cables, 2)}
    checked = [i for i, line in enumerate(site.uplink_lines) if line not in site.twice]

    # 1. miswired: a host's HCA moved from its planned leaf port to a free one (17).
    moved_host, moved_adapter, _, moved_leaf, _ = site.host_cables[20]
    moved = built.hca[(moved_host, moved_adapter)]
    f.uncable(moved, 1)
    f.cable(moved, 1, built.switch[moved_leaf], 17)
    # 2. miswired: two uplinks of one leaf swapped at the leaf (one item, two planned cables).
    (a_leaf, a_port, *_), (b_leaf, b_port, *_) = (
        site.uplinks[checked[4]],
        site.uplinks[checked[5]],
    )
    assert a_leaf == b_leaf
    sw = built.switch[a_leaf]
    far_a, far_b = f.uncable(sw, a_port), f.uncable(sw, b_port)
    f.cable(sw, a_port, *far_b)
    f.cable(sw, b_port, *far_a)
    # 3. missing: one HCA of a host is gone (the host and its other seven HCAs are there).
    gone_host, gone_adapter, *_ = site.host_cables[100]
    f.uncable(built.hca[(gone_host, gone_adapter)], 1)
    # 4. missing: an uplink unplugged (both switches still in the fabric).
    cut_leaf, cut_port, *_ = site.uplinks[checked[40]]
    f.uncable(built.switch[cut_leaf], cut_port)
    # 5. not in the plan: a login host on a free leaf port, and a leaf-to-leaf cable.
    login = f.hca("login01 mlx5_0")
    leaves = sorted(built.switch)
    f.cable(login, 1, built.switch[leaves[2]], 18)
    f.cable(built.switch[leaves[3]], 19, built.switch[leaves[5]], 19)

    fabric = f.fabric()
    check = _check((host_plan, switch_plan), fabric)
    hosts, switches = host_plan.name, switch_plan.name
    assert _lines(check, Verdict.MISWIRED) == sorted(
        [
            [(hosts, host_line[(moved_host, moved_adapter)])],
            sorted([(switches, site.uplink_lines[checked[4]]), (switches, site.uplink_lines[checked[5]])]),
        ]
    )
    assert _lines(check, Verdict.MISSING) == sorted(
        [[(hosts, host_line[(gone_host, gone_adapter)])], [(switches, site.uplink_lines[checked[40]])]]
    )
    unplanned = [f for f in check.findings if f.verdict is Verdict.NOT_IN_PLAN]
    assert sorted(sorted(_link_ends(x.actual[0], fabric)) for x in unplanned) == sorted(
        [
            sorted({"login01 mlx5_0", f"MF0;{leaves[2].lower()}:MQM8700/U1"}),
            sorted({f"MF0;{leaves[3].lower()}:MQM8700/U1", f"MF0;{leaves[5].lower()}:MQM8700/U1"}),
        ]
    )
    assert check.count(Verdict.BELOW_PLAN) == 0
    assert sorted(c.line for x in check.unchecked for c in x.expected) == sorted(site.twice)
    # A host one of whose ports is missing is no absent device: the port is named instead.
    assert check.absent_devices == ()
    (absent,) = check.absent_ports
    assert gone_adapter in absent.end and gone_host in absent.end.casefold()
    assert f"host {gone_host}" in absent.reason.casefold() and gone_adapter in absent.reason
    text = render_check(check, "crafted")
    assert "planned devices are not in the fabric" not in text
    assert "1 planned port not in the fabric, on devices that are:" in text
    summary = check_to_dict(check, fabric)["summary"]
    assert (summary["miswired"], summary["missing"], summary["not_in_plan"]) == (2, 2, 2)
    assert summary["absent_devices"] == [] and len(summary["absent_ports"]) == 1


def test_a_host_with_no_port_in_the_fabric_is_an_absent_device(tmp_path: Path) -> None:
    site = _site()
    built = _build(site)
    gone = site.host_cables[0][0]
    for (host, _), guid in built.hca.items():
        if host == gone:
            built.fabric.uncable(guid, 1)
    check = _check(_plans("description in the port cell", tmp_path), built.fabric.fabric())
    assert check.count(Verdict.MISSING) == 8 and check.count(Verdict.NOT_IN_PLAN) == 0
    assert [d.casefold() for d in check.absent_devices] == [gone] and check.absent_ports == ()


def test_ufm_host_row_with_spaced_link_type() -> None:
    # UFM's own host plans: device = host, port = the HCA's NodeDescription, LinkType " Data".
    text = (
        "#StartDevice,StartPort,EndDevice,EndPort,LinkType\n"
        "node0042,node0042 ibp11s0f0,leaf-01,Port 1, Data\n"
        "NODE0042,node0042 ibp21s0f0,leaf-01,Port 2, Data\n"
    )
    first, second = parse_cable_plan(text, "ufm.ndt").cables
    assert str(first) == "node0042/ibp11s0f0 <-> leaf-01/Port 1"
    assert first.start.port.form is PortForm.ADAPTER and first.start.port.adapter == "ibp11s0f0"
    assert second.start.key == parse_end("node0042", "ibp21s0f0").key


@pytest.mark.parametrize(
    ("device", "port", "adapter", "number"),
    [
        ("node0042", "node0042 ibp11s0f0", "ibp11s0f0", None),
        ("node0042", "node0042/mlx5_0", "mlx5_0", None),
        ("node0042", "node0042 mlx5_1/2", "mlx5_1", 2),
        ("node0042", "node0042   hca_weird", "hca_weird", None),  # the host says what follows is an adapter
        ("node0042", "mlx5_3", "mlx5_3", None),
    ],
)
def test_host_end_spellings(device: str, port: str, adapter: str, number: int | None) -> None:
    end = parse_end(device, port)
    assert (end.device, end.port.form, end.port.adapter, end.port.number) == (
        device,
        PortForm.ADAPTER,
        adapter,
        number,
    )


def test_a_description_of_another_host_is_refused_with_its_column() -> None:
    text = "#StartDevice,StartPort,EndDevice,EndPort\nnode0042,node0043 ibp11s0f0,leaf-01,Port 1\n"
    with pytest.raises(PlanParseError) as err:
        parse_cable_plan(text, "p.csv")
    assert (err.value.lineno, err.value.column) == (2, 2)
    assert "NodeDescription of host 'node0043'" in str(err.value) and "'node0042'" in str(err.value)


def test_a_host_the_plan_never_names_in_a_planned_port_is_not_in_the_plan(tmp_path: Path) -> None:
    # As on UFM's own test fabric: a planned HCA moved to a free port, and a server the plan does
    # not name (UFM's own) plugged into the port it left. The move is the miswiring; the server's
    # cable is not in the plan (it is no planned cable put in the wrong place).
    site = _site()
    built = _build(site)
    f = built.fabric
    host, adapter, _, sw, port = site.host_cables[9]
    hca = built.hca[(host, adapter)]
    f.uncable(hca, 1)
    f.cable(hca, 1, built.switch[sw], 17)
    ufm = f.hca("ufm-01 HCA-1")
    f.cable(ufm, 1, built.switch[sw], port)
    check = _check(_plans("description in the port cell", tmp_path), f.fabric())
    (miswired,) = [x for x in check.findings if x.verdict is Verdict.MISWIRED]
    assert [c.line for c in miswired.expected] == [11] and len(miswired.actual) == 1
    assert f"{sw}/Port {port}: cabled to ufm-01/HCA-1" in "\n".join(miswired.evidence)
    (unplanned,) = [x for x in check.findings if x.verdict is Verdict.NOT_IN_PLAN]
    assert "ufm-01/HCA-1" in unplanned.message
    assert f"is planned for {host}/{adapter}" in "\n".join(unplanned.evidence)
    assert len(check.findings) == 2


# UFM's own positive-flow test (Mellanox/ufm_sdk_3.0, plugins/UFM_NDT_Plugin/tests): its host and
# switch plans against the fabric it simulates, and the report UFM expects (expected_report.json):
# 2 miswired, 2 missing in UFM, 107 missing in the NDT. Runs when those captures are in realdata.
UFM_PLANS = (
    REALDATA / "ndt" / "ufm-ndt-positive_flow_ndts-switch_to_host_topo1.ndt",
    REALDATA / "ndt" / "ufm-ndt-positive_flow_ndts-switch_to_switch_topo2.ndt",
)
UFM_FABRIC = REALDATA / "ibnetdiscover" / "ufm-ndt-positive_flow_ibnetdiscover-ibnetdiscover_director.txt"


@pytest.mark.skipif(
    not all(p.exists() for p in (*UFM_PLANS, UFM_FABRIC)),
    reason="UFM's positive-flow captures not in realdata",
)
def test_ufm_positive_flow_gives_ufms_answer() -> None:
    from topology.ibnetdiscover import read_ibnetdiscover

    check = _check(UFM_PLANS, read_ibnetdiscover(UFM_FABRIC))
    assert not check.unchecked
    assert (
        check.count(Verdict.MISWIRED),
        check.count(Verdict.MISSING),
        check.count(Verdict.NOT_IN_PLAN),
    ) == (
        2,
        2,
        107,
    )
    miswired = sorted(str(c) for x in check.findings if x.verdict is Verdict.MISWIRED for c in x.expected)
    assert miswired == [
        "SAT111090201019/ibp203s0f1 <-> SAT11-0101-0902-01IB0/Port 15",
        "SAT111090201019/ibp213s0f0 <-> SAT11-0101-0902-01IB0/Port 17",
    ]
    missing = sorted(str(c) for x in check.findings if x.verdict is Verdict.MISSING for c in x.expected)
    assert missing == [
        "SAT111090201020/ibp213s0f0 <-> SAT11-0102-0903-05IB0/Port 9",
        "SAT111090201021/ibp213s0f0 <-> SAT11-0102-0903-05IB0/Port 10",
    ]
    assert check.absent_devices == ("SAT111090201020", "SAT11-0102-0903-05IB0", "SAT111090201021")
    assert [a.end for a in check.absent_ports] == ["SAT111090201019/ibp203s0f1"]
