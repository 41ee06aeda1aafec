"""The twin's net file and the twin comparison, on every real capture and on planted differences."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import realdata_files
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover_text
from topology.model import Fabric, Guid, Lid, Link, Node, NodeKind, PortRef
from topology.twin_compare import compare_twin
from topology.twin_net import MAX_DESCRIPTION, attach_point, topology_key, twin_net

CAPTURES = realdata_files("ibnetdiscover")
_PORT = re.compile(r'^\[(\d+)\] "([SHR]-[0-9a-f]{16})"\[(\d+)\]( e=0)?  # .*lid 0 (\d+)x(\w+)$')


def _read(path: Path) -> Fabric:
    return parse_ibnetdiscover_text(path.read_text(errors="replace"), str(path))


def _records(net: str) -> dict[str, dict[int, tuple[str, int, int, str]]]:
    """node id -> port -> (far id, far port, width, speed) as the net file writes them."""
    out: dict[str, dict[int, tuple[str, int, int, str]]] = {}
    here = None
    for line in net.splitlines():
        m = re.match(r'^(Switch|Ca|Rt) \d+ "([^"]+)"', line)
        if m:
            here = out.setdefault(m.group(2), {})
            continue
        p = _PORT.match(line)
        if p and here is not None:
            here[int(p.group(1))] = (p.group(2), int(p.group(3)), int(p.group(5)), p.group(6))
    return out


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_every_cable_written_on_both_ends_with_its_rate(path: Path) -> None:
    f = _read(path)
    net = twin_net(f)
    records = _records(net.net)
    assert set(records) == {net.node_ids[g] for g in f.nodes}
    for lk in f.links:
        a, b = net.node_ids[lk.a.guid], net.node_ids[lk.b.guid]
        far_a = records[a][lk.a.port]
        far_b = records[b][lk.b.port]
        assert far_a[:2] == (b, lk.b.port) and far_b[:2] == (a, lk.a.port)
        # both ends carry the same width and speed (OpenSM undoes a one-sided one)
        assert far_a[2:] == far_b[2:]
        sim_speed = {"NDR": "HDR", "XDR": "HDR"}.get(lk.speed, lk.speed)
        if lk.width and lk.speed != "???":
            assert far_a[2:] == (lk.width, sim_speed)
    assert sum(len(ports) for ports in records.values()) == 2 * len(f.links)
    if f.links:  # ibsim attaches its clients to the first node written
        first = next(ln for ln in net.net.splitlines() if re.match(r"^(Switch|Ca|Rt) ", ln))
        assert net.attach is not None and f'"{net.node_ids[net.attach]}"' in first
    assert topology_key(f) == topology_key(_read(path))


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_lids_kept_in_the_ports_and_the_sm_cache(path: Path) -> None:
    f = _read(path)
    net = twin_net(f)
    cached = {int(line.split()[0], 16): int(line.split()[1]) for line in net.guid2lid.splitlines()}
    owners: dict[int, int] = {}
    for lid in f.lids.values():
        owners[int(lid)] = owners.get(int(lid), 0) + 1
    for ref, lid in f.lids.items():
        node = f.nodes[ref.guid]
        if (node.kind is NodeKind.SWITCH) != (ref.port == 0) or lid in (0, 0xFFFF) or owners[int(lid)] > 1:
            continue
        assert cached[int(ref.guid, 16) + ref.port] == lid
    if any(lk.speed == "NDR" for lk in f.links):
        assert any(n.startswith("ibsim 0.10 has no NDR") for n in net.notes)
    else:
        assert not any("has no NDR" in n for n in net.notes)


def test_qdr_and_slower_turn_extended_speeds_off() -> None:
    """A QDR annotation leaves the extended speeds on, and the link would train at HDR: e=0."""
    f = _read(next(p for p in CAPTURES if p.name.startswith("loginoff")))
    lines = [ln for ln in twin_net(f).net.splitlines() if ln.startswith("[")]
    assert all((" e=0 " in ln) == ln.endswith(("QDR", "FDR10", "SDR", "DDR")) for ln in lines)


def _tiny(desc: str = "cn01 mlx5_0", speed: str = "HDR") -> Fabric:
    sw, ca = Guid("0x0000000000000010"), Guid("0x0000000000000020")
    return Fabric.build(
        [
            Node(sw, NodeKind.SWITCH, "leaf-01", 36, Lid(1), None, 0x2C9, 0xCF08),
            Node(ca, NodeKind.HCA, desc, 1, Lid(2)),
        ],
        [Link(PortRef(sw, 3), PortRef(ca, 1), 4, speed)],
        lids={PortRef(sw, 0): Lid(1), PortRef(ca, 1): Lid(2)},
        origin=PortRef(ca, 1),
    )


def test_descriptions_the_simulator_cannot_hold_are_cut_and_said() -> None:
    long = 'node "quoted" ' + "x" * 80
    net = twin_net(_tiny(long))
    written = net.descriptions[Guid("0x0000000000000020")]
    assert len(written) == MAX_DESCRIPTION and '"' not in written
    assert any("written cut" in n for n in net.notes)
    assert not twin_net(_tiny()).descriptions


def test_attach_point_is_a_switch_of_the_largest_part() -> None:
    """The twin's SM runs on a switch: no HCA a check unplugs is its own."""
    f = _tiny()
    assert attach_point(f) == PortRef(Guid("0x0000000000000010"), 0)
    # two HCAs back to back, no switch: an HCA's port 1
    a, b = Guid("0x0000000000000030"), Guid("0x0000000000000040")
    pair = Fabric.build(
        [Node(a, NodeKind.HCA, "a", 2), Node(b, NodeKind.HCA, "b", 1)],
        [Link(PortRef(a, 2), PortRef(b, 1), 4, "EDR")],
    )
    assert attach_point(pair) == PortRef(b, 1)


