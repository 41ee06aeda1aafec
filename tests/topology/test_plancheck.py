"""Fabric against cable plan: a plan exported from a clean fabric, faults planted, the check finds
exactly them; a clean fabric against its own plan reports nothing; real captures round-trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REALDATA, realdata_files
from topology.cableplan import CablePlan, format_cable_plan, parse_cable_plan, read_cable_plan
from topology.generate import Design, generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover_text, read_ibnetdiscover
from topology.model import Fabric, Link, PortRef
from topology.plancheck import PlanCheck, PlanFinding, Verdict, check_plan, check_to_dict, plan_rows
from topology.plannames import FabricNames, Found

# The generator's planted-fault kinds and the verdict the plan check gives each.
VERDICT_OF = {
    "rail_miswire": Verdict.MISWIRED,
    "missing_link": Verdict.MISSING,
    "degraded_link": Verdict.BELOW_PLAN,
}
CAPTURES = [p for p in realdata_files("ibnetdiscover")]


def fabric_of(design: Design) -> Fabric:
    return parse_ibnetdiscover_text(to_ibnetdiscover(design), "generated")


def exported_plan(fabric: Fabric, **kw: bool) -> CablePlan:
    return parse_cable_plan(format_cable_plan(plan_rows(fabric), **kw), "plan.csv")


def touched(f: PlanFinding, clean_names: FabricNames) -> set[PortRef]:
    """The ports a finding is about: its fabric cables' ends and its planned cables' ends (named
    against the clean fabric, where an absent HCA still exists)."""
    ports = {end for lk in f.actual for end in (lk.a, lk.b)}
    for cable in f.expected:
        for end in (cable.start, cable.end):
            r = clean_names.resolve(end)
            assert r.status is Found.FOUND and r.ref is not None
            ports.add(r.ref)
    return ports


def assert_exactly_planted(check: PlanCheck, design: Design, clean: Fabric) -> None:
    names = FabricNames(clean)
    assert not check.unchecked, [f.message for f in check.unchecked]
    # Each planted fault is reported under its verdict, on its ports ...
    by_fault: dict[str, list[PlanFinding]] = {}
    for planted in design.planted:
        hits = [
            f
            for f in check.findings
            if f.verdict is VERDICT_OF[planted.kind] and set(planted.ports) <= touched(f, names)
        ]
        assert len(hits) == 1, (planted, [f.message for f in check.findings])
        by_fault.setdefault(planted.fault, []).extend(hits)
    # ... a swap of two cables is one item (both planted records point at it) ...
    for fault, hits in by_fault.items():
        assert len({id(h) for h in hits}) == 1, fault
    # ... and nothing else is reported.
    explained = {id(h) for hits in by_fault.values() for h in hits}
    assert [f.message for f in check.findings if id(f) not in explained] == []
    for f in check.findings:
        assert f.evidence, f.message


@pytest.mark.parametrize("spec", ["rail-small", "fattree-small", "rail-3tier"])
def test_clean_fabric_matches_its_own_plan(spec: str) -> None:
    fabric = fabric_of(generate(spec))
    for kw in ({}, {"with_speed": False}):
        plan = exported_plan(fabric, **kw)
        check = check_plan(plan, fabric)
        assert not check.findings and not check.unchecked and not check.differs
        assert check.matched == check.planned == len(fabric.links)
        assert check.not_covered == 0 and check.internal == 0


FAULTS = [
    ("rail-small", ("miswire:dgx-0002:1:2",)),
    ("rail-small", ("missing-link:leaf-su01-r2",)),
    ("rail-small", ("missing-hca:dgx-0003:5",)),
    ("rail-small", ("degraded-width:leaf-su01-r0:1",)),
    ("rail-small", ("degraded-speed:leaf-su02-r1:5",)),
    ("fattree-small", ("missing-link:leaf-02", "degraded-width:leaf-01:1")),
    ("rail-3tier", ("missing-link:spine-su01-01",)),
    (
        "rail-small",
        (
            "miswire:dgx-0002:1:2",
            "miswire:dgx-0004:0:7",
            "missing-link:leaf-su01-r2",
            "missing-hca:dgx-0003:5",
            "degraded-width:leaf-su01-r0:1",
            "degraded-speed:leaf-su02-r1:5",
        ),
    ),
]


@pytest.mark.parametrize(("spec", "faults"), FAULTS, ids=["+".join(f) for _, f in FAULTS])
def test_planted_faults_found_exactly(spec: str, faults: tuple[str, ...]) -> None:
    clean = fabric_of(generate(spec))
    design = generate(spec, faults)
    faulty = fabric_of(design)
    check = check_plan(exported_plan(clean), faulty)
    assert check.differs
    assert_exactly_planted(check, design, clean)
    data = check_to_dict(check, faulty)
    assert data["summary"]["differs"] is True
    assert len(data["findings"]) == len(check.findings)


def test_swap_names_both_ends_expected_and_actual() -> None:
    clean = fabric_of(generate("rail-small"))
    faulty = fabric_of(generate("rail-small", ("miswire:dgx-0002:1:2",)))
    (f,) = check_plan(exported_plan(clean), faulty).findings
    assert f.verdict is Verdict.MISWIRED and len(f.expected) == 2 and len(f.actual) == 2
    assert {c.start.device for c in f.expected} | {c.end.device for c in f.expected} >= {"dgx-0002"}
    assert "dgx-0002/mlx5_1: cabled to" in "\n".join(f.evidence)
    assert "dgx-0002/mlx5_2: cabled to" in "\n".join(f.evidence)


def test_without_speed_column_a_slow_cable_is_not_judged() -> None:
    clean = fabric_of(generate("rail-small"))
    faulty = fabric_of(generate("rail-small", ("degraded-width:leaf-su01-r0:1",)))
    assert not check_plan(exported_plan(clean, with_speed=False), faulty).findings


def test_extra_cable_is_not_in_plan_and_scope_is_respected() -> None:
    clean = fabric_of(generate("rail-small"))
    plan = exported_plan(clean)
    # Leave one switch-to-switch cable out of the plan: the fabric has a cable the plan lacks.
    names = FabricNames(clean)
    uplink = next(
        lk for lk in clean.links if clean.nodes[lk.a.guid].kind.value == clean.nodes[lk.b.guid].kind.value
    )
    ends = {names.spell(uplink.a).key, names.spell(uplink.b).key}
    kept = tuple(c for c in plan.cables if {c.start.key, c.end.key} != ends)
    check = check_plan(CablePlan(kept, plan.sources), clean)
    (f,) = check.findings
    assert f.verdict is Verdict.NOT_IN_PLAN and f.actual == (uplink,)
    # A plan of switch-to-switch cables only says nothing about host cables.
    switch_only = tuple(c for c in plan.cables if not c.start.device.startswith("dgx"))
    switch_only = tuple(c for c in switch_only if not c.end.device.startswith("dgx"))
    check = check_plan(CablePlan(switch_only, plan.sources), clean)
    assert not check.findings and check.not_covered == len(clean.links) - len(switch_only)


def test_unclear_names_are_unchecked_not_guessed() -> None:
    fabric = read_ibnetdiscover(REALDATA / "ibnetdiscover" / "garyli-ibdiagnet2-ndr-272nodes-label-ports.txt")
    # Eight leaves share one NodeDescription; a host has eight HCAs.
    text = (
        "#StartDevice,StartPort,EndDevice,EndPort,LinkType\n"
        "Quantum-2 Mellanox Technologies,Port 1,ib-switch-sequoia,Port 1,Data\n"
        "is-north-7-compute-1,IB Port 1,ib-switch-sequoia,Port 2,Data\n"
    )
    check = check_plan(parse_cable_plan(text, "p"), fabric)
    assert len(check.unchecked) == 2 and all(f.verdict is Verdict.UNCHECKED for f in check.unchecked)
    assert "8 nodes are named" in check.unchecked[0].message
    assert "does not say which" in check.unchecked[1].message
    # The fabric cables on those planned ports are not called "not in the plan".
    assert all(f.verdict is not Verdict.NOT_IN_PLAN or "sequoia" not in f.message for f in check.findings)


def test_director_blade_ports_map_to_line_board_asics() -> None:
    fabric = read_ibnetdiscover(REALDATA / "ibnetdiscover" / "superbench-faked-hdr-mcs8500-full-f-flags.txt")
    text = (
        "#StartDevice,StartPort,EndDevice,EndPort,LinkType\n"
        # right: leaf 01 port 25 is cabled to line board L01 ASIC U1 port 1
        "RMD70-0101-0919-01IB0,Port 25,rmd70-0101-0908-01ib1-a,Blade 1_Port 1/1,Data\n"
        # wrong: leaf 02 port 25 goes to L01/U1 port 2, not to L02
        "rmd70-0101-0919-02ib0,Port 25,rmd70-0101-0908-01ib1-A,Blade 2_Port 1/2,Data\n"
        # a line board the director does not have
        "rmd70-0101-0919-03ib0,Port 30,rmd70-0101-0908-01ib1-A,Blade 9_Port 1/1,Data\n"
    )
    check = check_plan(parse_cable_plan(text, "dir.csv"), fabric)
    assert check.matched == 1
    # The three other leaf-to-director cables of planned nodes are cabled but not in this plan.
    verdicts = sorted(f.verdict.value for f in check.findings)
    assert verdicts == ["missing", "miswired", "not_in_plan", "not_in_plan", "not_in_plan"]
    missing = next(f for f in check.findings if f.verdict is Verdict.MISSING)
    assert "no line board L09/U1" in missing.message
    miswired = next(f for f in check.findings if f.verdict is Verdict.MISWIRED)
    assert "rmd70-0101-0908-01ib1-A/Blade 1_Port 1/2" in miswired.message
    # The director's backplane (line boards to its spine board) is never "not in the plan".
    assert check.internal > 0
    assert all("/S01" not in f.message for f in check.findings)


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_real_capture_matches_its_own_export(path: Path) -> None:
    try:
        fabric = read_ibnetdiscover(path)
    except Exception as exc:  # captures the ibnetdiscover tests expect to refuse
        pytest.skip(f"not a readable capture: {exc}")
    check = check_plan(exported_plan(fabric), fabric)
    assert not check.findings and not check.unchecked
    assert check.matched + check.internal == len(fabric.links)


def test_real_plans_against_an_unrelated_fabric_say_absent_devices() -> None:
    plan = read_cable_plan(REALDATA / "ndt" / "ufm-ndt-other_ndts-ndt.csv")
    fabric = fabric_of(generate("rail-small"))
    check = check_plan(plan, fabric)
    assert check.matched == 0
    assert "DSM07-0101-0806-01IB0" in check.absent_devices
    # Conflicting plan rows are unchecked, the rest are missing from this fabric.
    assert check.count(Verdict.UNCHECKED) == sum(len(c.cables) for c in plan.conflicts)
    assert check.count(Verdict.MISSING) + check.count(Verdict.UNCHECKED) == len(plan.cables)
    assert not [f for f in check.findings if f.verdict is Verdict.NOT_IN_PLAN]


def test_link_order_does_not_matter() -> None:
    a, b = PortRef("0x1", 1), PortRef("0x2", 3)  # type: ignore[arg-type]
    assert Link(a, b, 4, "HDR") == Link(b, a, 4, "HDR")
