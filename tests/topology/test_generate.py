"""The fabric generator: cabling rules, planted faults, spec grammar and the two writers."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from topology.errors import ParseError, UsageError
from topology.generate import (
    PRESETS,
    Design,
    design_from_dict,
    design_to_dict,
    generate,
    ibsim_limits,
    parse_fabric_spec,
    parse_fault,
    to_ibnetdiscover,
    to_ibsim_net,
)
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Link, NodeKind


def _roles(d: Design) -> dict[str, str]:
    return {s.guid: s.role for s in d.switches}


def _cables_between(d: Design, role_a: str, role_b: str) -> Counter[tuple[str, str]]:
    """Number of cables per (lower-tier switch, upper-tier switch) pair."""
    roles = _roles(d)
    out: Counter[tuple[str, str]] = Counter()
    for lk in d.built:
        ra, rb = roles.get(lk.a.guid), roles.get(lk.b.guid)
        if (ra, rb) == (role_a, role_b):
            out[(lk.a.guid, lk.b.guid)] += 1
        elif (rb, ra) == (role_a, role_b):
            out[(lk.b.guid, lk.a.guid)] += 1
    return out


def _hca_leaf(d: Design) -> dict[str, str]:
    """HCA description -> name of the switch its cable goes to (as built)."""
    names = {s.guid: s.name for s in d.switches}
    desc = {h.guid: h.description for h in d.hcas}
    out = {}
    for lk in d.built:
        if lk.a.guid in desc:
            out[desc[lk.a.guid]] = names[lk.b.guid]
        elif lk.b.guid in desc:
            out[desc[lk.b.guid]] = names[lk.a.guid]
    return out


def test_leafspine_counts_and_even_uplinks() -> None:
    d = generate("leafspine:leaves=4,spines=2,hosts=8,radix=40,speed=HDR")
    assert Counter(s.role for s in d.switches) == {"leaf": 4, "spine": 2}
    assert len(d.hcas) == 32 and {h.description for h in d.hcas} >= {"cn0001 mlx5_0", "cn0032 mlx5_0"}
    assert Counter(_hca_leaf(d).values()) == {"leaf-01": 8, "leaf-02": 8, "leaf-03": 8, "leaf-04": 8}
    ups = _cables_between(d, "leaf", "spine")
    assert len(ups) == 8 and set(ups.values()) == {4}  # every leaf, 4 cables to each spine
    assert all(s.description.endswith(":MQM8700/U1") and s.nports == 40 for s in d.switches)
    assert {lk.speed for lk in d.built} == {"HDR"} and {lk.width for lk in d.built} == {4}


def test_rail_small_rails_units_and_names() -> None:
    d = generate("rail-small")
    assert Counter(s.role for s in d.switches) == {"leaf": 16, "spine": 4}
    assert len(d.hcas) == 64 and len({h.host for h in d.hcas}) == 8
    placed = _hca_leaf(d)
    for h in d.hcas:  # HCA r of a node in unit s sits on leaf (s, r)
        assert placed[h.description] == f"leaf-su{h.unit:02d}-r{h.index}"
    assert placed["dgx-0005 mlx5_3"] == "leaf-su02-r3"
    leaf = d.switch("leaf-su01-r3")
    assert (leaf.description, leaf.unit, leaf.rail) == ("MF0;leaf-su01-r3:MQM9700/U1", 1, 3)
    ups = _cables_between(d, "leaf", "spine")
    assert len(ups) == 16 * 4 and set(ups.values()) == {1}
    assert {lk.speed for lk in d.cables} == {"NDR"}


def test_three_tier_groups_and_even_core_uplinks() -> None:
    d = generate("rail:units=2,nodes=4,hcas=4,spines=2,core=4,radix=64")
    roles = Counter(s.role for s in d.switches)
    assert roles == {"leaf": 8, "spine": 4, "core": 4}
    unit_of: dict[str, int | None] = {s.guid: s.unit for s in d.switches}
    ups = _cables_between(d, "leaf", "spine")
    # Leaves uplink only to the spines of their own unit, evenly (4 hosts / 2 spines = 2 cables).
    assert all(unit_of[leaf] == unit_of[spine] for leaf, spine in ups)
    assert len(ups) == 8 * 2 and set(ups.values()) == {2}
    cores = _cables_between(d, "spine", "core")
    # Spine j of each unit goes to core plane j (2 cores), evenly.
    per_spine = Counter(spine for spine, _ in cores)
    assert set(per_spine.values()) == {2} and len(set(cores.values())) == 1
    assert {d.switch("spine-su01-01").guid, d.switch("spine-su02-01").guid} == {
        s for s, c in cores if c == d.switch("core-01").guid
    }


def test_presets_build_and_the_big_one_needs_ibsim_limits() -> None:
    for preset in PRESETS:
        d = generate(preset)
        ports: Counter[tuple[str, int]] = Counter()
        for lk in d.built:
            ports[(lk.a.guid, lk.a.port)] += 1
            ports[(lk.b.guid, lk.b.port)] += 1
        assert set(ports.values()) == {1}, preset  # no port cabled twice
        nports: dict[str, int] = {s.guid: s.nports for s in d.switches}
        assert all(p <= nports.get(g, 1) for g, p in ports), preset
    big = generate("superpod-64su")
    assert len(big.hcas) == 16384 and Counter(s.role for s in big.switches)["core"] == 256
    assert ibsim_limits(big)[::2] == ["-N", "-S", "-P"]
    assert ibsim_limits(generate("rail-small")) == []


def test_deterministic_and_distinct_guids() -> None:
    a, b = generate("rail-small"), generate("rail-small")
    assert a == b
    guids = [s.guid for s in a.switches] + [h.guid for h in a.hcas] + [h.port_guid for h in a.hcas]
    assert len(guids) == len(set(guids))


def _changed(d: Design) -> tuple[set[Link], set[Link]]:
    return set(d.cables) - set(d.built), set(d.built) - set(d.cables)


def test_miswire_swaps_two_hca_cables() -> None:
    d = generate("rail-small", ["miswire:dgx-0002:1:2"])
    removed, added = _changed(d)
    assert len(removed) == 2 and len(added) == 2
    placed = _hca_leaf(d)
    assert placed["dgx-0002 mlx5_1"] == "leaf-su01-r2" and placed["dgx-0002 mlx5_2"] == "leaf-su01-r1"
    assert [p.kind for p in d.planted] == ["rail_miswire", "rail_miswire"]
    hca1 = next(h for h in d.hcas if h.description == "dgx-0002 mlx5_1")
    assert d.planted[0].guids == (hca1.guid, d.switch("leaf-su01-r2").guid)
    assert d.planted[0].ports[1].port == 2


def test_missing_link_drops_one_uplink() -> None:
    d = generate("rail-small", ["missing-link:leaf-su01-r2"])
    removed, added = _changed(d)
    assert added == set() and len(removed) == 1
    (lk,) = removed
    leaf = d.switch("leaf-su01-r2").guid
    assert leaf in (lk.a.guid, lk.b.guid) and lk.end(leaf).port == 5  # first uplink (4 hosts)
    assert d.planted[0].kind == "missing_link" and d.planted[0].guids[0] == leaf


def test_missing_hca_removes_the_card_and_reports_missing_link() -> None:
    d = generate("rail-small", ["missing-hca:dgx-0003:5"])
    removed, added = _changed(d)
    assert added == set() and len(removed) == 1
    gone = [h for h in d.hcas if not h.present]
    assert [h.description for h in gone] == ["dgx-0003 mlx5_5"] and len(d.present_hcas()) == 63
    assert d.planted[0].kind == "missing_link"
    assert d.planted[0].guids == (gone[0].guid, d.switch("leaf-su01-r5").guid)


def test_degraded_width_and_speed_change_only_that_cable() -> None:
    d = generate("rail-small", ["degraded-width:leaf-su01-r0:3", "degraded-speed:leaf-su02-r1:6"])
    removed, added = _changed(d)
    assert len(removed) == 2
    assert sorted((lk.width, lk.speed) for lk in added) == [(1, "NDR"), (4, "EDR")]
    assert [p.kind for p in d.planted] == ["degraded_link", "degraded_link"]
    assert "1xNDR instead of 4xNDR" in d.planted[0].description


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bogus", "unknown kind or preset 'bogus'"),
        ("rail:units=0", "units must be at least 1"),
        ("rail:nodes=x", "nodes='x' is not a whole number"),
        ("rail:leaves=2", "rail has no 'leaves'"),
        ("leafspine:radix=48", "radix 48 unknown"),
        ("rail:speed=XDR", "speed 'XDR' unknown"),
        ("rail:units", "'units' is not KEY=VALUE"),
        ("leafspine:hosts=39,spines=2,radix=40", "a leaf needs 39 host ports"),
        ("rail:units=9,nodes=4,hcas=8,spines=4", "a spine needs 72 ports"),
        ("rail:core=3,spines=2", "core=3 must be a multiple of spines=2"),
    ],
)
def test_bad_specs_are_one_line_usage_errors(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)) as err:
        parse_fabric_spec(spec)
    assert "\n" not in str(err.value) and repr(spec) in str(err.value)


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("unplug:leaf-su01-r0", "unknown kind 'unplug'"),
        ("miswire:dgx-0002:1", "miswire takes 3 arguments"),
        ("miswire:dgx-0999:1:2", "no host named 'dgx-0999'"),
        ("miswire:dgx-0002:1:1", "two different HCAs"),
        ("missing-hca:dgx-0002:9", "dgx-0002 has no HCA mlx5_9"),
        ("missing-link:leaf-su09-r0", "no switch named 'leaf-su09-r0'"),
        ("missing-link:leaf-su01-r0:1", "goes to an HCA"),
        ("degraded-width:leaf-su01-r0:3:4", "must be 1 or 2 lanes"),
        ("degraded-speed:leaf-su01-r0:3:HDR", "speed must be slower than HDR"),
        ("degraded-width:leaf-su01-r0:60", "leaf-su01-r0 port 60 has no cable"),
    ],
)
def test_bad_faults_name_the_fault(fault: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)) as err:
        generate("rail-small", [fault])
    assert repr(fault) in str(err.value)


def test_two_faults_on_one_cable_are_refused() -> None:
    with pytest.raises(UsageError, match="already changed by 'degraded-width:leaf-su01-r0:3'"):
        generate("rail-small", ["degraded-width:leaf-su01-r0:3", "missing-hca:dgx-0003:0"])
    with pytest.raises(UsageError, match="miswire needs a rail fabric"):
        generate("fattree-small", ["miswire:cn0001:0:1"])
    assert parse_fault(" missing-link:spine-01:3 ").args == ("3",)


def test_json_round_trip_and_bad_json() -> None:
    d = generate("rail-small", ["miswire:dgx-0002:1:2", "missing-hca:dgx-0003:5"])
    assert design_from_dict(design_to_dict(d)) == d
    with pytest.raises(ParseError, match="not an ibfab design"):
        design_from_dict({"format": "ibfab-design/1", "spec": "rail-small"})


def test_ibnetdiscover_round_trip_counts_speeds_and_faults() -> None:
    d = generate(
        "rail-small", ["missing-hca:dgx-0003:5", "degraded-width:leaf-su01-r0:3", "missing-link:leaf-su01-r2"]
    )
    text = to_ibnetdiscover(d)
    fabric = parse_ibnetdiscover(text.splitlines(), "generated")
    assert len(fabric.switches()) == 20 and len(fabric.hcas()) == 63
    assert len(fabric.links) == len(d.built) == 128 - 2
    speeds = Counter((lk.width, lk.speed) for lk in fabric.links)
    assert speeds == {(4, "NDR"): 125, (1, "NDR"): 1}
    leaf = fabric.node(d.switch("leaf-su01-r0").guid)
    assert leaf.description == "MF0;leaf-su01-r0:MQM9700/U1" and leaf.lid == 1 and leaf.devid == 0xD2F0
    assert sorted(n.lid for n in fabric.switches() if n.lid) == list(range(1, 21))
    hca_lids = [int(m) for m in re.findall(r"^\[1\]\(\w+\) \t\S+\t\t# lid (\d+) lmc 0", text, re.MULTILINE)]
    assert sorted(hca_lids) == list(range(21, 84))
    hca = next(n for n in fabric.hcas() if n.description == "dgx-0001 mlx5_0")
    assert hca.kind is NodeKind.HCA and hca.vendid == 0x2C9
    assert '"S-0c42a10300a00000"[1]\t\t# lid 21 lmc 0 "MF0;leaf-su01-r0:MQM9700/U1" lid 1 4xNDR' in text


def test_ibnetdiscover_of_a_three_tier_fabric_is_connected() -> None:
    d = generate("rail-3tier")
    fabric = parse_ibnetdiscover(to_ibnetdiscover(d).splitlines())
    import networkx as nx

    assert nx.is_connected(fabric.graph()) and len(fabric.nodes) == len(d.switches) + len(d.hcas)


def test_net_file_annotates_degraded_links_on_both_ends_and_runs_ndr_as_hdr() -> None:
    d = generate("rail-small", ["degraded-width:leaf-su01-r0:3", "degraded-speed:leaf-su02-r1:6"])
    net = to_ibsim_net(d)
    assert not [ln for ln in net.splitlines() if ln.startswith("[") and "NDR" in ln]
    assert '[3] "dgx-0003 mlx5_0"[1]  # "dgx-0003 mlx5_0" lid 0 1xHDR' in net
    assert '[1] "leaf-su01-r0"[3]  # lid 0 lmc 0 "MF0;leaf-su01-r0:MQM9700/U1" lid 0 1xHDR' in net
    assert '[6] "spine-02"[10]  # "MF0;spine-02:MQM9700/U1" lid 0 4xEDR' in net
    assert '[10] "leaf-su02-r1"[6]  # "MF0;leaf-su02-r1:MQM9700/U1" lid 0 4xEDR' in net
    assert net.count("1xHDR") == 2 and net.count("4xEDR") == 2
    # The first record is an HCA: the simulator's default attach point (OpenSM, the tools).
    first = next(ln for ln in net.splitlines() if ln.startswith(("Ca ", "Switch ")))
    assert first == 'Ca 1 "dgx-0001 mlx5_0" # "dgx-0001 mlx5_0"'
    assert net.count('Switch 64 "') == 20 and "enhanced port 0" in net and "\nextspeed=7\n" in net


def test_the_simulator_notes_say_when_it_runs_other_speeds_than_designed() -> None:
    """ibsim 0.10 has no NDR: an NDR design runs at HDR there, and the lab says so (the demo's
    "1xNDR instead of 4xNDR" was discovered as 1xHDR with no word why); an HDR design runs as is."""
    from topology.generate_text import simulator_notes

    ndr = generate("rail-small")
    assert ndr.speed == "NDR"
    (note,) = simulator_notes(ndr)
    assert note.startswith("ibsim 0.10 has no NDR: the design's NDR links run at HDR")
    hdr = generate("fattree-small")
    assert hdr.speed != "NDR" and simulator_notes(hdr) == ()