def test_topology_key_changes_with_what_a_twin_copies() -> None:
    f = _tiny()
    assert topology_key(f) == topology_key(_tiny())
    assert topology_key(f) != topology_key(_tiny(speed="EDR"))
    assert topology_key(f) != topology_key(_tiny(desc="cn02 mlx5_0"))


def test_comparison_clean_and_each_planted_difference() -> None:
    f = _read(next(p for p in CAPTURES if p.name.startswith("loginoff")))
    net = twin_net(f)
    clean = compare_twin(f, f, net)
    assert clean.equal and clean.differences == () and clean.counts == ()
    # a cable the twin lacks
    gone = f.links[5]
    missing = Fabric.build(f.nodes.values(), [lk for lk in f.links if lk != gone], lids=f.lids)
    cmp = compare_twin(f, missing, net)
    assert not cmp.equal and [(k, n, e) for k, n, e in cmp.counts] == [("link_missing", 1, 0)]
    # a cable at another speed than the source's (not the simulator's doing)
    slow = Fabric.build(
        f.nodes.values(), [lk._replace(speed="SDR") if lk == gone else lk for lk in f.links], lids=f.lids
    )
    cmp = compare_twin(f, slow, net)
    assert [(k, n, e) for k, n, e in cmp.counts] == [("link_rate", 1, 0)] and not cmp.equal
    # a LID the twin's SM gave otherwise
    ref, lid = next(iter(f.lids.items()))
    moved = Fabric.build(f.nodes.values(), f.links, lids={**f.lids, ref: Lid(lid + 1000)})
    cmp = compare_twin(f, moved, net)
    assert [(k, n) for k, n, _ in cmp.counts] == [("lid", 1)] and not cmp.equal


def test_ndr_read_back_as_hdr_is_explained() -> None:
    design = generate("rail:units=1,nodes=2,hcas=2,spines=1,radix=64,speed=NDR", ())
    f = parse_ibnetdiscover_text(to_ibnetdiscover(design), "gen")
    net = twin_net(f)
    hdr = Fabric.build(f.nodes.values(), [lk._replace(speed="HDR") for lk in f.links], lids=f.lids)
    cmp = compare_twin(f, hdr, net)
    assert cmp.equal and cmp.counts == (("link_rate", len(f.links), len(f.links)),)
