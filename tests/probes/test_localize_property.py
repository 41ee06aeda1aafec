"""Localization over random single faults on lab fabrics (real OpenSM routes, simulated traffic).

One fault at a time, anywhere a sweep's pairs cross: a cable trained at 1x or 2x, one speed
lower, or a port dropping 10-90 % of what arrives. Whenever the sweep sees it (some pair slow),
the planted cable is among the top suspects and nothing else is suspected; when the pattern's own
contention hides it, nothing at all is suspected. Clean fabrics give no suspect for any pattern.
bench/bench_localize.py prints the top-1 rate over many more faults.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.localize_faults import Shape, random_fault, shape, sweep, verdict

SPECS = ("rail-small", "fattree-small", "rail-3tier")
PATTERNS = ("rail-pairs", "pairwise", "leaf-pairs")

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Shape]]:
    # Module scope: the per-test IBFAB_LAB_DIR is not set yet, so give the labs their own.
    mp = pytest.MonkeyPatch()
    mp.setenv("IBFAB_LAB_DIR", str(tmp_path_factory.mktemp("labs")))
    try:
        yield {spec: shape(spec, "prop") for spec in SPECS}
    finally:
        mp.undo()


@pytest.mark.parametrize("pattern", PATTERNS)
def test_clean_fabrics_give_no_suspect(shapes: dict[str, Shape], pattern: str) -> None:
    for spec, s in shapes.items():
        outcome = sweep(s, pattern, None)
        assert all(r.ok for r in outcome.results), (spec, pattern)
        assert outcome.suspects == () and outcome.unexplained == [], (spec, pattern)


@settings(max_examples=45, deadline=None)
@given(spec=st.sampled_from(SPECS), pattern=st.sampled_from(PATTERNS), seed=st.integers(0, 2**32 - 1))
def test_a_single_fault_seen_by_the_sweep_is_the_top_suspect_and_alone(
    shapes: dict[str, Shape], spec: str, pattern: str, seed: int
) -> None:
    s = shapes[spec]
    fault = random_fault(random.Random(seed), s, pattern)
    outcome = sweep(s, pattern, fault)
    seen = any(not r.ok for r in outcome.results)
    if not seen:  # the pattern's own contention hid it: quiet, never a wrong cable
        assert outcome.suspects == (), str(fault)
        return
    assert verdict(outcome, fault) in ("top1", "tie"), (str(fault), outcome.suspects[:3])
    top_group = outcome.suspects[0].group
    assert all(x.group == top_group for x in outcome.suspects), str(fault)
    assert outcome.unexplained == [], str(fault)
    if verdict(outcome, fault) == "top1" and fault.port is not None:
        # a port dropping what arrives slows one direction: the suspect names the end data leaves
        far = fault.link.b if (fault.link.a.guid, fault.link.a.port) == fault.port else fault.link.a
        assert outcome.suspects[0].direction == far.guid, str(fault)
