"""Localization from slow pairs and routes, and the lab's simulated traffic model, on hand-built cases."""

from __future__ import annotations

import pytest

from probes.expect import judge
from probes.labtraffic import BACKEND, PERFTEST_EFFICIENCY, parse_error_rates, simulate_round
from probes.localize import final_results, followup_probes, rank, tied, unexplained
from probes.pairs import Endpoint, PairResult, Probe
from tests.topology.test_routes import H1, H2, H3, L1, L2, S1, S2, TABLES, small_fabric
from topology.model import Fabric, Guid, Link, PortRef
from topology.route_pairs import pair_route


def ep(guid: Guid, leaf: Guid, name: str) -> Endpoint:
    return Endpoint(name, "mlx5_0", guid, leaf, 0)


E1, E2, E3 = ep(H1, L1, "n1"), ep(H2, L2, "n2"), ep(H3, L1, "n3")


def link(a: str, pa: int, b: str, pb: int) -> Link:
    return Link(PortRef(Guid(a), pa), PortRef(Guid(b), pb), 4, "NDR")


def result(c: Endpoint, s: Endpoint, gbps: float | None, attempt: int = 0) -> PairResult:
    """A pair judged against a 400 Gb/s route at 97.5 % efficiency: slow under 362.7 Gb/s."""
    raw = PairResult(
        c, s, 0, gbps, 400.0, gbps is not None, None if gbps else "failed", "ssh", attempt, 400.0
    )
    return judge([raw], 0.975)[0]


def test_only_a_link_that_every_crossing_pair_found_slow_is_a_suspect() -> None:
    f = small_fabric()
    # n1 and n3 both write to n2 through the same uplink; only n1 is slow: n1's own cable is the one.
    paths = {
        (H1, H2): pair_route(f, TABLES, H1, H2),
        (H3, H2): pair_route(f, TABLES, H3, H2),
        (H2, H1): pair_route(f, TABLES, H2, H1),
    }
    results = [result(E1, E2, 120.0), result(E3, E2, 390.0), result(E2, E1, 385.0)]
    assert [r.ok for r in results] == [False, True, True]
    suspects = rank(results, paths, {H1: "n1"})
    assert len(suspects) == 1, "the uplink and n2's cable carried the fast n3 -> n2 too: cleared"
    top = suspects[0]
    assert top.link.key == ((L1, 1), (H1, 1)) and top.score == 1.0 and top.direction == H1
    assert [r.client.host for r in top.slow_pairs] == ["n1"] and top.fast_pairs == ()
    assert top.reason == "all 1 pair(s) crossing it were slow (from n1; pairs the other way were fast)"
    assert tied(suspects) == [] and unexplained(results, paths, suspects) == []


def test_links_whose_slow_pairs_a_better_suspect_explains_are_not_suspects() -> None:
    f = small_fabric()
    # Both n1 and n3 are slow to n2: the uplink they share explains both; each host cable only one.
    paths = {(H1, H2): pair_route(f, TABLES, H1, H2), (H3, H2): pair_route(f, TABLES, H3, H2)}
    results = [result(E1, E2, 100.0), result(E3, E2, 100.0)]
    suspects = rank(results, paths)
    # leaf-1 -> spine-2 -> leaf-2 -> n2: three links carry both slow pairs and nothing else.
    assert {s.link.key for s in suspects} == {
        ((L1, 11), (S2, 1)),
        ((L2, 11), (S2, 5)),
        ((L2, 1), (H2, 1)),
    }
    assert len(tied(suspects)) == 3 and all(len(s.slow_pairs) == 2 for s in suspects)
    assert ((L1, 1), (H1, 1)) not in {s.link.key for s in suspects}


def test_slow_pairs_that_no_cable_explains_are_said_so_not_pinned() -> None:
    f = small_fabric()
    paths = {(H1, H2): pair_route(f, TABLES, H1, H2), (H3, H2): pair_route(f, TABLES, H3, H2)}
    # n1 -> n2 slow; n3 -> n2 fast twice over every shared link, and n1's own cable carries a
    # fast pair the same way too (a second probe n1 -> n3): nothing on n1 -> n2's route is all-slow.
    paths[(H1, H3)] = pair_route(f, TABLES, H1, H3)
    results = [result(E1, E2, 100.0), result(E3, E2, 390.0), result(E1, E3, 390.0)]
    suspects = rank(results, paths)
    assert suspects == []
    assert [(r.client.host, r.server.host) for r in unexplained(results, paths, suspects)] == [("n1", "n2")]


