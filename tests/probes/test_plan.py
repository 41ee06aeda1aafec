"""Sweep planning properties over generated fabrics of several shapes, pair files and re-tests."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import replace
from functools import cache

import pytest

from probes.expect import judge
from probes.pairs import Endpoint, PairResult
from probes.plan import SweepPlan, endpoints, outliers, plan_sweep, retest_plan
from topology.classify import Classification, classify
from topology.errors import ParseError, UsageError
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Fabric

SHAPES = (
    "rail-small",  # 2 units: one leaf pair per rail
    "rail:units=3,nodes=4,hcas=4,spines=4,radix=64",  # odd: a triangle of leaves per rail
    "rail:units=5,nodes=6,hcas=2,spines=3,radix=64",  # 6 hosts, 3 spines x 2 cables per leaf
    "rail-3tier",  # leaves -> unit spines -> cores
    "fattree-small",  # not rail-optimized: 4 leaves x 8 hosts, 8 uplinks each
    "leafspine:leaves=3,spines=4,hosts=2,cables=2,radix=40",  # 8 uplinks but 2 hosts: 4 layers needed
)


@cache
def fabric_of(spec: str) -> tuple[Fabric, Classification]:
    f = parse_ibnetdiscover(to_ibnetdiscover(generate(spec)).splitlines(), spec)
    return f, classify(f)


def assert_rounds_have_no_conflicts(plan: SweepPlan) -> None:
    for r in range(plan.rounds):
        ends = [e for p in plan.round_probes(r) for e in (p.client, p.server)]
        assert len({e.guid for e in ends}) == len(ends), f"an HCA twice in round {r}"
        if plan.per_host:
            per_host = Counter(e.host for e in ends)
            assert len(per_host) == len(ends), f"a host twice in round {r}"


@pytest.mark.parametrize("spec", SHAPES)
@pytest.mark.parametrize("per_host", [False, True])
def test_rail_pairs_cover_every_leaf_spine_cable_and_rail_within_one_round_of_the_bound(
    spec: str, per_host: bool
) -> None:
    f, cls = fabric_of(spec)
    plan = plan_sweep(f, cls, "rail-pairs", per_host=per_host)
    cov = plan.coverage
    assert cov.cables_total > 0 and cov.cables_covered == cov.cables_total, cov.uncovered[:3]
    assert cov.rails_covered == cov.rails_total and cov.short_leaves == ()
    assert_rounds_have_no_conflicts(plan)
    assert plan.lower_bound <= plan.rounds <= plan.lower_bound + 1
    for p in plan.probes:
        assert p.client.rail == p.server.rail and p.client.leaf != p.server.leaf
    # Every HCA of the fabric takes part.
    assert {e.guid for p in plan.probes for e in (p.client, p.server)} == {e.guid for e in endpoints(f, cls)}


def test_rail_pairs_bound_from_uplinks_when_leaves_have_few_hosts() -> None:
    f, cls = fabric_of("leafspine:leaves=3,spines=4,hosts=2,cables=2,radix=40")
    plan = plan_sweep(f, cls, "rail-pairs")
    assert plan.lower_bound == 4 and "needs 4 rounds" in plan.bound_reason  # 8 uplinks / 2 hosts
    assert plan.rounds in (4, 5)


def test_single_leaf_rails_are_reported_not_hidden() -> None:
    f, cls = fabric_of("superpod-1su")
    plan = plan_sweep(f, cls, "rail-pairs")
    assert len(plan.notes) == 8 and "one leaf" in plan.notes[0]
    assert plan.coverage.cables_covered == 0  # rail-matched pairs of one unit stay on their leaf


@pytest.mark.parametrize("spec", ["rail-small", "fattree-small", "rail:units=3,nodes=3,hcas=2,spines=2"])
def test_pairwise_is_every_host_pair_once_in_n_minus_1_rounds(spec: str) -> None:
    f, cls = fabric_of(spec)
    plan = plan_sweep(f, cls, "pairwise")
    hosts = sorted({e.host for e in endpoints(f, cls)})
    pairs = Counter(frozenset((p.client.host, p.server.host)) for p in plan.probes)
    rails = len({e.rail for e in endpoints(f, cls)})
    assert set(pairs) == {frozenset(x) for x in itertools.combinations(hosts, 2)}
    assert set(pairs.values()) == {rails}
    # Circle method: n-1 rounds, n rounds for odd n (each host sits one out; K_n with n odd needs n).
    assert plan.rounds == len(hosts) - 1 + len(hosts) % 2
    assert plan.lower_bound == len(hosts) - 1
    assert_rounds_have_no_conflicts(plan)


@pytest.mark.parametrize("spec", ["rail-small", "fattree-small", "rail-3tier"])
def test_leaf_pairs_is_one_pair_per_leaf_pair(spec: str) -> None:
    f, cls = fabric_of(spec)
    plan = plan_sweep(f, cls, "leaf-pairs")
    leaves = sorted(cls.leaves())
    got = Counter(frozenset((p.client.leaf, p.server.leaf)) for p in plan.probes)
    assert set(got) == {frozenset(x) for x in itertools.combinations(leaves, 2)}
    assert set(got.values()) == {1}
    assert all(p.client.host != p.server.host for p in plan.probes)
    assert_rounds_have_no_conflicts(plan)
    assert plan.rounds <= plan.lower_bound + 1


def test_unknown_pattern_is_a_usage_error() -> None:
    f, cls = fabric_of("rail-small")
    with pytest.raises(UsageError, match="sweep pattern 'ring'"):
        plan_sweep(f, cls, "ring")


def test_custom_pair_file_hosts_devices_and_fixed_rounds() -> None:
    f, cls = fabric_of("rail-small")
    text = (
        "# round client server\n1 dgx-0001 dgx-0005\n2 dgx-0002:mlx5_3 dgx-0006:mlx5_3\n1 dgx-0002 dgx-0006\n"
    )
    plan = plan_sweep(f, cls, "custom", pairs_text=text, pairs_source="pairs.txt")
    assert len(plan.probes) == 8 + 1 + 8
    assert plan.rounds == 2
    assert [p.client.label for p in plan.round_probes(1)] == ["dgx-0002:mlx5_3"]
    unordered = "dgx-0001 dgx-0005\ndgx-0001:mlx5_0 dgx-0006:mlx5_0\n"
    plan2 = plan_sweep(f, cls, "custom", pairs_text=unordered)
    assert plan2.rounds == 2  # dgx-0001 mlx5_0 is in both pairs: scheduled apart


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("1 dgx-0001 dgx-9999\n", r"pairs.txt:1: .*no host 'dgx-9999'"),
        ("dgx-0001:mlx5_9 dgx-0005\n", r"pairs.txt:1: .*no HCA 'mlx5_9'"),
        ("1 dgx-0001 dgx-0005\ndgx-0002 dgx-0006\n", r"pairs.txt:2: .*every line or on none"),
        (
            "1 dgx-0001 dgx-0005\n1 dgx-0001:mlx5_0 dgx-0007:mlx5_0\n",
            r"pairs.txt:2: .*already in round 1 \(line 1\)",
        ),
        ("dgx-0001 dgx-0001\n", r"pairs.txt:1: .*same host"),
        ("0 dgx-0001 dgx-0005\n", r"pairs.txt:1: .*from 1"),
        ("dgx-0001\n", r"pairs.txt:1: .*ROUND\] CLIENT SERVER"),
    ],
)
def test_bad_pair_files_name_the_line(text: str, problem: str) -> None:
    f, cls = fabric_of("rail-small")
    with pytest.raises(ParseError, match=problem):
        plan_sweep(f, cls, "custom", pairs_text=text, pairs_source="pairs.txt")


def _results(gbps: Sequence[float | None]) -> list[PairResult]:
    f, cls = fabric_of("rail-small")
    eps = endpoints(f, cls)
    return [
        PairResult(eps[2 * i], eps[2 * i + 1], 0, g, 400.0, g is not None, None if g else "failed")
        for i, g in enumerate(gbps)
    ]


def test_outliers_are_the_pairs_judged_slow_or_failed() -> None:
    res = judge(
        [replace(r, expected_gbps=400.0) for r in _results([390.0, 363.0, 362.0, None, 100.0])], 0.975
    )
    bad = outliers(res)
    assert [r.gbps for r in bad] == [362.0, None, 100.0]  # 363 >= 0.93 * 0.975 * 400 = 362.7
    assert all(not r.ok for r in bad) and bad[0].error is not None and bad[0].error.startswith("slow: 362")


def test_retest_halves_concurrency_and_keeps_hcas_apart() -> None:
    res = judge([replace(r, expected_gbps=400.0) for r in _results([390.0] + [100.0] * 7)], 0.975)
    plan = retest_plan(res, concurrency=8)
    assert plan.concurrency == 4 and len(plan.probes) == 7 and len(plan.outliers) == 7
    per_round: dict[int, list[Endpoint]] = defaultdict(list)
    for p in plan.probes:
        per_round[p.round] += [p.client, p.server]
    assert max(len(v) // 2 for v in per_round.values()) <= 4
    assert all(len(set(v)) == len(v) for v in per_round.values())
    assert retest_plan(res[:1], 8).probes == ()
