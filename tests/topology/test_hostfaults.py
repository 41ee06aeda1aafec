"""Hosts with fewer working HCAs than the peers of their shape (``missing_hca``), on every fabric
shape: each rule beside a clean case, on generated and hand-built fabrics and on every real
capture (topology.hostfaults)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from tests.conftest import realdata_files
from topology.anomaly import Anomaly
from topology.classify import Classification, classify
from topology.generate import Design, generate, to_ibnetdiscover
from topology.ibdiag_csv import read_db_csv_fabric
from topology.ibnetdiscover import parse_ibnetdiscover_text, read_ibnetdiscover
from topology.model import Fabric, Guid, Link, Node, NodeKind, PortRef
from topology.wiring import find_anomalies

# Hosts of 8 HCAs, all on their leaf (consecutive ports), 4 hosts a leaf: 16 hosts.
FAT8 = "leafspine:leaves=4,spines=2,hosts=4,hcas=8,radix=64"
OURS = {"missing_hca", "unconfigured_ports", "duplicate_guid", "duplicate_lid"}


def analyse(fabric: Fabric) -> tuple[Classification, list[Anomaly]]:
    cls = classify(fabric)
    return cls, find_anomalies(fabric, cls)


def from_design(design: Design) -> Fabric:
    return parse_ibnetdiscover_text(to_ibnetdiscover(design))


def planted_port(design: Design, fault: str) -> PortRef:
    (p,) = [p for p in design.planted if p.fault == fault]
    return next(r for r in p.ports if r.guid in {s.guid for s in design.switches})


# -- generated fat trees: hosts of 8 HCAs on one leaf -------------------------------------------
@pytest.mark.parametrize(
    "spec",
    [
        FAT8,
        "leafspine:leaves=4,spines=2,hosts=1,hcas=8,radix=64",  # one host a leaf
        "leafspine:leaves=2,spines=2,hosts=3,hcas=4,radix=36",
        "fattree-small",  # one HCA a host: nothing to compare
    ],
)
def test_clean_fat_trees_are_quiet(spec: str) -> None:
    _, found = analyse(from_design(generate(spec)))
    assert found == []


def test_three_hosts_with_seven_of_eight_hcas_are_each_reported() -> None:
    """The issue's fat tree: three hosts lost one HCA each; each is one missing_hca naming the
    adapter as its peers name it and the leaf port its peers' pattern gives (the rule: a strict
    subset of the layout its 13 peers share, consecutive ports in adapter order)."""
    faults = ["missing-hca:cn0003:5", "missing-hca:cn0007:0", "missing-hca:cn0016:7"]
    d = generate(FAT8, faults)
    _, found = analyse(from_design(d))
    assert [a.kind for a in found] == ["missing_hca"] * 3
    by_host = {a.message.split()[0]: a for a in found}
    for fault, host, adapter in zip(
        faults, ("cn0003", "cn0007", "cn0016"), ("mlx5_5", "mlx5_0", "mlx5_7"), strict=True
    ):
        a = by_host[host]
        port = planted_port(d, fault)
        assert a.ports == (port,)
        assert a.message.startswith(
            f"{host} has 7 of the 8 HCAs its 13 peers have (mlx5_[0-7] on one leaf): no {adapter}"
        )
        assert (
            f"port {port.port} (its peers' HCAs take consecutive ports in adapter order), where nothing answers"
            in a.message
        )
        assert "ibstat" in a.message and a.severity.value == "error"
        (planted,) = [p for p in d.planted if p.fault == fault]
        assert planted.kind == "missing_hca" and set(planted.guids) & set(a.nodes)


@pytest.mark.parametrize(
    ("spelling", "missing", "layout"),
    [
        (lambda i: f"HCA-{i + 1}", "HCA-6", "HCA-[1-8]"),
        # netdev names from the PCI address: indexes are PCI order in the layout the hosts share
        (
            lambda i: f"ibp{(0x0C, 0x12, 0x48, 0x54, 0x8A, 0x94, 0xC1, 0xCB)[i]}s0f0",
            "ibp148s0f0",
            "ibp12s0f0, ",
        ),
    ],
)
def test_the_missing_adapter_is_named_as_its_peers_name_it(
    spelling: Callable[[int], str], missing: str, layout: str
) -> None:
    text = to_ibnetdiscover(generate(FAT8, ["missing-hca:cn0003:5"]))
    text = re.sub(r' mlx5_(\d)"', lambda m: f' {spelling(int(m.group(1)))}"', text)
    (a,) = analyse(parse_ibnetdiscover_text(text))[1]
    assert a.kind == "missing_hca" and f"({layout}" in a.message
    assert f": no {missing}, which belongs on leaf-01 port 22 " in a.message


def test_one_host_a_leaf_is_judged_against_the_hosts_of_the_other_leaves() -> None:
    d = generate("leafspine:leaves=4,spines=2,hosts=1,hcas=8,radix=64", ["missing-hca:cn0003:5"])
    _, found = analyse(from_design(d))
    (a,) = found
    assert a.kind == "missing_hca" and a.ports == (planted_port(d, "missing-hca:cn0003:5"),)


@pytest.mark.parametrize(("missing", "reported"), [(1, 1), (2, 2), (3, 0)])
def test_a_host_with_three_quarters_of_the_layout_is_short_below_that_another_shape(
    missing: int, reported: int
) -> None:
    """6 of 8 HCAs is a host missing two (one anomaly each); 5 of 8 is not judged against the
    8-HCA hosts at all (the rail check's bar: a login node's two HCAs are another shape)."""
    d = generate(FAT8, [f"missing-hca:cn0006:{i}" for i in range(missing)])
    _, found = analyse(from_design(d))
    assert [a.kind for a in found] == ["missing_hca"] * reported
    assert all(a.message.startswith(f"cn0006 has {8 - missing} of the 8 HCAs") for a in found)


@pytest.mark.parametrize(("short", "reported"), [(5, 5), (6, 0)])
def test_a_layout_as_common_as_half_the_shape_is_a_design(short: int, reported: int) -> None:
    """16 hosts: 5 without mlx5_7 leave 11 with it (more than twice 5): five faults. 6 without it
    leave 10, not twice 6: hosts built with 7 HCAs, as many as a design would have: nothing."""
    hosts = [f"cn{i:04d}" for i in range(1, 17, 3)][:short]
    d = generate(FAT8, [f"missing-hca:{h}:7" for h in hosts])
    _, found = analyse(from_design(d))
    assert len(found) == reported and {a.kind for a in found} <= {"missing_hca"}


def test_an_unnamed_hca_on_the_missing_port_is_that_hca() -> None:
    """cn0003's mlx5_5 lost its node description: it answers on the port its peers' pattern
    gives, so the host lacks nothing; unnamed_hca is the one report."""
    text = to_ibnetdiscover(generate(FAT8)).replace(
        '"cn0003 mlx5_5"', '"MT4129 ConnectX7   Mellanox Technologies"'
    )
    _, found = analyse(parse_ibnetdiscover_text(text))
    assert [a.kind for a in found] == ["unnamed_hca"]


def test_a_rail_fabrics_missing_hca_stays_the_rail_checks_one_anomaly() -> None:
    d = generate("rail-small", ["missing-hca:dgx-0003:5"])
    _, found = analyse(from_design(d))
    (a,) = found
    assert a.kind == "missing_link" and a.message.startswith("dgx-0003 has no HCA on rail 5")
    assert [p.kind for p in d.planted] == ["missing_link"]


# -- hand-built fabrics: hosts spread over two leaves, a login node, no pattern -------------------
def _build(hosts: Mapping[str, Mapping[int, tuple[int, int]]], leaves: int = 2, spines: int = 2) -> Fabric:
    """Leaves ``leaf-1..`` (36 ports, HDR), each cabled twice to every spine; each host's HCA
    ``mlx5_i`` on (leaf number, port) as given."""
    nodes: list[Node] = []
    links: list[Link] = []
    leaf_guids = [Guid(f"0x{0x100 + i:016x}") for i in range(1, leaves + 1)]
    for i, g in enumerate(leaf_guids, 1):
        nodes.append(Node(g, NodeKind.SWITCH, f"MF0;leaf-{i}:MQM8700/U1", 40, devid=0xCF08))
    for j in range(1, spines + 1):
        sg = Guid(f"0x{0x200 + j:016x}")
        nodes.append(Node(sg, NodeKind.SWITCH, f"MF0;spine-{j}:MQM8700/U1", 40, devid=0xCF08))
        for i, lg in enumerate(leaf_guids):
            for c in range(2):
                links.append(Link(PortRef(lg, 37 + 2 * (j - 1) + c), PortRef(sg, 1 + 2 * i + c), 4, "HDR"))
    n = 0
    for host, hcas in hosts.items():
        for index, (leaf, port) in sorted(hcas.items()):
            n += 1
            g = Guid(f"0x{0x1000 + n:016x}")
            nodes.append(Node(g, NodeKind.HCA, f"{host} mlx5_{index}", 1, devid=0x101B))
            links.append(Link(PortRef(g, 1), PortRef(leaf_guids[leaf - 1], port), 4, "HDR"))
    return Fabric.build(nodes, links)


def _spread(count: int, start: int = 0) -> dict[str, dict[int, tuple[int, int]]]:
    """Hosts of 8 HCAs spread over two leaves: mlx5_0-3 on leaf-1, mlx5_4-7 on leaf-2, host k on
    ports 4k+1..4k+4 of both."""
    return {
        f"node{k + 1:02d}": {i: (1 + i // 4, 4 * k + 1 + i % 4) for i in range(8)}
        for k in range(start, start + count)
    }


def test_a_host_spread_over_two_leaves_missing_one_is_reported_on_its_leaf_and_port() -> None:
    hosts = _spread(6)
    clean_cls, clean = analyse(_build(hosts))
    assert clean == [] and not clean_cls.rail_optimized
    del hosts["node03"][5]
    _, found = analyse(_build(hosts))
    (a,) = found
    # mlx5_5 sits with mlx5_4,6,7 on leaf-2 (the peers' block), at port 4*2+2 (their pattern).
    assert a.kind == "missing_hca" and a.ports == (PortRef(Guid(f"0x{0x102:016x}"), 10),)
    assert a.message.startswith(
        "node03 has 7 of the 8 HCAs its 5 peers have (mlx5_[0-7] over 2 leaves): no mlx5_5"
    )
    assert "which belongs on leaf-2 port 10" in a.message


def test_a_login_node_with_two_hcas_among_eight_hca_hosts_is_another_shape() -> None:
    """A non-rail fabric with a 2-HCA login node on the GPU hosts' leaf: not a fault."""
    hosts: dict[str, dict[int, tuple[int, int]]] = {
        f"gpu{k + 1:02d}": {i: (1 + k // 4, 8 * (k % 4) + 1 + i) for i in range(8)} for k in range(8)
    }
    hosts["login01"] = {0: (1, 33), 1: (1, 34)}
    cls, found = analyse(_build(hosts))
    assert not cls.rail_optimized
    assert found == []


def test_where_the_peers_cable_in_no_one_pattern_the_port_is_said_unknown() -> None:
    """Every host has its own order of ports: the leaf is told (its other HCAs are all there), the
    port is not, and the anomaly names no port."""
    orders = [(0, 1, 2, 3), (3, 2, 1, 0), (1, 3, 0, 2), (2, 0, 3, 1), (0, 2, 1, 3)]
    hosts = {f"n{k}": {i: (1, 4 * k + 1 + order[i]) for i in range(4)} for k, order in enumerate(orders)}
    assert analyse(_build(hosts, leaves=1))[1] == []
    del hosts["n2"][3]
    (a,) = analyse(_build(hosts, leaves=1))[1]
    assert a.kind == "missing_hca" and a.ports == ()
    assert "no mlx5_3, which belongs on leaf-1 (which port is not known" in a.message


def test_hosts_alike_on_a_leaf_of_their_own_are_a_kind_of_their_own() -> None:
    """A storage leaf whose two hosts have mlx5_0-2, beside two leaves of twelve 4-HCA GPU hosts:
    a design (two hosts alike, on no leaf of the GPU hosts). A GPU host on a GPU leaf with
    mlx5_0-2 is short of its peers (reported), and so is one alone on a fourth leaf."""
    hosts = {f"gpu{k:02d}": {i: (1 + k // 6, 4 * (k % 6) + 1 + i) for i in range(4)} for k in range(12)}
    hosts |= {f"stor{k}": {i: (3, 4 * k + 1 + i) for i in range(3)} for k in range(2)}
    assert analyse(_build(hosts, leaves=4))[1] == []
    hosts["gpu02"] = {i: (1, 9 + i) for i in range(3)}
    hosts["gpu99"] = {i: (4, 1 + i) for i in range(3)}
    found = analyse(_build(hosts, leaves=4))[1]
    assert sorted(a.message.split()[0] for a in found) == ["gpu02", "gpu99"]
    assert {a.kind for a in found} == {"missing_hca"}
    # each where its own HCAs and the GPU hosts' pattern (consecutive ports) put mlx5_3
    assert sorted(a.ports[0].port for a in found) == [4, 12]


# -- real captures ------------------------------------------------------------------------------
# What the detectors of topology.hostfaults and topology.addressing report on every real capture,
# and why (read as an operator would). None of these captures has a host short of its peers'
# layout, a LID of 0 or 65535, a LID held twice or a GUID recorded twice.
REAL: dict[str, tuple[list[str], str]] = {
    "garyli-ibdiagnet2-ndr-272nodes-label-ports.txt": ([], "32 rail hosts with the same 8 adapters"),
    "junousi-ibm-doc-sdr-2009-no-sysimgguid.txt": ([], "two single-HCA hosts"),
    "junousi-manpage-2007-voltaire-non-chassis-grouping.txt": (
        [],
        "no named host; LIDs 10-15 with LMC 1 are distinct",
    ),
    "junousi-nvidia-kb-edr-fdr-mixed-loopbacks.txt": ([], "5 hosts, no layout shared by 3"),
    "junousi-oracle-doc-sun-dcs36-qdr.txt": ([], "one host"),
    "loginoff-qdr-fdr10-152nodes.txt": ([], "144 single-HCA hosts"),
    "superbench-faked-hdr-mcs8500-full-f-flags.txt": ([], "10 single-HCA hosts"),
    "topograph-dgx-ndr-superpod-622nodes.txt": (
        [],
        "rail-optimized: its spread hosts are the rail check's; 10 lacking HCA-5 have an unnamed HCA there",
    ),
    "topograph-gb200-single-ca-isolated.txt": ([], "one CA without a link: no LID stated"),
    "treydock-ibnetdiscover-p-ports-edr-osc.txt": ([], "3 single-HCA hosts; every port has a LID"),
    "treydock-ibnetdiscover-p-ports-hdr-qdr-odd-spaces.txt": (
        [],
        "an excerpt whose aggregation node is pasted with two LIDs: the reader keeps the first (a warning)",
    ),
    "ufm-sdk-selene-storage-hdr-edr-1407nodes.txt": (
        [],
        "its rail hosts (mlx5_4, mlx5_10) are the rail check's; the two service hosts with only index 1"
        " hold half of the 160 storage hosts' (0, 1): another shape",
    ),
    "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt": (
        [],
        "4 hosts of HCA-1/2 and one of 4 HCAs: one host is no shape, and 2 of 4 is under three quarters",
    ),
}
CAPTURES = {p.name: p for p in realdata_files("ibnetdiscover")}


def test_every_real_capture_has_its_expectation() -> None:
    assert set(REAL) == set(CAPTURES)


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_captures_report_only_what_is_real(name: str) -> None:
    expected, reason = REAL[name]
    _, found = analyse(read_ibnetdiscover(CAPTURES[name]))
    assert [a.message for a in found if a.kind in OURS] == expected, reason


@pytest.mark.parametrize(
    "path", [p for p in realdata_files("ibdiagnet") if p.name.endswith(".db_csv")], ids=lambda p: p.name
)
def test_real_ibdiagnet_runs_are_quiet(path: Path) -> None:
    """The NDR run's PORTS: every HCA port and switch has a LID, every cabled port is Active."""
    fabric = read_db_csv_fabric(path)
    assert fabric.lids and not fabric.inactive
    _, found = analyse(fabric)
    assert [a for a in found if a.kind in OURS] == []


def _messages(found: Sequence[Anomaly], kind: str) -> list[str]:
    return [a.message for a in found if a.kind == kind]


def test_the_message_names_the_rule() -> None:
    d = generate(FAT8, ["missing-hca:cn0010:2"])
    (msg,) = _messages(analyse(from_design(d))[1], "missing_hca")
    assert re.search(r"has 7 of the 8 HCAs its \d+ peers have", msg)