def test_a_pair_that_recovers_on_retest_is_not_slow() -> None:
    x = link("0x1", 1, "0x2", 1)
    a, b = (Endpoint(f"h{i}", "mlx5_0", Guid(f"0x{i:016x}"), None, 0) for i in (1, 2))
    results = [result(a, b, 100.0), result(b, a, 390.0), result(a, b, 389.0, attempt=1)]
    assert [r.gbps for r in final_results(results)] == [389.0, 390.0]
    assert rank(results, {(a.guid, b.guid): [x], (b.guid, a.guid): [x]}) == []


def test_direction_matters_for_a_port_that_drops_what_arrives() -> None:
    f = small_fabric()
    fwd, back = pair_route(f, TABLES, H1, H2), pair_route(f, TABLES, H2, H1)
    results = [result(E1, E2, 100.0), result(E2, E1, 390.0)]
    suspects = rank(results, {(H1, H2): fwd, (H2, H1): back})
    # Every link of the slow path carried it alone: a tie of four that follow-ups must break.
    assert len(tied(suspects)) == 4 and suspects[0].direction is not None


def test_followups_cross_one_tied_link_each() -> None:
    f = small_fabric()
    fwd = pair_route(f, TABLES, H1, H2)
    back = pair_route(f, TABLES, H2, H1)
    suspects = rank([result(E1, E2, 100.0), result(E2, E1, 390.0)], {(H1, H2): fwd, (H2, H1): back})
    assert len(tied(suspects)) == 4
    probes, paths = followup_probes(suspects, [E1, E2, E3], fabric=f, tables=TABLES)
    assert probes and all((p.client.guid, p.server.guid) in paths for p in probes)
    assert (H1, H2) not in {(p.client.guid, p.server.guid) for p in probes}  # not the slow pair again
    for r in range(max(p.round for p in probes) + 1):
        ends = [e.guid for p in probes if p.round == r for e in (p.client, p.server)]
        assert len(ends) == len(set(ends))


# -- the simulated traffic model --------------------------------------------------------------
def _with_width(f: Fabric, target: Link, width: int) -> Fabric:
    links = [Link(lk.a, lk.b, width, lk.speed) if lk.key == target.key else lk for lk in f.links]
    return Fabric.build(f.nodes.values(), links, source=f.source)


def test_simulated_rate_is_the_slowest_share_on_the_path() -> None:
    f = small_fabric()
    alone = simulate_round(f, [Probe(E1, E2, 0)], {(H1, H2): pair_route(f, TABLES, H1, H2)})
    assert alone[0].gbps == pytest.approx(400 * PERFTEST_EFFICIENCY) and alone[0].backend == BACKEND
    assert alone[0].line_rate_gbps == 400.0
    # H1 and H3 both send to H2 through leaf-1's port 11: two shares of that cable and of H2's.
    both = simulate_round(
        f,
        [Probe(E1, E2, 0), Probe(E3, E2, 0)],
        {(H1, H2): pair_route(f, TABLES, H1, H2), (H3, H2): pair_route(f, TABLES, H3, H2)},
    )
    assert [r.gbps for r in both] == [pytest.approx(200 * PERFTEST_EFFICIENCY)] * 2
    uplink = pair_route(f, TABLES, H1, H2)[1]
    slow = _with_width(f, uplink, 1)
    one_x = simulate_round(slow, [Probe(E1, E2, 0)], {(H1, H2): pair_route(slow, TABLES, H1, H2)})
    assert one_x[0].gbps == pytest.approx(100 * PERFTEST_EFFICIENCY)


def test_error_rate_slows_only_data_entering_that_port() -> None:
    f = small_fabric()
    fwd, back = pair_route(f, TABLES, H1, H2), pair_route(f, TABLES, H2, H1)
    spine_port = (S2, 1)  # leaf-1 -> spine-2: data from H1 enters spine-2 here
    got = simulate_round(f, [Probe(E1, E2, 0)], {(H1, H2): fwd}, {spine_port: 30})
    assert got[0].gbps == pytest.approx(400 * PERFTEST_EFFICIENCY * 0.7)
    other = simulate_round(f, [Probe(E2, E1, 0)], {(H2, H1): back}, {spine_port: 30})
    assert other[0].gbps == pytest.approx(400 * PERFTEST_EFFICIENCY)  # goes up via spine-1
    dead = simulate_round(f, [Probe(E1, E2, 0)], {(H1, H2): fwd}, {spine_port: 100})
    assert not dead[0].ok and dead[0].gbps is None
    unrouted = simulate_round(f, [Probe(E1, E2, 0)], {})
    assert not unrouted[0].ok and unrouted[0].error == "no route"
    assert S1 and L2  # names used by the other tests' tables


