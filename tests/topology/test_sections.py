"""Side groups: a management group attached to a compute fabric is its own section, the compute
tiers keep their depth, and every switch is judged only against peers of its own section and
tier. Generated fabrics (topology.generate ``side=``), clean and with planted faults."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.conftest import realdata_files
from topology.anomaly import Anomaly
from topology.classify import Classification, classify
from topology.generate import Design, generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover_text, read_ibnetdiscover
from topology.model import Fabric
from topology.wiring import find_anomalies

SIDE_FABRICS = {
    # 3 tiers, the side group's spines cabled to the cores
    "rail-3tier:side=3": {"leaf": 8, "spine": 4, "core": 2, "side leaf": 3, "side spine": 2},
    "rail-3tier:side=4,side_spines=3": {"leaf": 8, "spine": 4, "core": 2, "side leaf": 4, "side spine": 3},
    "rail:units=4,nodes=4,hcas=4,spines=4,core=4,radix=64,side=4": {
        "leaf": 16,
        "spine": 16,
        "core": 4,
        "side leaf": 4,
        "side spine": 2,
    },
    # 2 tiers, the side group's spines cabled to the compute spines
    "rail-small:side=3": {"leaf": 16, "spine": 4, "side leaf": 3, "side spine": 2},
    "fattree-small:side=4": {"leaf": 4, "spine": 2, "side leaf": 4, "side spine": 2},
    "fattree-small:side=3,side_hosts=2,side_spines=1": {
        "leaf": 4,
        "spine": 2,
        "side leaf": 3,
        "side spine": 1,
    },
}


def analyse(design: Design) -> tuple[Fabric, Classification, list[Anomaly]]:
    f = parse_ibnetdiscover_text(to_ibnetdiscover(design), "generated")
    c = classify(f)
    return f, c, find_anomalies(f, c)


def switch_tiers(c: Classification) -> dict[str, int]:
    return dict(Counter(n.tier_name for n in c.nodes.values() if n.tier != 0))


@pytest.mark.parametrize("spec", SIDE_FABRICS)
def test_clean_fabric_with_a_side_group_is_quiet(spec: str) -> None:
    d = generate(spec)
    _, c, found = analyse(d)
    assert found == []
    assert switch_tiers(c) == SIDE_FABRICS[spec]
    compute, side = c.sections
    assert (compute.kind, side.kind, side.name) == ("compute", "side", "side group 1")
    names = {c.nodes[g].name for g in side.switches}
    assert names == {s.name for s in d.switches if s.role.startswith("side")}
    assert side.hosts == d.spec.side * d.spec.side_hosts and side.leaves == d.spec.side
    # The compute tiers keep their depth; the side group has its own.
    assert compute.depth == (3 if d.spec.core else 2) and side.depth == 2
    # Rails are the compute fabric's (rail fabrics), whatever the side group's hosts look like.
    assert c.rail_optimized == (d.spec.kind == "rail")


@pytest.mark.parametrize(
    "fault",
    [
        "missing-link:mgmt-leaf-01",  # a side leaf lacks one of its two side-spine cables
        "missing-link:mgmt-spine-01",  # a side spine lacks a cable to a core
        "missing-link:leaf-su01-r0",  # a compute leaf lacks a spine cable
        "missing-link:spine-su01-01",  # a compute spine lacks a core cable
        "miswire:dgx-0002:0:1",
        "degraded-width:mgmt-leaf-02:5",  # mgmt-leaf-02's first uplink at 1x
    ],
)
def test_faults_with_a_side_group_are_reported_exactly(fault: str) -> None:
    d = generate("rail:units=4,nodes=4,hcas=4,spines=4,core=4,radix=64,side=4,side_spines=3", [fault])
    _, _, found = analyse(d)
    assert {p.kind for p in d.planted} == {a.kind for a in found}
    (got,) = found  # one anomaly: a miswire names both cables of the host
    for p in d.planted:
        assert set(p.guids) <= set(got.nodes)


def test_side_group_whose_hosts_are_gone_is_hostless_not_tier_5() -> None:
    """The management hosts are all down: their leaves and spines hang off the cores with
    nothing below. Counted from the compute leaves they would be tiers 4 and 5."""
    faults = [f"missing-hca:mgmt-{i:04d}:0" for i in range(1, 13)]
    _, c, found = analyse(generate("rail-3tier:side=3", faults))
    assert switch_tiers(c) == {"leaf": 8, "spine": 4, "core": 2, "hostless": 5}
    assert max(n.tier or 0 for n in c.nodes.values()) == 3
    assert found == []


def test_every_switch_has_a_tier_name_on_every_capture() -> None:
    for path in realdata_files("ibnetdiscover"):
        c = classify(read_ibnetdiscover(path))
        assert all(n.tier_name for n in c.nodes.values()), path.name
        assert all(n.tier is None or n.tier <= c.sections[n.section].depth for n in c.nodes.values()), (
            path.name
        )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("loginoff-qdr-fdr10-152nodes.txt", {"leaf": 6, "spine": 2}),
        ("superbench-faked-hdr-mcs8500-full-f-flags.txt", {"leaf": 5, "spine": 2, "core": 1}),
        ("ufm-sdk-selene-storage-hdr-edr-1407nodes.txt", {"leaf": 64, "spine": 64, "core": 32}),
        ("topograph-dgx-ndr-superpod-622nodes.txt", {"leaf": 31, "spine": 9}),
        # Switches seen only on unconnected lines of a -p excerpt: nothing below them.
        ("treydock-ibnetdiscover-p-ports-hdr-qdr-odd-spaces.txt", {"leaf": 1, "hostless": 4}),
    ],
)
def test_real_captures_have_one_compute_section(name: str, expected: dict[str, int]) -> None:
    path = next(p for p in realdata_files("ibnetdiscover") if p.name == name)
    c = classify(read_ibnetdiscover(path))
    assert [s.kind for s in c.sections] == ["compute"]
    assert switch_tiers(c) == expected
