"""Pods: leaves that reach the same upper switches; the fabric's groups are its pods where leaves
do not share hosts, its scalable units where they do; and director fabrics stay quiet.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.conftest import realdata_files
from topology.chassis import find_chassis
from topology.classify import Classification, GroupKind, classify
from topology.design import Design, DesignHca
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover, read_ibnetdiscover
from topology.model import Fabric, Guid, Lid, Link, Node, NodeKind, PortRef, UnconnectedPort
from topology.pods import cluster_pods, pods_are_groups
from topology.wiring import find_anomalies

CAPTURES = realdata_files("ibnetdiscover")


class Expect(NamedTuple):
    kind: GroupKind
    pods: list[int]  # leaves per pod, in pod order
    why: str


EXPECTED = {
    "garyli-ibdiagnet2-ndr-272nodes-label-ports.txt": Expect(
        GroupKind.UNIT, [8], "a rail-optimized unit of 8 leaves, all under its one spine"
    ),
    "junousi-ibm-doc-sdr-2009-no-sysimgguid.txt": Expect(GroupKind.UNIT, [], "one switch: no upper switch"),
    "junousi-manpage-2007-voltaire-non-chassis-grouping.txt": Expect(
        GroupKind.UNIT, [], "two switches cabled to each other, both with hosts: no tier above"
    ),
    "junousi-nvidia-kb-edr-fdr-mixed-loopbacks.txt": Expect(GroupKind.UNIT, [], "two leaves, no spine"),
    "junousi-oracle-doc-sun-dcs36-qdr.txt": Expect(GroupKind.UNIT, [], "one switch"),
    "loginoff-qdr-fdr10-152nodes.txt": Expect(
        GroupKind.POD, [6], "six leaves, each with its own hosts, all under spines ib7 and ib8"
    ),
    "superbench-faked-hdr-mcs8500-full-f-flags.txt": Expect(
        GroupKind.POD, [3, 2], "leaves 01-03 on line board L01, 11-12 on L02 of the MCS8500"
    ),
    "topograph-dgx-ndr-superpod-622nodes.txt": Expect(
        GroupKind.UNIT, [31], "eight SuperPOD units (rail leaves share their DGX), all under the same spines"
    ),
    "topograph-gb200-single-ca-isolated.txt": Expect(GroupKind.UNIT, [], "one HCA, no switch"),
    "treydock-ibnetdiscover-p-ports-edr-osc.txt": Expect(
        GroupKind.POD, [1], "a -p excerpt: one leaf with its spine, one leaf cabled to no spine here"
    ),
    "treydock-ibnetdiscover-p-ports-hdr-qdr-odd-spaces.txt": Expect(
        GroupKind.UNIT, [], "a -p excerpt whose one leaf has no spine cable in it"
    ),
    "ufm-sdk-selene-storage-hdr-edr-1407nodes.txt": Expect(
        GroupKind.UNIT,
        [16, 16, 16, 16],
        "leaf pairs share each DGX; SLG01..04 are four pods under SSPINE1..4",
    ),
    "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt": Expect(
        GroupKind.UNIT, [], "two leaves cabled to each other"
    ),
}


def test_every_capture_has_an_expectation() -> None:
    assert {p.name for p in CAPTURES} == set(EXPECTED)


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_real_captures(path: Path) -> None:
    cls = classify(read_ibnetdiscover(path))
    want = EXPECTED[path.name]
    assert cls.group_kind is want.kind and [len(p.leaves) for p in cls.pods] == want.pods, want.why
    if cls.group_kind is GroupKind.POD:
        for p in cls.pods:  # the pods are the groups, in the same order
            assert cls.groups[p.index].leaves == p.leaves and cls.groups[p.index].pod == p.index
    for g in cls.groups:  # every group names the pod its leaves are in
        pods = {p.index for p in cls.pods if set(g.leaves) & set(p.leaves)}
        assert (g.pod in pods) if pods else g.pod is None


def test_selene_units_lie_in_their_pods() -> None:
    path = next(p for p in CAPTURES if p.name.startswith("ufm-sdk-selene"))
    cls = classify(read_ibnetdiscover(path))
    names = {g: c.name for g, c in cls.nodes.items()}
    for i, p in enumerate(cls.pods, 1):
        # Pods come from the cabling: SLG03's second leaf, named "SLG3-02" on site, is in its pod.
        assert {re.sub(r"^SLG0?(\d)-\d+$", r"\1", names[x]) for x in p.leaves} == {str(i)}
        assert {names[u][:7] for u in p.uppers} == {f"SSPINE{i}"}
        assert len(p.uppers) == 16
    assert cls.groups[0].pod == 0 and cls.groups[-1].pod == 3


# -- the clustering itself ----------------------------------------------------------------------
def _pods(uppers: dict[str, set[str]]) -> list[list[str]]:
    return [sorted(p) for p in cluster_pods({Guid(k): frozenset(map(Guid, v)) for k, v in uppers.items()})]


def test_leaves_on_the_same_uppers_are_one_pod() -> None:
    full = {"a1", "a2", "a3", "a4"}
    got = _pods(
        {"l1": full, "l2": full, "l3": full - {"a4"}, "l4": {"b1", "b2"}, "l5": {"b1", "b2"}, "l6": set()}
    )
    # l3 lost its cables to a4 and stays in its pod; l6 reaches no upper switch: in no pod.
    assert got == [["l1", "l2", "l3"], ["l4", "l5"]]


def test_a_miswired_cable_does_not_move_a_leaf() -> None:
    pod_a, pod_b = {"a1", "a2", "a3"}, {"b1", "b2", "b3"}
    got = _pods({"l1": pod_a, "l2": pod_a, "l3": (pod_a - {"a3"}) | {"b3"}, "l4": pod_b, "l5": pod_b})
    assert got == [["l1", "l2", "l3"], ["l4", "l5"]]


def test_a_leaf_split_evenly_between_two_pods_is_its_own() -> None:
    # Half of its upper switches in each pod: no evidence for either, so neither is claimed.
    got = _pods(
        {"l1": {"a1", "a2"}, "l2": {"a1", "a2"}, "l3": {"b1", "b2"}, "l4": {"b1", "b2"}, "l5": {"a1", "b1"}}
    )
    assert got == [["l1", "l2"], ["l3", "l4"], ["l5"]]


def test_pods_are_groups_only_where_leaves_keep_their_hosts() -> None:
    pods = [object()]  # any pod
    assert pods_are_groups([1, 1, 1, 2], pods)  # type: ignore[arg-type]
    assert not pods_are_groups([8, 8, 1], pods)  # type: ignore[arg-type]
    assert not pods_are_groups([1, 1], [])  # no pods: leaves stay their own groups


# -- generated fabrics ---------------------------------------------------------------------------
DIRECTORS = "leafspine:leaves=8,hosts=4,directors=2,pods=4"


def _fabric(design: Design) -> tuple[Fabric, Classification]:
    fabric = parse_ibnetdiscover(to_ibnetdiscover(design).splitlines(), design.spec.text())
    return fabric, classify(fabric)


def _names(cls: Classification, guids: tuple[Guid, ...]) -> list[str]:
    return [cls.nodes[g].name for g in guids]


def test_director_pods_are_the_groups() -> None:
    _, cls = _fabric(generate(DIRECTORS))
    assert cls.group_kind is GroupKind.POD and not cls.rail_optimized
    assert [_names(cls, p.leaves) for p in cls.pods] == [
        [f"leaf-0{2 * i + 1}", f"leaf-0{2 * i + 2}"] for i in range(4)
    ]
    assert [_names(cls, p.uppers) for p in cls.pods] == [
        [f"director-01/L0{i}", f"director-02/L0{i}"] for i in range(1, 5)
    ]
    assert [g.leaves for g in cls.groups] == [p.leaves for p in cls.pods]
    assert [len(p.hosts) for p in cls.pods] == [8, 8, 8, 8]


def _add_host(design: Design, host: str, switches: list[str]) -> Design:
    """``host`` with one HCA (mlx5_0, mlx5_1...) on a free port of each of ``switches``."""
    used: dict[Guid, int] = {}
    for lk in design.built:
        for end in (lk.a, lk.b):
            used[end.guid] = max(used.get(end.guid, 0), end.port)
    hcas, built = list(design.hcas), list(design.built)
    for i, name in enumerate(switches):
        sw = design.switch(name)
        guid = 0x1070FD0300F00000 + 2 * len(hcas)
        hca = DesignHca(Guid(f"0x{guid:016x}"), Guid(f"0x{guid + 1:016x}"), host, i, 0, design.hcas[0].devid)
        hcas.append(hca)
        used[sw.guid] += 1
        built.append(Link(PortRef(sw.guid, used[sw.guid]), PortRef(hca.guid, 1), 4, design.speed))
    return dataclasses.replace(design, hcas=tuple(hcas), built=tuple(built), cables=tuple(built))


def test_a_few_hosts_across_leaves_do_not_break_the_pods() -> None:
    # The fabric: every leaf's hosts its own, but a login node and a UFM server with one
    # HCA on each of two leaves (of two pods). Units would be one group per leaf and two pairs.
    design = _add_host(generate(DIRECTORS), "login01", ["leaf-01", "leaf-03"])
    design = _add_host(design, "ufm01", ["leaf-05", "leaf-06"])
    fabric, cls = _fabric(design)
    assert cls.group_kind is GroupKind.POD and len(cls.groups) == len(cls.pods) == 4
    assert find_anomalies(fabric, cls) == []


@pytest.mark.parametrize(
    ("spec", "units", "pods"),
    [
        # Both units' rail leaves reach every spine: one pod; the units stay the groups.
        ("rail-small", 2, [16]),
        ("superpod-4su", 4, [32]),
        # Three tiers: each unit has its own spines, so each unit is a pod as well.
        ("rail-3tier", 2, [4, 4]),
    ],
)
def test_rail_fabrics_keep_their_units(spec: str, units: int, pods: list[int]) -> None:
    _, cls = _fabric(generate(spec))
    assert cls.group_kind is GroupKind.UNIT and len(cls.groups) == units
    assert [len(p.leaves) for p in cls.pods] == pods
    assert [g.pod for g in cls.groups] == ([0] * units if len(pods) == 1 else list(range(units)))


CLEAN_DIRECTORS = [
    DIRECTORS,
    "leafspine:leaves=12,hosts=8,directors=4,pods=3,fabric_boards=3",
    "leafspine:leaves=6,hosts=4,directors=1,pods=2,fabric_boards=1,cables=2",
    "leafspine:leaves=8,hosts=4,directors=2,pods=4,side=2",
    "leafspine:leaves=7,hosts=6,directors=3,pods=3,radix=36,speed=EDR",
    # Half-populated directors: line boards L03-L06 wired inside, nothing plugged in outside.
    "leafspine:leaves=8,hosts=4,directors=2,pods=2,line_boards=6,cables=2",
]


@pytest.mark.parametrize("spec", CLEAN_DIRECTORS)
def test_clean_director_fabrics_are_quiet(spec: str) -> None:
    fabric, cls = _fabric(generate(spec))
    assert find_anomalies(fabric, cls) == []
    found = find_chassis(fabric, cls)
    assert len(found) == generate(spec).spec.directors
    # Line boards are spines, fabric boards the cores above them; no board is a leaf.
    cabled = {g for g in cls.boards if any(cls.nodes[f.guid].tier == 1 for _, f, _ in fabric.neighbours(g))}
    assert {cls.nodes[g].tier_name for box in found for g in box.line_boards if g in cabled} == {"spine"}
    # A line board with nothing plugged in lies on no path between leaves: hostless, and quiet.
    assert {cls.nodes[g].tier_name for box in found for g in box.line_boards if g not in cabled} <= {
        "hostless"
    }
    assert len([g for box in found for g in box.line_boards]) == generate(spec).spec.directors * (
        generate(spec).spec.line_boards or max(1, generate(spec).spec.pods)
    )
    assert {cls.nodes[g].tier_name for box in found for g in box.fabric_boards} == {"core"}
    assert set(cls.boards) == {g for box in found for g in box.boards}


@pytest.mark.parametrize(
    "fault",
    [
        "missing-link:leaf-05",  # a leaf's cable to a line board
        "missing-link:director-02/L02",  # a line board's link to a fabric board (inside the chassis)
        "missing-link:director-01/S01",  # the same from the fabric board's side
        "degraded-width:leaf-05:9:1",
    ],
)
def test_planted_faults_on_directors_are_reported_exactly(fault: str) -> None:
    design = generate("leafspine:leaves=12,hosts=8,directors=4,pods=3,fabric_boards=3", [fault])
    fabric, cls = _fabric(design)
    (planted,) = design.planted
    found = find_anomalies(fabric, cls)
    assert [a.kind for a in found] == [planted.kind]
    assert set(found[0].nodes) & set(planted.guids)
    assert len(cls.pods) == 3  # one missing cable splits no pod


def test_storage_on_a_line_board_keeps_the_leaves_quiet() -> None:
    # Twenty storage hosts plugged into line board L01 of director-01: the chassis still serves
    # the leaves (their cables to it are uplinks), so that board is a spine with hosts.
    design = generate("leafspine:leaves=8,hosts=4,directors=2,pods=2,cables=2")
    for i in range(20):
        design = _add_host(design, f"store{i:02d}", ["director-01/L01"])
    fabric, cls = _fabric(design)
    board = next(g for g, c in cls.nodes.items() if c.name == "director-01/L01")
    assert cls.nodes[board].tier_name == "spine"
    assert {cls.uplinks[g] for g in cls.leaves()} == {4}
    assert find_anomalies(fabric, cls) == []


def _node(n: int, kind: NodeKind, desc: str, image: int | None = None) -> Node:
    guid = Guid(f"0x{n:016x}")
    ports = 36 if kind is NodeKind.SWITCH else 1
    return Node(guid, kind, desc, ports, lid=Lid(n), sysimgguid=Guid(f"0x{image or n:016x}"))


def _host_boards(down: int | None = None) -> tuple[Fabric, list[Node], list[Node]]:
    """Three standalone leaves and a director whose four line boards carry hosts like leaves
    (8 each), all under two standalone spines (4 cables from each to each); each line board has
    3 cables to each of the director's two fabric boards. ``down``: leaf-01 lists that port
    without a peer (an ``ibnetdiscover -p`` report). (fabric, leaves, line boards)"""
    nodes: list[Node] = []
    links: list[Link] = []
    guid = iter(range(0x100, 0x10000))
    ports: dict[Guid, int] = {}

    def cable(a: Node, b: Node) -> None:
        pa, pb = ports.get(a.guid, 0) + 1, ports.get(b.guid, 0) + 1
        ports[a.guid], ports[b.guid] = pa, pb
        links.append(Link(PortRef(a.guid, pa), PortRef(b.guid, pb), 4, "HDR"))

    spines = [_node(next(guid), NodeKind.SWITCH, f"MF0;spine-0{i}:MQM8700/U1") for i in (1, 2)]
    leaves = [_node(next(guid), NodeKind.SWITCH, f"MF0;leaf-0{i}:MQM8700/U1") for i in (1, 2, 3)]
    lines = [_node(next(guid), NodeKind.SWITCH, f"MF0;dir-1:MCS8500/L0{i}/U1", 0xAA) for i in (1, 2, 3, 4)]
    fabrics = [_node(next(guid), NodeKind.SWITCH, f"MF0;dir-1:MCS8500/S0{i}/U1", 0xAA) for i in (1, 2)]
    nodes += spines + leaves + lines + fabrics
    for s, sw in enumerate(leaves + lines):
        for h in range(8):
            hca = _node(next(guid), NodeKind.HCA, f"node{8 * s + h:03d} mlx5_0")
            nodes.append(hca)
            cable(sw, hca)
        for sp in spines:
            for _ in range(4):
                cable(sw, sp)
    for line in lines:
        for fb in fabrics:
            for _ in range(3):
                cable(line, fb)
    unconnected = [UnconnectedPort(PortRef(leaves[0].guid, down), 4, "HDR")] if down else []
    return Fabric.build(nodes, links, unconnected), leaves, lines


def test_a_director_of_host_boards_is_judged_against_boards() -> None:
    # A line board's uplinks include its chassis's inside wiring: 14 against the leaves' 8.
    # Compared with each other, the three leaves would be "short of 6 uplinks"; they are judged
    # against leaves, the boards against boards, and nothing is reported.
    fabric, leaves, lines = _host_boards()
    cls = classify(fabric)
    assert {cls.nodes[g.guid].tier for g in leaves + lines} == {1}
    assert {cls.uplinks[g.guid] for g in leaves} == {8} and {cls.uplinks[g.guid] for g in lines} == {14}
    assert find_anomalies(fabric, cls) == []


def test_a_boards_port_numbers_say_nothing_of_a_leafs() -> None:
    # Port 17 of leaf-01 is listed without a peer. The line boards use port 17 (their inside
    # wiring), the other leaves do not: a standalone leaf's unused port is not down.
    fabric, _, _ = _host_boards(down=17)
    assert find_anomalies(fabric, classify(fabric)) == []
    # Port 3 carries a host on every other leaf: that one is down, and said so.
    fabric, leaves, _ = _host_boards(down=3)
    gone = next(lk for lk in fabric.links if PortRef(leaves[0].guid, 3) in (lk.a, lk.b))
    host = gone.other(leaves[0].guid).guid  # its host is not in the report either
    fabric = Fabric.build(
        [n for n in fabric.nodes.values() if n.guid != host],
        [lk for lk in fabric.links if lk != gone],
        fabric.unconnected,
    )
    (down,) = find_anomalies(fabric, classify(fabric))
    assert down.kind == "down_port" and down.ports == (PortRef(leaves[0].guid, 3),)
