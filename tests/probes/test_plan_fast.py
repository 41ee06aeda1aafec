"""The sweep planner (pairwise by whole arrays, coverage and bound by round or by column, the
garbage collector paused) makes its oracle's plan (tests/oracles/plan.py, probe by probe): the
same probes in the same order, rounds, bound and reason, coverage, notes and paths, on every real ibnetdiscover capture
of tests/data/realdata and on generated fabrics (a miswired host has two HCAs on one rail, missing HCAs
leave hosts uneven); with OpenSM's routes on a lab in tests/integration/test_plan_lab.py."""

from __future__ import annotations

import gc
from dataclasses import replace
from pathlib import Path

import pytest

from fabric.app.discovery.discover import discover_text
from probes.plan import PATTERNS, SweepPlan, plan_sweep
from tests.conftest import realdata_files
from tests.oracles.plan import plan_sweep_oracle
from topology.classify import classify
from topology.errors import IbfabError
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover

CUSTOM = "1 dgx-0001 dgx-0005\n2 dgx-0002:mlx5_3 dgx-0006:mlx5_3\n1 dgx-0002 dgx-0006\n"


def assert_same_plan(fast: SweepPlan, simple: SweepPlan) -> None:
    assert fast.probes == simple.probes  # order included
    assert fast == simple
    assert fast.to_dict() == simple.to_dict()


def _both(*args: object, **kwargs: object) -> tuple[SweepPlan, SweepPlan]:
    return plan_sweep(*args, **kwargs), plan_sweep_oracle(*args, **kwargs)  # type: ignore[arg-type]


CAPTURES = [p for p in realdata_files("ibnetdiscover")]


@pytest.mark.parametrize("capture", CAPTURES, ids=[p.name for p in CAPTURES])
def test_real_captures_plan_the_same_both_ways(capture: Path) -> None:
    try:
        found = discover_text(capture.read_text(encoding="utf-8", errors="replace"), str(capture))
    except IbfabError:
        pytest.skip("not a fabric ibfab reads")
    planned = 0
    for pattern in ("pairwise", "rail-pairs", "leaf-pairs"):
        for per_host in (False, True):
            if pattern == "pairwise" and per_host and len(found.classification.hosts) > 300:
                continue  # the oracle's all-pairs walk takes 12 s a plan at 628 hosts: compared once
            try:
                fast, simple = _both(found.fabric, found.classification, pattern, per_host=per_host)
            except IbfabError:  # fewer than two named hosts: both ways refuse it
                with pytest.raises(IbfabError):
                    plan_sweep_oracle(found.fabric, found.classification, pattern, per_host=per_host)
                continue
            assert_same_plan(fast, simple)
            planned += len(fast.probes)
    assert planned or len(found.classification.hosts) < 2  # one host has no pair


@pytest.mark.parametrize(
    ("spec", "faults"),
    [
        ("rail-small", ()),
        ("rail-small", ("miswire:dgx-0002:1:2",)),  # dgx-0002 has two HCAs on one rail
        ("rail-3tier", ("missing-hca:dgx-0003:0", "missing-hca:dgx-0004:3")),
        ("fattree-small", ()),
        ("superpod-1su", ("missing-hca:dgx-0032:7",)),
    ],
)
def test_generated_fabrics_plan_the_same_both_ways(spec: str, faults: tuple[str, ...]) -> None:
    fabric = parse_ibnetdiscover(to_ibnetdiscover(generate(spec, faults)).splitlines(), spec)
    cls = classify(fabric)
    for pattern in PATTERNS:
        for per_host in (False, True):
            text = CUSTOM if pattern == "custom" else None
            if text is not None and (per_host or spec != "rail-small"):
                continue  # its fixed rounds hold a host twice, and name rail-small's hosts
            fast, simple = _both(fabric, cls, pattern, per_host=per_host, pairs_text=text)
            assert_same_plan(fast, simple)
            assert fast.probes and fast.rounds >= fast.lower_bound


def test_the_collector_is_paused_only_while_planning() -> None:
    fabric = parse_ibnetdiscover(to_ibnetdiscover(generate("rail-small")).splitlines(), "rail-small")
    assert gc.isenabled()
    plan_sweep(fabric, classify(fabric), "pairwise")
    assert gc.isenabled()
    gc.disable()
    try:
        plan_sweep(fabric, classify(fabric), "pairwise")
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()


@pytest.mark.parametrize("per_host", [False, True])
def test_hosts_with_two_hcas_on_one_rail_plan_the_same_both_ways(
    monkeypatch: pytest.MonkeyPatch, per_host: bool
) -> None:
    """No generator or capture here has them (a NIC moved to another rail's leaf would): the
    endpoints of rail-small with every host's mlx5_1 on its mlx5_0's rail, and one host's on rail 5."""
    import probes.plan as planner

    fabric = parse_ibnetdiscover(to_ibnetdiscover(generate("rail-small")).splitlines(), "rail-small")
    cls = classify(fabric)
    eps = planner.endpoints(fabric, cls)
    rail_of = {ep.host: ep.rail for ep in eps if ep.device == "mlx5_0"}
    moved = [
        replace(ep, rail=5 if ep.host == "dgx-0003" else rail_of[ep.host]) if ep.device == "mlx5_1" else ep
        for ep in eps
    ]
    monkeypatch.setattr(planner, "endpoints", lambda fabric, cls, include_service=False: list(moved))
    fast, simple = _both(fabric, cls, "pairwise", per_host=per_host)
    assert_same_plan(fast, simple)
    assert {p.client.device for p in fast.probes if p.server.device == "mlx5_1"} >= {"mlx5_0"}
