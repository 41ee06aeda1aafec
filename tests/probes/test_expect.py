"""What a probe's route should give in its round, the sweep's efficiency, and the slow verdict."""

from __future__ import annotations

import pytest

from probes.expect import SLOW_RATIO, efficiency, is_slow, judge, route_rates, with_route
from probes.pairs import Endpoint, PairResult, Probe
from tests.topology.test_routes import H1, H2, H3, L1, L2, S2, TABLES, small_fabric
from topology.classify import classify
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Guid, Link
from topology.route_pairs import pair_route

E1, E2, E3 = (
    Endpoint(n, "mlx5_0", g, leaf, 0) for n, g, leaf in (("n1", H1, L1), ("n2", H2, L2), ("n3", H3, L1))
)


def _paths() -> dict[tuple[Guid, Guid], tuple[Link, ...]]:
    f = small_fabric()
    return {(a, b): pair_route(f, TABLES, a, b) for a, b in ((H1, H2), (H3, H2), (H2, H1), (H1, H3))}


def test_a_probe_alone_should_get_its_narrowest_link() -> None:
    rates = route_rates([Probe(E1, E2, 0)], _paths(), {})
    assert rates[(H1, H2)].gbps == 400.0 and rates[(H1, H2)].sharing == 1


def test_probes_of_a_round_crossing_a_link_the_same_way_share_it() -> None:
    # n1 and n3 both write to n2 up leaf-1 port 11 and down n2's cable: half each.
    rates = route_rates([Probe(E1, E2, 0), Probe(E3, E2, 0)], _paths(), {})
    assert [rates[k].gbps for k in ((H1, H2), (H3, H2))] == [200.0, 200.0]
    assert rates[(H1, H2)].sharing == 2
    # The other direction is another channel: n2 -> n1 beside n1 -> n2 shares nothing.
    both_ways = route_rates([Probe(E1, E2, 0), Probe(E2, E1, 0)], _paths(), {})
    assert [r.gbps for r in both_ways.values()] == [400.0, 400.0]


def test_a_link_below_its_peers_is_expected_at_its_peers_rate() -> None:
    f = small_fabric()
    uplink = pair_route(f, TABLES, H1, H2)[1]
    assert uplink.key == ((L1, 11), (S2, 1))
    # Trained at 1x (100 Gb/s): the route should still give 400, so a pair through it is slow.
    narrow = Link(uplink.a, uplink.b, 1, uplink.speed)
    paths = {(H1, H2): [narrow if lk.key == uplink.key else lk for lk in pair_route(f, TABLES, H1, H2)]}
    assert route_rates([Probe(E1, E2, 0)], paths, {uplink.key: 400.0})[(H1, H2)].gbps == 400.0
    assert route_rates([Probe(E1, E2, 0)], paths, {})[(H1, H2)].gbps == 100.0


def test_design_rates_come_from_the_peers_of_a_degraded_cable() -> None:
    from probes.plan import plan_sweep

    design = generate("rail-small", ["degraded-width:spine-01:1"])
    fabric = parse_ibnetdiscover(to_ibnetdiscover(design).splitlines(), "rail-small")
    plan = plan_sweep(fabric, classify(fabric), "rail-pairs")
    assert len(plan.design_gbps) == 1
    ((key, gbps),) = plan.design_gbps.items()
    lk = next(lk for lk in fabric.links if lk.key == key)
    assert lk.width == 1 and gbps == lk.gbps * 4
    clean = parse_ibnetdiscover(to_ibnetdiscover(generate("rail-small")).splitlines(), "clean")
    assert plan_sweep(clean, classify(clean), "rail-pairs").design_gbps == {}


def _measured(gbps: float | None, expected: float, attempt: int = 0) -> PairResult:
    return PairResult(
        E1, E2, 0, gbps, 400.0, gbps is not None, None if gbps else "failed", "ssh", attempt, expected
    )


def test_efficiency_is_a_high_percentile_capped_at_the_line_rate() -> None:
    # Nine pairs at 95 % of their route, one that ran beside a slow pair at twice its equal share.
    results = [_measured(190.0, 200.0)] * 9 + [_measured(400.0, 200.0)]
    assert efficiency(results) == pytest.approx(0.95)
    assert efficiency([_measured(380.0, 200.0)]) == 1.0
    assert efficiency([_measured(None, 200.0)]) is None


def test_judge_compares_each_pair_with_its_own_route() -> None:
    eff = 0.97
    # Under sharing 100 Gb/s is what the route gives: fine. Alone the same 100 Gb/s is slow.
    shared, alone = _measured(97.0, 100.0), _measured(97.0, 400.0)
    verdicts = judge([shared, alone], eff)
    assert [r.ok for r in verdicts] == [True, False]
    assert verdicts[1].error is not None and verdicts[1].error.startswith("slow: 97 Gb/s, under 93%")
    assert is_slow(verdicts[1]) and not is_slow(_measured(None, 400.0))
    bar = SLOW_RATIO * eff * 400.0
    assert [r.ok for r in judge([_measured(bar, 400.0), _measured(bar - 0.01, 400.0)], eff)] == [True, False]
    failed = _measured(None, 400.0)
    assert judge([failed], eff) == [failed]


def test_a_pair_without_a_route_is_judged_against_its_cable() -> None:
    raw = PairResult(E1, E2, 0, 150.0, 400.0, True, None, "ssh")
    r = with_route(raw, None)
    assert r.expected_gbps == 400.0
    (judged,) = judge([r], 0.97)
    assert not judged.ok and judged.error is not None and "no route known" in judged.error
