"""The sweep planner's fast path makes the simple path's plan with OpenSM's routes too: a lab
(ibsim + the real OpenSM), its discovery and forwarding tables, every pattern, per HCA and per
host (tests/probes/test_plan_fast.py compares them without routes on real captures)."""

from __future__ import annotations

import pytest

from fabric.app.discovery.discover import discover
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.lab import simulator as lab
from fabric.lab.driver import LabDriver
from probes.plan import PATTERNS, plan_sweep
from tests.oracles.plan import plan_sweep_oracle
from tests.probes.test_plan_fast import CUSTOM, assert_same_plan

pytestmark = pytest.mark.lab


@pytest.mark.parametrize("spec", ["rail-small", "rail-3tier"])
def test_plans_with_the_labs_routes_are_the_same_both_ways(spec: str) -> None:
    lab.up(spec, (), name="routes")
    try:
        found = discover(Session(Source.lab("routes")))
        tables = LabDriver("routes").forwarding_tables()
    finally:
        lab.down("routes")
    for pattern in PATTERNS:
        for per_host in (False, True):
            if pattern == "custom" and (per_host or spec != "rail-small"):
                continue  # its fixed rounds hold a host twice, and name rail-small's hosts
            text = CUSTOM if pattern == "custom" else None
            args = (found.fabric, found.classification, pattern, tables)
            fast = plan_sweep(*args, per_host=per_host, pairs_text=text)
            simple = plan_sweep_oracle(*args, per_host=per_host, pairs_text=text)
            assert_same_plan(fast, simple)
            assert fast.coverage.from_routes and fast.paths
