"""Director chassis: boards sharing a system image GUID, line and fabric boards told by cabling.

Every real capture is a case: the MCS8500 excerpt is the one with a director (three boards of
``rmd70-0101-0908-01ib1-A`` sharing sysimgguid 0xb8599f0300c2f06a: line boards L01 and L02
carry the leaves, spine board S01 only the line boards and its SHARP aggregation node); every
other capture's switches are switches of their own, so none of them is a chassis.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.conftest import REALDATA, realdata_files
from topology.boards import chassis_boards
from topology.chassis import BoardKind, Chassis, find_chassis
from topology.classify import classify
from topology.design import Design, DesignSwitch
from topology.generate import generate, to_ibnetdiscover
from topology.ibdiag_csv import parse_db_csv_fabric, read_db_csv
from topology.ibnetdiscover import parse_ibnetdiscover, read_ibnetdiscover
from topology.model import Fabric, Guid, Lid, Link, Node, NodeKind, PortRef

CAPTURES = realdata_files("ibnetdiscover")
DB_CSV = REALDATA / "ibdiagnet" / "garyli-ndr-272nodes-ibdiagnet2.db_csv"
# (name, line boards, fabric boards) per chassis; a capture not listed has none.
EXPECTED = {"superbench-faked-hdr-mcs8500-full-f-flags.txt": [("rmd70-0101-0908-01ib1-A", 2, 1)]}


def _found(fabric: Fabric) -> tuple[Chassis, ...]:
    return find_chassis(fabric, classify(fabric))


def _shape(found: tuple[Chassis, ...]) -> list[tuple[str, int, int]]:
    return [(c.name, len(c.line_boards), len(c.fabric_boards)) for c in found]


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_real_captures(path: Path) -> None:
    fabric = read_ibnetdiscover(path)
    found = _found(fabric)
    assert _shape(found) == EXPECTED.get(path.name, [])
    for box in found:
        assert not box.unsure_boards
        for g in box.boards:
            node = fabric.nodes[g]
            # A board reports the chassis's image, never its own GUID, and shares it.
            assert node.kind is NodeKind.SWITCH and node.sysimgguid == box.guid != g
    # A switch whose image is its own, missing, or shared with no other switch is no board.
    boards = {g for box in found for g in box.boards}
    for g, node in fabric.nodes.items():
        if node.kind is NodeKind.SWITCH and (node.sysimgguid in (None, g)):
            assert g not in boards


def test_mcs8500_boards_by_cabling() -> None:
    path = REALDATA / "ibnetdiscover" / "superbench-faked-hdr-mcs8500-full-f-flags.txt"
    fabric = read_ibnetdiscover(path)
    (box,) = _found(fabric)
    assert box.guid == "0xb8599f0300c2f06a"
    names = {fabric.nodes[g].description.split(":")[-1]: box.kind_of(g) for g in box.boards}
    # S01's SHARP aggregation node is part of the switch, not a cable out of the chassis.
    assert names == {
        "MCS8500/L01/U1": BoardKind.LINE,
        "MCS8500/L02/U1": BoardKind.LINE,
        "MCS8500/S01/U1": BoardKind.FABRIC,
    }


def test_ibdiagnet_db_csv_has_no_chassis() -> None:
    fabric = parse_db_csv_fabric(read_db_csv(DB_CSV), str(DB_CSV))
    assert all(n.sysimgguid is not None for n in fabric.switches())  # NODES has SystemImageGUID
    assert _found(fabric) == ()


def _generated(spec: str, faults: tuple[str, ...] = ()) -> Fabric:
    return parse_ibnetdiscover(to_ibnetdiscover(generate(spec, list(faults))).splitlines(), spec)


def test_generated_directors() -> None:
    fabric = _generated("leafspine:leaves=12,hosts=8,directors=3,pods=3,fabric_boards=4")
    found = _found(fabric)
    assert _shape(found) == [(f"director-0{d}", 3, 4) for d in (1, 2, 3)]
    for box in found:
        assert [fabric.nodes[g].description.split("/")[1] for g in box.line_boards] == ["L01", "L02", "L03"]
        assert [fabric.nodes[g].description.split("/")[1] for g in box.fabric_boards] == [
            "S01",
            "S02",
            "S03",
            "S04",
        ]


@pytest.mark.parametrize("spec", ["fattree-small", "rail-small", "rail-3tier:side=2"])
def test_fabrics_without_directors_have_no_chassis(spec: str) -> None:
    fabric = _generated(spec)
    assert _found(fabric) == () and chassis_boards(fabric) == {}
    assert classify(fabric).boards == {}


# -- hand-built fabrics: one chassis, its boards described by the test --------------------------
IMAGE = Guid("0x00000000000000aa")


def _guid(n: int) -> Guid:
    return Guid(f"0x{n:016x}")


def _switch(n: int, desc: str, image: Guid | None = IMAGE) -> Node:
    return Node(_guid(n), NodeKind.SWITCH, desc, 36, lid=Lid(n), sysimgguid=image)


def _hca(n: int, desc: str, image: Guid | None = None) -> Node:
    return Node(_guid(n), NodeKind.HCA, desc, 1, lid=Lid(n), sysimgguid=image or _guid(n))


def _cable(a: int, pa: int, b: int, pb: int) -> Link:
    return Link(PortRef(_guid(a), pa), PortRef(_guid(b), pb), 4, "HDR")


def _director(
    line_desc: str = "MF0;dir-1:MCS8500/L{n:02d}/U1", fabric_desc: str = "MF0;dir-1:MCS8500/S{n:02d}/U1"
) -> tuple[list[Node], list[Link]]:
    """Line boards 1-3 (3 uncabled outside), fabric boards 11-12, a leaf 20 with a host 30 on
    each of line boards 1 and 2."""
    nodes = [_switch(n, line_desc.format(n=n)) for n in (1, 2, 3)]
    nodes += [_switch(n, fabric_desc.format(n=n - 10)) for n in (11, 12)]
    links = [_cable(line, 20 + f, fab, line) for line in (1, 2, 3) for f, fab in enumerate((11, 12))]
    nodes += [_switch(20, "MF0;leaf-01:MQM8700/U1", _guid(20)), _hca(30, "node01 mlx5_0")]
    links += [_cable(20, 21, 1, 1), _cable(20, 22, 2, 1), _cable(30, 1, 20, 1)]
    return nodes, links


def test_an_uncabled_line_board_is_on_the_line_side() -> None:
    # Line board 3 has no outside cable yet; by the inside wiring it is on the side of the line
    # boards, whatever the names say (here none: the boards' descriptions are the model string).
    nodes, links = _director("Quantum Mellanox Technologies", "Quantum Mellanox Technologies")
    (box,) = _found(Fabric.build(nodes, links))
    assert box.line_boards == (_guid(1), _guid(2), _guid(3))
    assert box.fabric_boards == (_guid(11), _guid(12))
    assert box.name == ""  # a model string is no name


def test_names_decide_only_where_cabling_cannot() -> None:
    # A cable between two line boards: the inside wiring is no longer line-to-fabric, so boards
    # with an outside cable are line boards and the names decide the rest; a board without a
    # board in its name is unsure, never guessed.
    nodes, links = _director()
    nodes = [
        n if n.guid != _guid(12) else dataclasses.replace(n, description="Quantum Mellanox Technologies")
        for n in nodes
    ]
    (box,) = _found(Fabric.build(nodes, [*links, _cable(1, 30, 2, 30)]))
    assert box.name == ""  # board 12's description names no system: the boards share none
    assert box.line_boards == (_guid(1), _guid(2), _guid(3))  # 3 by its name L03
    assert box.fabric_boards == (_guid(11),)
    assert box.unsure_boards == (_guid(12),)


def test_shared_image_without_a_cable_between_is_no_chassis() -> None:
    # Two standalone switches reporting the same system image GUID (a firmware default) are not
    # boards of one box unless they are cabled to each other.
    nodes = [_switch(1, "MF0;leaf-01:MQM8700/U1"), _switch(2, "MF0;leaf-02:MQM8700/U1")]
    nodes += [_switch(3, "MF0;spine-01:MQM8700/U1", _guid(3)), _hca(30, "a mlx5_0"), _hca(31, "b mlx5_0")]
    links = [_cable(1, 1, 3, 1), _cable(2, 1, 3, 2), _cable(30, 1, 1, 2), _cable(31, 1, 2, 2)]
    fabric = Fabric.build(nodes, links)
    assert chassis_boards(fabric) == {} and _found(fabric) == ()
    zero = [
        dataclasses.replace(n, sysimgguid=_guid(0)) if n.guid in (_guid(1), _guid(2)) else n for n in nodes
    ]
    assert chassis_boards(Fabric.build(zero, [*links, _cable(1, 3, 2, 3)])) == {}  # zero is no image


def test_hcas_of_one_adapter_card_are_no_chassis() -> None:
    # Both ports of one card share the card's system image GUID (topology.unnamed uses that).
    nodes = [_switch(1, "MF0;leaf-01:MQM8700/U1", _guid(1))]
    nodes += [_hca(30, "node01 mlx5_0", IMAGE), _hca(31, "node01 mlx5_1", IMAGE)]
    links = [_cable(30, 1, 1, 1), _cable(31, 1, 1, 2)]
    assert _found(Fabric.build(nodes, links)) == ()


def test_design_boards_share_the_chassis_image() -> None:
    design: Design = generate("leafspine:leaves=4,hosts=4,directors=2,pods=2")
    boards = [s for s in design.switches if "/" in s.name]
    assert {s.image for s in boards} == {Guid("0x0c42a10300a60000"), Guid("0x0c42a10300a60001")}
    leaf: DesignSwitch = design.switch("leaf-01")
    assert leaf.image == leaf.guid and leaf.sysimgguid is None
