"""Forwarding tables and paths: hand-built fabrics, generated fat trees, and real dumps from a lab."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from fabric.app.session import Session
from tests.oracles.routes import all_paths
from topology.classify import classify
from topology.errors import ParseError
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Fabric, Guid, Lid, Link, Node, NodeKind, PortRef, normalise_guid
from topology.route_pairs import pair_route, pair_routes
from topology.routes import RouteError, UpDown, parse_lft_dump, path_diversity

L1, L2, S1, S2 = (Guid(f"0x{0x100 + i:016x}") for i in range(4))
H1, H2, H3 = (Guid(f"0x{0x200 + i:016x}") for i in range(3))


def small_fabric(parallel: int = 1) -> Fabric:
    """leaf-1 (H1, H3) and leaf-2 (H2), each cabled to spine-1 and spine-2 ``parallel`` times."""
    nodes = [
        Node(L1, NodeKind.SWITCH, "MF0;leaf-1:MQM9700/U1", 16, Lid(1)),
        Node(L2, NodeKind.SWITCH, "MF0;leaf-2:MQM9700/U1", 16, Lid(2)),
        Node(S1, NodeKind.SWITCH, "MF0;spine-1:MQM9700/U1", 16, Lid(3)),
        Node(S2, NodeKind.SWITCH, "MF0;spine-2:MQM9700/U1", 16, Lid(4)),
        Node(H1, NodeKind.HCA, "n1 mlx5_0", 1, Lid(10)),
        Node(H2, NodeKind.HCA, "n2 mlx5_0", 1, Lid(11)),
        Node(H3, NodeKind.HCA, "n3 mlx5_0", 1, Lid(12)),
    ]
    links = [
        Link(PortRef(L1, 1), PortRef(H1, 1), 4, "NDR"),
        Link(PortRef(L1, 2), PortRef(H3, 1), 4, "NDR"),
        Link(PortRef(L2, 1), PortRef(H2, 1), 4, "NDR"),
    ]
    for leaf in (L1, L2):
        for j, spine in enumerate((S1, S2)):
            for c in range(parallel):
                port_leaf = 10 + j * parallel + c
                port_spine = (1 if leaf == L1 else 5) + c
                links.append(Link(PortRef(leaf, port_leaf), PortRef(spine, port_spine), 4, "NDR"))
    return Fabric.build(nodes, links, source="hand-built")


# leaf-1 sends LID 11 up port 11 (spine-2); spine-2 down port 5 to leaf-2; leaf-2 port 1 to H2.
TABLES = {
    L1: {10: 1, 11: 11, 12: 2},
    L2: {10: 10, 11: 1, 12: 10},
    S1: {10: 1, 11: 5, 12: 1},
    S2: {10: 1, 11: 5, 12: 1},
}


def names(links: Sequence[Link]) -> list[tuple[str, int, str, int]]:
    return [(lk.a.guid[-3:], lk.a.port, lk.b.guid[-3:], lk.b.port) for lk in links]


def test_path_follows_the_destination_lid_hop_by_hop() -> None:
    f = small_fabric()
    p = pair_route(f, TABLES, H1, H2)
    assert names(p) == [
        ("100", 1, "200", 1),
        ("100", 11, "103", 1),
        ("101", 11, "103", 5),
        ("101", 1, "201", 1),
    ]
    back = pair_route(f, TABLES, H2, H1)
    assert names(back) == [
        ("101", 1, "201", 1),
        ("101", 10, "102", 5),
        ("100", 10, "102", 1),
        ("100", 1, "200", 1),
    ]
    # Same leaf: HCA cable, leaf, HCA cable.
    assert len(pair_route(f, TABLES, H1, H3)) == 2


def test_loop_is_an_error_naming_switch_and_lid() -> None:
    f = small_fabric()
    looping = dict(TABLES)
    looping[S2] = {11: 1}  # spine-2 sends LID 11 back down to leaf-1, which sends it up again
    with pytest.raises(RouteError, match=r"loop for LID 11 at switch MF0;leaf-1"):
        pair_route(f, looping, H1, H2)


def test_black_holes_missing_entry_and_uncabled_port() -> None:
    f = small_fabric()
    no_entry = {**TABLES, S2: {10: 1}}
    with pytest.raises(RouteError, match=r"spine-2.*no route to LID 11"):
        pair_route(f, no_entry, H1, H2)
    dead_port = {**TABLES, L1: {11: 9}}
    with pytest.raises(RouteError, match=r"leaf-1.*port 9, which has no cable"):
        pair_route(f, dead_port, H1, H2)
    with pytest.raises(RouteError, match=r"no forwarding table for switch MF0;spine-2"):
        pair_route(f, {L1: TABLES[L1]}, H1, H2)


def test_pair_routes_keeps_errors_per_pair_and_shares_suffixes() -> None:
    f = small_fabric()
    got = pair_routes(f, {**TABLES, L2: {11: 1}}, [(H1, H2), (H2, H1), (H3, H2)])
    assert isinstance(got[(H2, H1)], RouteError)
    assert names(got[(H1, H2)])[1:] == names(got[(H3, H2)])[1:]  # type: ignore[arg-type]


def test_path_diversity_counts_parallel_cables() -> None:
    for parallel in (1, 2, 3):
        f = small_fabric(parallel)
        cls = classify(f)
        assert path_diversity(f, L1, L2) == 2 * parallel * parallel
        assert len(UpDown(f, cls).uplinks(L1, L2)) == 2 * parallel


def test_path_diversity_on_generated_three_tier_fabric() -> None:
    # rail-3tier: per unit 4 leaves x 2 spines (2 cables each), spine j of each unit on core j.
    f = parse_ibnetdiscover(to_ibnetdiscover(generate("rail-3tier")).splitlines(), "rail-3tier")
    cls = classify(f)
    by_name = {c.name: g for g, c in cls.nodes.items()}
    same_unit = path_diversity(f, by_name["leaf-su01-r0"], by_name["leaf-su01-r1"])
    other_unit = path_diversity(f, by_name["leaf-su01-r0"], by_name["leaf-su02-r0"])
    ups = len(UpDown(f, cls).up[by_name["leaf-su01-r0"]])
    assert same_unit == ups * ups // 2  # 2 spines, each reached by ups/2 cables from either leaf
    assert other_unit > 0
    assert path_diversity(f, by_name["leaf-su01-r0"], by_name["leaf-su01-r0"]) == 1


def test_parse_rejects_garbage_with_line_number() -> None:
    text = "Unicast lids [0x0-0x3] of switch Lid 2 guid 0x10 (x):\n0x0001 001 : (a)\nwhat is this\n"
    with pytest.raises(ParseError, match=r":3: lft output: not a forwarding table line"):
        parse_lft_dump(text, "dump.txt")
    with pytest.raises(ParseError, match="before any switch header"):
        parse_lft_dump("0x0001 001 : (a)\n", "dump.txt")
    with pytest.raises(ParseError, match="no switch forwarding table"):
        parse_lft_dump("", "empty")


# -- a real lab -------------------------------------------------------------------------------
@pytest.fixture
def rail_lab() -> Iterator[str]:
    from fabric.lab import simulator as lab

    lab.up("rail-small", (), name="routes")
    try:
        yield "routes"
    finally:
        lab.down("routes")


@pytest.mark.lab
def test_lab_dumps_agree_and_paths_match_ibtracert(rail_lab: str) -> None:
    from fabric.app.discovery.discover import discover
    from fabric.app.source import Source
    from fabric.lab import simulator as lab

    d = discover(Session(Source.lab(rail_lab)))
    dumps = Path(lab.opensm_dump_dir(rail_lab))
    lfts = parse_lft_dump((dumps / "opensm-lfts.dump").read_text(), "opensm-lfts.dump")
    fdbs = parse_lft_dump((dumps / "opensm.fdbs").read_text(), "opensm.fdbs")
    fts = parse_lft_dump(lab.run_tool(rail_lab, ["dump_fts"]).stdout, "dump_fts")
    assert len(lfts) == 20 and lfts == fdbs == fts  # 16 leaves + 4 spines
    leaf = d.fabric.find("MF0;leaf-su01-r0:MQM9700/U1")
    one = parse_lft_dump(lab.run_tool(rail_lab, ["ibroute", str(leaf.lid)]).stdout, "ibroute")
    assert one == {leaf.guid: lfts[leaf.guid]}
    assert len(one[leaf.guid]) == 84  # every LID of the lab: 64 HCAs + 20 switches
    src, dst = d.fabric.find("dgx-0001 mlx5_0"), d.fabric.find("dgx-0008 mlx5_7")
    ours = pair_route(d.fabric, lfts, src.guid, dst.guid)
    trace = lab.run_tool(rail_lab, ["ibtracert", str(src.lid), str(dst.lid)]).stdout
    hops = re.findall(r"^\[(\d+)\] -> \w+ port \{(0x[0-9a-f]+)\}\[(\d+)\]", trace, re.MULTILINE)
    assert len(hops) == len(ours) == 4
    here = src.guid
    for (out_port, far_guid, far_port), lk in zip(hops, ours, strict=True):
        assert lk.end(here).port == int(out_port)
        far = lk.other(here)
        # ibtracert prints the far end's port GUID; for an HCA that is node GUID + 1 in the lab.
        assert int(far_guid, 16) in (int(far.guid, 16), int(far.guid, 16) + 1)
        assert far.port == int(far_port)
        here = far.guid
    # every pair of the lab's HCAs routed as the oracle's dict walk routes it
    hcas = [n.guid for n in d.fabric.hcas()]
    pairs = [(x, y) for x in hcas for y in hcas]
    routed, oracle = pair_routes(d.fabric, lfts, pairs), all_paths(d.fabric, lfts, pairs)
    for k in pairs:
        got = routed[k]
        assert isinstance(got, tuple) and list(got) == oracle[k], k


def test_dr_path_avoids_the_cable_it_is_told_to() -> None:
    """From dgx-0001 mlx5_0 to leaf-su01-r1 without its spine-01 cable: up to leaf-su01-r0, over a
    spine that is not spine-01... and never through the avoided cable."""
    from tests.advise_fabrics import fabric_of, guid_of
    from topology.routes import dr_path

    d = fabric_of("rail-small")
    f = d.fabric
    origin = PortRef(guid_of(d, "dgx-0001 mlx5_0"), 1)
    target = guid_of(d, "leaf-su01-r1")
    cable = next(lk for p, _, lk in f.neighbours(target) if p == 5)
    free = dr_path(f, origin, target)
    around = dr_path(f, origin, target, frozenset({cable.key}))
    assert free is not None and around is not None and free != around
    # walk the path and check it never uses the avoided cable
    at, used = origin.guid, []
    for port in map(int, around.split(",")[1:]):
        lk = next(lk for p, _, lk in f.neighbours(at) if p == port)
        used.append(lk.key)
        at = lk.other(at).guid
    assert at == target and cable.key not in used
    assert dr_path(f, origin, origin.guid) == "0"
    # with every cable of the target avoided there is no way in
    assert dr_path(f, origin, target, frozenset(lk.key for _, _, lk in f.neighbours(target))) is None


def test_origin_port_comes_from_the_header() -> None:
    from tests.conftest import REALDATA
    from topology.ibnetdiscover import read_ibnetdiscover

    f = read_ibnetdiscover(REALDATA / "ibnetdiscover" / "junousi-ibm-doc-sdr-2009-no-sysimgguid.txt")
    # "# Initiated from node 0002c9030002847c port 0002c9030002847e": port GUID = node GUID + 2
    assert f.origin == PortRef(normalise_guid("0002c9030002847c"), 2)


def test_dr_path_from_a_switchs_management_port() -> None:
    """Tools attached to a switch (its port 0, where a managed switch runs the SM) reach the
    others by directed route too: the first hop leaves the switch itself."""
    from tests.advise_fabrics import fabric_of
    from topology.routes import dr_path

    d = fabric_of("fattree-small")
    f = d.fabric
    leaf = next(g for g, c in d.classification.nodes.items() if c.name == "leaf-01")
    spine = next(g for g, c in d.classification.nodes.items() if c.name == "spine-01")
    origin = PortRef(leaf, 0)
    route = dr_path(f, origin, spine)
    assert route is not None and route.startswith("0,") and len(route.split(",")) == 2
    first = int(route.split(",")[1])
    assert next(far.guid for p, far, _ in f.neighbours(leaf) if p == first) == spine
