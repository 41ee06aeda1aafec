"""Classification and wiring anomalies on the real captures.

The expected anomalies are real findings, each checked by reading the capture (see comments):
no capture may gain or lose one without this test noticing.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple

import pytest

from tests.conftest import realdata_files
from topology.classify import Role, classify, parse_hca_description, switch_name
from topology.ibnetdiscover import read_ibnetdiscover
from topology.wiring import find_anomalies

CAPTURES = {p.name: p for p in realdata_files("ibnetdiscover")}


class Pin(NamedTuple):
    """Anomalies of one capture matching ``kind`` and a message start (a regex), how many, and
    why each is real (checked by reading the capture as an operator would)."""

    kind: str
    subject: str
    times: int
    reason: str


def _short(leaf: str, n: int, spines: str) -> Pin:
    return Pin(
        "missing_link",
        leaf + " has ",
        1,
        f"its {n} uplinks fall short of the 18 (two to each of 9 spines) of its 30 peers: {spines}",
    )


EXPECTED_ANOMALIES: dict[str, list[Pin]] = {
    "garyli-ibdiagnet2-ndr-272nodes-label-ports.txt": [],
    "junousi-ibm-doc-sdr-2009-no-sysimgguid.txt": [],
    "junousi-manpage-2007-voltaire-non-chassis-grouping.txt": [
        Pin(
            "degraded_link",
            r"cable MT23108 .* port 1 <-> ISR9024 .* port 12 trains at 1xSDR",
            1,
            "one end of the cable reports 1x on a fabric whose other cables run 4x",
        ),
        Pin(
            "degraded_link",
            r"cable SW-6IB4 .* port 1 <-> ISR9024 .* port 10 trains at 1xSDR",
            1,
            "the ISR9024-SW-6IB4 switch link runs 1 lane of 4 (1xSDR on one end)",
        ),
        Pin(
            "unnamed_hca",
            r"HCA 0x\w+ on .* \(description 'MT23108 InfiniHost Mellanox Technologies'\)",
            4,
            "the HCAs kept the firmware's model string: no host can be told",
        ),
    ],
    "junousi-nvidia-kb-edr-fdr-mixed-loopbacks.txt": [],
    "junousi-oracle-doc-sun-dcs36-qdr.txt": [],
    "loginoff-qdr-fdr10-152nodes.txt": [
        Pin(
            "missing_link",
            r"ib1 has 7 uplinks where its 5 peers have 8; short of cables to ib8 \(3 of 4\)",
            1,
            "ib2..ib6 have four cables to each spine; ib1 has no cable on port 25 to ib8",
        ),
    ],
    "superbench-faked-hdr-mcs8500-full-f-flags.txt": [],
    "topograph-dgx-ndr-superpod-622nodes.txt": [
        Pin(
            "rail_miswire",
            "b08-p1-dgx-08-c01: HCA-5 .* HCA-6 .* swap these cables",
            1,
            "its HCA-5 sits on the rail leaf of HCA-6 (IBLEAF-04-08) and HCA-6 on that of HCA-5 (IBLEAF-03-08)",
        ),
        _short("A09-P1-IBLEAF-01-01", 17, "one of two cables to A10-P1-IBSPINE-04 (port 40 empty)"),
        _short(
            "A09-P1-IBLEAF-01-02", 14, "both cables to IBSPINE-01 and to IBSPINE-04 (ports 33, 34, 39, 40)"
        ),
        _short("A09-P1-IBLEAF-01-03", 16, "both cables to IBSPINE-04 (ports 39, 40)"),
        _short("A09-P1-IBLEAF-02-03", 15, "one cable to IBSPINE-01 and both to B10-P1-IBSPINE-06"),
        _short("A09-P1-IBLEAF-02-04", 16, "both cables to IBSPINE-04"),
        _short("A09-P1-IBLEAF-04-02", 16, "both cables to IBSPINE-01"),
        _short("A09-P1-IBLEAF-04-04", 16, "both cables to IBSPINE-01"),
        _short("B09-P1-IBLEAF-01-05", 16, "one cable each to IBSPINE-04 and IBSPINE-08"),
        _short("B09-P1-IBLEAF-01-07", 16, "both cables to IBSPINE-04"),
        _short("B09-P1-IBLEAF-01-08", 17, "one cable to IBSPINE-06"),
        _short("B09-P1-IBLEAF-02-06", 16, "both cables to IBSPINE-07"),
        _short("B09-P1-IBLEAF-03-07", 15, "both cables to IBSPINE-05 and one to IBSPINE-06"),
        # 74 unnamed HCAs, one anomaly per machine (67 of them in 19 machines the cabling tells)
        Pin(
            "unnamed_hca",
            r"HCA 0x\w+ on .* \(description 'MT4129 ConnectX7   Mellanox Technologies'\)",
            7,
            "DGX HCAs that kept the firmware's model string, each alone on its unit's port (no twin)",
        ),
        Pin(
            "unnamed_hca",
            r"[34] HCAs of one machine \(the machine on port \d+ of [^)]*\) have no host name: "
            r"0x\w+ on \S+ port \d+ \('MT4129 ConnectX7",
            17,
            "DGX whose HCAs all kept the model string: on the same port of each rail leaf of their unit",
        ),
        Pin(
            "unnamed_hca",
            r"[23] HCAs of one machine \(the machine on port \d+ of [^)]*\) have no host name: "
            r"0x\w+ on \S+ port \d+ \('(ubuntu|localhost) (mlx5_\d|HCA-\d)'\)",
            2,
            "two hosts whose hostname was still localhost/ubuntu when the node description was set",
        ),
    ],
    "topograph-gb200-single-ca-isolated.txt": [],
    "treydock-ibnetdiscover-p-ports-edr-osc.txt": [],
    "treydock-ibnetdiscover-p-ports-hdr-qdr-odd-spaces.txt": [],
    "ufm-sdk-selene-storage-hdr-edr-1407nodes.txt": [
        Pin(
            "missing_link",
            r"SLG01-09 has 14 uplinks where its 47 peers have 16",
            1,
            "no cable to SSPINE1-05 (port 29) nor SSPINE1-16 (port 40), one to each spine of its pod elsewhere",
        ),
        Pin(
            "missing_link",
            r"SLG01-10 has 14 uplinks where its 47 peers have 16",
            1,
            "no cable to SSPINE1-05 (port 29) nor SSPINE1-13 (port 37)",
        ),
        Pin(
            "missing_link",
            r"SLG01-13 \(service leaf\) has 15 uplinks where its 15 peers have 16",
            1,
            "a storage leaf (AI400X and service hosts only: a service leaf, judged against the other 15"
            " storage leaves, never the 48 DGX leaves): no cable to SSPINE1-08 (port 32)",
        ),
        Pin(
            "missing_link",
            r"SLG02-07 has 15 uplinks where its 47 peers have 16",
            1,
            "no cable to SSPINE2-15 (port 39)",
        ),
        Pin(
            "missing_link",
            r"SSPINE2-02 has 15 uplinks where its 63 peers have 16",
            1,
            "every other spine has one cable to each of its 16 cores; none to SCORE4-006 (port 31)",
        ),
        Pin(
            "missing_link",
            r"SSPINE3-03 has 15 uplinks where its 63 peers have 16",
            1,
            "no cable to SCORE4-001 (port 29)",
        ),
        Pin(
            "missing_link",
            r"SSPINE4-14 has 15 uplinks where its 63 peers have 16",
            1,
            "no cable to SCORE2-004 (port 22)",
        ),
        Pin(
            "unnamed_hca",
            r"HCA 0x0c42a10300303df7 on SLG04-13 port 10 .*'MT4123 ConnectX6   Mellanox Technologies'",
            1,
            "a storage-leaf HCA with the firmware's model string for a description",
        ),
    ],
    # r-dcs96's second card (HCA-3/4, ConnectX-5) runs FDR on r-ufm-sw226, an SX6036 (FDR switch):
    # the switch's speed, a design, not a fault (it was once flagged against the first card's EDR).
    "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt": [],
}


def test_every_capture_has_an_expectation() -> None:
    assert set(CAPTURES) == set(EXPECTED_ANOMALIES)


@pytest.mark.parametrize("name", sorted(EXPECTED_ANOMALIES))
def test_anomalies_on_real_captures(name: str) -> None:
    """Every anomaly of the capture matches one pin, and each pin matches its count exactly."""
    fabric = read_ibnetdiscover(CAPTURES[name])
    found = find_anomalies(fabric, classify(fabric))
    pins = EXPECTED_ANOMALIES[name]
    matched: Counter[int] = Counter()
    for a in found:
        hits = [i for i, p in enumerate(pins) if p.kind == a.kind and re.match(p.subject, a.message)]
        assert len(hits) == 1, f"{a.kind}: {a.message} matches {len(hits)} pins"
        matched[hits[0]] += 1
    assert [matched[i] for i in range(len(pins))] == [p.times for p in pins]
    assert all(p.reason for p in pins)


def test_superpod_classification() -> None:
    f = read_ibnetdiscover(CAPTURES["topograph-dgx-ndr-superpod-622nodes.txt"])
    c = classify(f)
    assert c.tier_counts() == {1: 31, 2: 9}
    assert c.rail_optimized and c.rail_indexes == (0, 1, 4, 5)
    assert len(c.groups) == 8
    roles = Counter(n.role for n in c.nodes.values())
    assert roles[Role.AGGREGATION] == 40 and roles[Role.UNNAMED] == 74
    # Per-rail identity: every leaf keeps its own rail, the four leaves of a full unit differ.
    assert [len(g.leaves) for g in c.groups] == [3, 4, 4, 4, 4, 4, 4, 4]
    for g in c.groups[1:]:
        assert sorted(r for leaf in g.leaves if (r := c.nodes[leaf].rail) is not None) == [0, 1, 2, 3]
    # Unnamed HCAs are never merged into a host called "localhost" or "ubuntu".
    assert "localhost" not in c.hosts and "ubuntu" not in c.hosts
    # HCA-6 (1-based) and mlx5_5 are the same rail.
    hca6 = next(n for n in c.nodes.values() if n.adapter == "HCA-6")
    mlx55 = next(n for n in c.nodes.values() if n.adapter == "mlx5_5")
    assert hca6.rail == mlx55.rail == 3


def test_superpod_miswire_names_host_ports_and_fix() -> None:
    f = read_ibnetdiscover(CAPTURES["topograph-dgx-ndr-superpod-622nodes.txt"])
    (mis,) = [a for a in find_anomalies(f, classify(f)) if a.kind == "rail_miswire"]
    assert mis.message.startswith("b08-p1-dgx-08-c01:")
    assert "swap these cables" in mis.message
    assert {(f.nodes[p.guid].description, p.port) for p in mis.ports} == {
        ("MF0;B09-P1-IBLEAF-03-08:MQM9701/U1", 1),
        ("MF0;B09-P1-IBLEAF-04-08:MQM9701/U1", 1),
    }


def test_spine_with_storage_hosts_is_not_a_leaf() -> None:
    f = read_ibnetdiscover(CAPTURES["loginoff-qdr-fdr10-152nodes.txt"])
    c = classify(f)
    tiers = {c.nodes[g].name: c.nodes[g].tier for g in c.nodes if c.nodes[g].role is Role.SWITCH}
    assert tiers["ib7"] == tiers["ib8"] == 2
    assert all(tiers[f"ib{i}"] == 1 for i in range(1, 7))


def test_director_chassis_boards_get_tiers() -> None:
    f = read_ibnetdiscover(CAPTURES["superbench-faked-hdr-mcs8500-full-f-flags.txt"])
    c = classify(f)
    by_name = {n.name: n.tier for n in c.nodes.values() if n.role is Role.SWITCH}
    # The director's chips keep their board in the name: spine board S01, line boards L01/L02.
    assert by_name["rmd70-0101-0908-01ib1-A/S01"] == 3
    assert by_name["rmd70-0101-0908-01ib1-A/L01"] == by_name["rmd70-0101-0908-01ib1-A/L02"] == 2
    assert by_name["rmd70-0101-0919-01ib0"] == 1


def test_selene_storage_has_two_rails_and_three_tiers() -> None:
    f = read_ibnetdiscover(CAPTURES["ufm-sdk-selene-storage-hdr-edr-1407nodes.txt"])
    c = classify(f)
    # Each of the 458 DGX (luna-NNNN) has its two storage ports, mlx5_4 and mlx5_10, on the two
    # leaves of a leaf pair, each leaf carrying one of them: most multi-HCA hosts spread by index.
    # The 160 DDN appliances with HCA-1/HCA-2 on one leaf are built that way (all of them), so
    # they neither decide the rails nor are reported.
    assert c.rail_optimized and c.rail_indexes == (4, 10)
    luna = [c.nodes[g] for g in c.hosts["luna-0001"]]
    assert {n.adapter: n.rail for n in luna} == {"mlx5_4": 0, "mlx5_10": 1}
    assert len({n.leaf for n in luna}) == 2
    # SLG03-09..12 have no hosts left but reach exactly the spines of their pod: leaves, not cores.
    assert c.tier_counts() == {1: 64, 2: 64, 3: 32}


@pytest.mark.parametrize(
    ("desc", "expected"),
    [
        ("dgx-0042 mlx5_3", ("dgx-0042", "mlx5_3", 3)),
        ("node01 HCA-1", ("node01", "HCA-1", 0)),
        ("luna-0123 mlx5_6", ("luna-0123", "mlx5_6", 6)),
        ("RMD701091901003 ibp11s0f0", ("RMD701091901003", "ibp11s0f0", None)),
        ("localhost HCA-2", (None, "HCA-2", 1)),
        ("ubuntu mlx5_1", (None, "mlx5_1", 1)),
        ("MT4129 ConnectX7   Mellanox Technologies", (None, None, None)),
        ("", (None, None, None)),
        ("compute17", ("compute17", None, None)),
    ],
)
def test_hca_descriptions(desc: str, expected: tuple[object, ...]) -> None:
    assert parse_hca_description(desc) == expected


def test_switch_names() -> None:
    assert switch_name("MF0;leaf-su01-r3:MQM9700/U1") == "leaf-su01-r3"
    assert switch_name("ISR9024 Voltaire") == "ISR9024 Voltaire"


def test_uplinks_counted() -> None:
    f = read_ibnetdiscover(CAPTURES["loginoff-qdr-fdr10-152nodes.txt"])
    c = classify(f)
    ups = {c.nodes[g].name: n for g, n in c.uplinks.items() if c.nodes[g].tier == 1}
    assert ups["ib1"] == 7 and all(ups[f"ib{i}"] == 8 for i in range(2, 7))


def test_missing_link_names_only_the_pods_own_spines() -> None:
    f = read_ibnetdiscover(CAPTURES["ufm-sdk-selene-storage-hdr-edr-1407nodes.txt"])
    msgs = {
        a.message.split()[0]: a.message for a in find_anomalies(f, classify(f)) if a.kind == "missing_link"
    }
    assert "short of cables to SSPINE1-05 (0 of 1), SSPINE1-16 (0 of 1);" in msgs["SLG01-09"]
    assert "SSPINE2" not in msgs["SLG01-09"]
    assert "short of cables to SCORE4-001 (0 of 1); uncabled uplink ports: 29" in msgs["SSPINE3-03"]