def test_parse_error_rates_from_a_console_dump() -> None:
    dump = (
        'Switch 64 "spine-01"\tnodeguid c42a10300a10000\tsysimgguid c42a10300a10000\n'
        "#\tForwarding table 0-15: [0]FF [1]1\n"
        'c42a10300a10000\t[1]\t"leaf-su01-r0"[5]\t  4x 50G Active/LinkUp\t# err_rate 30\n'
        'c42a10300a10000\t[2]\t"leaf-su01-r1"[5]\t  4x 50G Active/LinkUp\n'
        'Ca 1 "dgx-0001 mlx5_0"\tnodeguid 1070fd0300100000\tsysimgguid 1070fd0300100000\n'
        '1070fd0300100001\t[1]\t"leaf-su01-r0"[1]\t lid 1 lmc 0 smlid 1  4x 50G Active/LinkUp\t# err_rate 20\n'
    )
    assert parse_error_rates(dump) == {("0x0c42a10300a10000", 1): 30, ("0x1070fd0300100000", 1): 20}


def test_followup_pairs_start_near_the_tied_link_and_stay_lazy() -> None:
    from itertools import islice

    from probes.localize import _nearest_pairs

    # 16,384 HCAs on 512 leaves: the old all-pairs list would hold 268 million pairs.
    leaves = [Guid(f"0x{0xA000 + i:016x}") for i in range(512)]
    cands = [
        Endpoint(f"h{i // 8}", f"mlx5_{i % 8}", Guid(f"0x{0x100000 + i:016x}"), leaves[i % 512], 0)
        for i in range(16384)
    ]
    host_cable = Link(PortRef(cands[5].guid, 1), PortRef(leaves[5], 3), 4, "NDR")
    first = list(islice(_nearest_pairs(host_cable, cands), 200))
    # HCAs on the tied cable's leaf with each other first (same-leaf pairs cross no uplink) ...
    on_leaf = [e for e in cands if e.leaf == leaves[5]]
    n_near = sum(1 for a in on_leaf for b in on_leaf if a.host != b.host)
    assert n_near == len(on_leaf) * (len(on_leaf) - 1)
    assert all(a.leaf == b.leaf == leaves[5] and a.host != b.host for a, b in first[: min(200, n_near)])
    # ... then near x far in both directions.
    rest = list(islice(_nearest_pairs(host_cable, cands), n_near, n_near + 4))
    assert [(a.leaf == leaves[5], b.leaf == leaves[5]) for a, b in rest] == [(True, False), (False, True)] * 2


def test_followups_without_routes_give_no_probes_and_no_error() -> None:
    f = small_fabric()
    fwd, back = pair_route(f, TABLES, H1, H2), pair_route(f, TABLES, H2, H1)
    suspects = rank([result(E1, E2, 100.0), result(E2, E1, 390.0)], {(H1, H2): fwd, (H2, H1): back})
    probes, paths = followup_probes(suspects, [E1, E2, E3])  # no fabric/tables: nothing routable
    assert probes == [] and paths == {}


def test_a_fast_pair_clears_only_the_cables_it_proves_healthy() -> None:
    from dataclasses import replace

    f = small_fabric()
    paths = {(a, b): pair_route(f, TABLES, a, b) for a, b in ((H1, H2), (H3, H2), (H3, H1), (H2, H1))}

    def measured(c: Endpoint, s: Endpoint, rnd: int, gbps: float, expected: float) -> PairResult:
        raw = PairResult(c, s, rnd, gbps, 400.0, True, None, "ssh", 0, expected)
        return judge([raw], 0.975)[0]

    # n3's cable trains at 2x (200 Gb/s). In round 0 n1 and n3 both write to n2 and share its
    # cable and the uplink: 200 each is all they should get, so n3 -> n2 is fast, but it only
    # proves n3's cable gives 200, not the 400 it should. Alone in round 1, n3 -> n1 is slow.
    results = [
        measured(E1, E2, 0, 195.0, 200.0),
        measured(E3, E2, 0, 195.0, 200.0),
        measured(E3, E1, 1, 195.0, 400.0),
        measured(E2, E1, 2, 390.0, 400.0),
    ]
    assert [r.ok for r in results] == [True, True, False, True]
    n3_cable = ((L1, 2), (H3, 1))
    legacy = rank(results, paths)  # any fast pair clears: the slow pair is left unexplained
    assert legacy == [] and len(unexplained(results, paths, legacy)) == 1
    suspects = rank(results, paths, design={}, efficiency=0.975)
    assert [s.link.key for s in suspects] == [n3_cable]
    top = suspects[0]
    assert [r.server.host for r in top.fast_pairs] == ["n2"] and "cannot clear it" in top.reason
    # Had n3 -> n2 run alone at 195 Gb/s, it would have been slow itself; at 390 it clears the cable.
    proven = [*results[:1], replace(results[1], gbps=390.0), *results[2:]]
    assert n3_cable not in {s.link.key for s in rank(proven, paths, design={}, efficiency=0.975)}
