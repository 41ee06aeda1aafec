"""The fabric's JSON form: exact round trips on every real ibnetdiscover capture, and its size at scale."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path

import pytest

from tests.conftest import realdata_files
from topology.errors import ParseError
from topology.ibnetdiscover import read_ibnetdiscover
from topology.model import Fabric, Guid, Lid, Link, Node, NodeKind, PortRef, UnconnectedPort, normalise_guid
from topology.serialize import (
    NODE_FIELDS,
    fabric_from_dict,
    fabric_from_json,
    fabric_to_dict,
    fabric_to_json,
)

_NODE_LINE = re.compile(r'^(Switch|Ca)\s+\d+\s+"[SH]-([0-9a-fA-F]+)"\s*#\s*"([^"]*)"')
# the -p ports report: "CA   134  1 0x7cfe9003003b4bde 4x EDR - SW ... ( 'o0001 HCA-1' - 'ib-i1l1s01' )"
_PORTS_LINE = re.compile(r"^(CA|SW)\s+\d+\s+\d+\s+0x([0-9a-fA-F]+)\s.*?'([^']*)'")


def _first_node_line(path: Path) -> tuple[str, str, str]:
    """(record kind, guid, description) of the first node record, read straight from the text."""
    for line in path.read_text(errors="replace").splitlines():
        m = _NODE_LINE.match(line.strip()) or _PORTS_LINE.match(line.strip())
        if m:
            return m.group(1), normalise_guid(m.group(2)), m.group(3)
    raise AssertionError(f"{path.name}: no node record")


def test_node_fields_name_every_field_of_node() -> None:
    # If Node grows a field, the JSON form must grow with it or the round trip silently loses it.
    assert tuple(f.name for f in dataclasses.fields(Node)) == NODE_FIELDS


@pytest.mark.parametrize("path", realdata_files("ibnetdiscover"), ids=lambda p: p.name)
def test_round_trip_of_real_capture(path: Path) -> None:
    fabric = read_ibnetdiscover(path)
    back = fabric_from_json(fabric_to_json(fabric))
    assert back == fabric
    assert list(back.nodes.values()) == list(fabric.nodes.values())
    assert back.links == fabric.links
    assert back.unconnected == fabric.unconnected
    assert back.source == str(path)
    assert back.warnings == fabric.warnings  # the parser's notes (lines skipped...) are kept
    # neighbour lookups are rebuilt too (they are not part of equality)
    for some in list(fabric.nodes)[:20]:
        assert back.links_of(some) == fabric.links_of(some)
    kind, guid, description = _first_node_line(path)
    node = back.nodes[Guid(guid)]
    assert node.description == description
    assert node.kind is (NodeKind.SWITCH if kind in ("Switch", "SW") else NodeKind.HCA)


def test_p_ports_capture_keeps_unconnected_ports() -> None:
    (path,) = [
        p for p in realdata_files("ibnetdiscover") if p.name == "treydock-ibnetdiscover-p-ports-edr-osc.txt"
    ]
    fabric = read_ibnetdiscover(path)
    assert fabric.unconnected, "this capture lists ports without a peer"
    assert fabric_from_dict(fabric_to_dict(fabric)).unconnected == fabric.unconnected


def test_links_to_nodes_without_a_record_keep_their_guid() -> None:
    sw = Node(
        Guid("0x0000000000000010"), NodeKind.SWITCH, 'leaf ünïcode "q"', 36, Lid(5), None, 0x2C9, 0xD2F0
    )
    stranger = Guid("0x00000000000000ff")
    fabric = Fabric.build(
        [sw],
        [Link(PortRef(sw.guid, 1), PortRef(stranger, 1), 4, "???")],
        [UnconnectedPort(PortRef(stranger, 2), 1, "SDR")],
        source="partial.txt",
    )
    data = fabric_to_dict(fabric)
    assert data["links"] == [[0, 1, stranger, 1, 4, "???"]]
    assert fabric_from_json(fabric_to_json(fabric)) == fabric


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{nope", "not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"format": "other"}', "not an ibfab fabric"),
        ('{"format": "ibfab-fabric", "version": 99}', "format version 99"),
        (
            '{"format": "ibfab-fabric", "version": 1, "nodes": [["0x1", "blimp", "", 1, null, null, null, null]],'
            ' "links": [], "unconnected": []}',
            "malformed fabric",
        ),
        (
            '{"format": "ibfab-fabric", "version": 1, "nodes": [], "links": [[3, 1, 4, 1, 4, "HDR"]],'
            ' "unconnected": []}',
            "malformed fabric",
        ),
        (
            '{"format": "ibfab-fabric", "version": 1, "nodes": [], "links": [], "unconnected": [],'
            ' "notes": "one line"}',
            "malformed fabric: TypeError: notes is str",
        ),
    ],
)
def test_bad_json_is_a_parse_error_naming_the_source(text: str, problem: str) -> None:
    with pytest.raises(ParseError, match=problem) as info:
        fabric_from_json(text, source="snap.json")
    assert "snap.json" in info.value.one_line()


def big_fabric(hcas: int = 16384, leaves: int = 512, spines: int = 512, cores: int = 256) -> Fabric:
    """A three-tier fat tree: 16,384 HCAs, 1,280 switches, about 35,000 cables."""

    def guid(n: int) -> Guid:
        return Guid(f"0x{n:016x}")

    nodes: list[Node] = []
    links: list[Link] = []
    leaf0, spine0, core0, hca0 = 0x1000, 0x10000, 0x20000, 0x100000
    per_leaf = hcas // leaves
    for i in range(leaves):
        nodes.append(
            Node(guid(leaf0 + i), NodeKind.SWITCH, f"leaf-{i:04d}", 64, Lid(1 + i), None, 0x2C9, 0xD2F2)
        )
    for i in range(spines):
        nodes.append(
            Node(guid(spine0 + i), NodeKind.SWITCH, f"spine-{i:04d}", 64, Lid(1000 + i), None, 0x2C9, 0xD2F2)
        )
    for i in range(cores):
        nodes.append(
            Node(guid(core0 + i), NodeKind.SWITCH, f"core-{i:04d}", 64, Lid(2000 + i), None, 0x2C9, 0xD2F2)
        )
    for h in range(hcas):
        g = guid(hca0 + h)
        nodes.append(
            Node(g, NodeKind.HCA, f"gpu{h // 8:05d} mlx5_{h % 8}", 1, Lid(4000 + h), g, 0x2C9, 0x1021)
        )
        links.append(Link(PortRef(g, 1), PortRef(guid(leaf0 + h // per_leaf), 1 + h % per_leaf), 4, "NDR"))
    for i in range(leaves):
        for u in range(32):
            spine = (i // 16) * 16 + u % 16
            links.append(
                Link(
                    PortRef(guid(leaf0 + i), 33 + u),
                    PortRef(guid(spine0 + spine), 1 + (i % 16) * 2 + u // 16),
                    4,
                    "NDR",
                )
            )
    for s in range(spines):
        for u in range(4):
            links.append(
                Link(
                    PortRef(guid(spine0 + s), 33 + u),
                    PortRef(guid(core0 + (s * 4 + u) % cores), 1 + s // 8),
                    4,
                    "NDR",
                )
            )
    return Fabric.build(nodes, links, source="synthetic")


def test_size_and_time_at_16k_hcas() -> None:
    import zlib

    fabric = big_fabric()
    assert len(fabric.hcas()) == 16384 and len(fabric.switches()) == 1280
    assert 34000 <= len(fabric.links) <= 36000
    start = time.perf_counter()
    text = fabric_to_json(fabric)
    write_s = time.perf_counter() - start
    start = time.perf_counter()
    back = fabric_from_json(text)
    read_s = time.perf_counter() - start
    assert back == fabric
    packed = len(zlib.compress(text.encode(), 6))
    print(
        f"\n16k fabric JSON: {len(text) / 1e6:.2f} MB, zlib {packed / 1e6:.2f} MB, "
        f"write {write_s:.2f} s, read {read_s:.2f} s"
    )
    assert len(text) < 4_000_000  # links by node index keep it compact
    # nodes sorted by GUID: 1,280 switches first, so the first HCA is row 1280
    assert json.loads(text)["links"][0] == [0, 1, 1280, 1, 4, "NDR"]
