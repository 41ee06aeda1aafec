"""The pairs' route walk over bound tables (topology.route_pairs) against its oracle, the dict walk
(tests/oracles/routes.py): the same cables, the same RouteError messages, pair by pair, on
generated fabrics with OpenSM-minhop tables, clean and with each fault planted (a loop, a black
hole, a port without a cable, delivery to another HCA, a switch taking an HCA's LID, a switch
without a table). Also through the sweep planner: a plan over broken tables lists the same
unroutable pairs as the oracle's plan, and the CLI says so in one line."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np
import pytest

from fabric.app.discovery.discover import Discovery
from probes.plan import plan_sweep
from tests.advise_fabrics import fabric_of
from tests.oracles.plan import plan_sweep_oracle
from tests.oracles.routes import all_paths
from topology.errors import ParseError
from topology.generate_routes import minhop_tables
from topology.lft import NO_ROUTE, Lfts
from topology.model import Guid, Link, NodeKind
from topology.route_pairs import PairRoutes, bind_tables, pair_routes
from topology.routes import RouteError

SPECS = ("fattree-small", "rail-small", "rail-3tier")


@lru_cache(maxsize=4)
def _clean(spec: str) -> tuple[Discovery, Lfts]:
    d = fabric_of(spec)
    return d, minhop_tables(d.fabric)


def tables(spec: str) -> tuple[Discovery, Lfts]:
    d, t = _clean(spec)
    return d, Lfts(t.source, t.format, t.switches, t.ports.copy(), t.switch_lids)


def all_pairs(d: Discovery) -> list[tuple[Guid, Guid]]:
    hcas = [n.guid for n in d.fabric.hcas()]
    return [(a, b) for a in hcas for b in hcas]


def shown(got: tuple[Link, ...] | list[Link] | RouteError) -> tuple[Link, ...] | str:
    return str(got) if isinstance(got, RouteError) else tuple(got)


def assert_same_as_oracle(d: Discovery, t: Lfts) -> dict[tuple[Guid, Guid], tuple[Link, ...] | str]:
    pairs = all_pairs(d)
    ours = pair_routes(d.fabric, t, pairs)
    oracle = all_paths(d.fabric, t.to_mapping(), pairs)
    assert set(ours) == set(oracle) == set(pairs)
    for key in pairs:
        assert shown(ours[key]) == shown(oracle[key]), key
    return {k: shown(v) for k, v in ours.items()}


def _hca_lid(d: Discovery, i: int = 0) -> int:
    lid = d.fabric.hcas()[i].lid
    assert lid is not None
    return lid


def _row(t: Lfts, guid: Guid) -> int:
    r = t.row(guid)
    assert r is not None
    return r


def _switches(d: Discovery, tier: int) -> list[Guid]:
    return sorted(g for g, c in d.classification.nodes.items() if c.tier == tier)


def _used_uplink(d: Discovery, t: Lfts) -> tuple[Guid, Guid]:
    """(a leaf, the switch above it) that the leaf's HCAs' routes to the first HCA climb to."""
    lid = _hca_lid(d)
    for leaf in _switches(d, 1):
        if leaf == _home(d, 0):
            continue
        up = d.fabric.neighbours(leaf)
        port = int(t.ports[_row(t, leaf), lid])
        far = next((f.guid for p, f, _ in up if p == port), None)
        if far is not None and d.fabric.nodes[far].kind is NodeKind.SWITCH:
            return leaf, far
    raise AssertionError("no leaf routes the first HCA's LID up")


def loop(d: Discovery, t: Lfts) -> str:
    """A switch above a leaf sends the LID back down to that leaf, which sends it up again."""
    leaf, spine = _used_uplink(d, t)
    back = min(_ports_to(d, spine, leaf))
    t.ports[_row(t, spine), _hca_lid(d)] = back
    return "forwarding loop for LID"


def black_hole(d: Discovery, t: Lfts) -> str:
    t.ports[_row(t, _used_uplink(d, t)[1]), _hca_lid(d)] = NO_ROUTE
    return "(black hole)"


def dead_port(d: Discovery, t: Lfts) -> str:
    spine = _used_uplink(d, t)[1]
    cabled = {p for p, _, _ in d.fabric.neighbours(spine)}
    t.ports[_row(t, spine), _hca_lid(d)] = next(p for p in range(1, 255) if p not in cabled)
    return "which has no cable (black hole)"


def other_hca(d: Discovery, t: Lfts) -> str:
    """The destination's leaf sends its LID out of another HCA's port."""
    home = _home(d, 0)
    first = d.fabric.hcas()[0].guid
    other = next(
        p
        for p, far, _ in d.fabric.neighbours(home)
        if d.fabric.nodes[far.guid].kind is NodeKind.HCA and far.guid != first
    )
    t.ports[_row(t, home), _hca_lid(d)] = other
    return "not to"


def claims(d: Discovery, t: Lfts) -> str:
    t.ports[_row(t, _used_uplink(d, t)[1]), _hca_lid(d)] = 0
    return "for itself"


def no_table(d: Discovery, t: Lfts) -> Lfts:
    gone = _row(t, _used_uplink(d, t)[1])
    keep = [i for i in range(len(t.switches)) if i != gone]
    return Lfts(t.source, t.format, tuple(t.switches[i] for i in keep), t.ports[keep].copy())


def _home(d: Discovery, i: int) -> Guid:
    hca = d.fabric.hcas()[i].guid
    return d.fabric.neighbours(hca)[0][1].guid


def _ports_to(d: Discovery, switch: Guid, far_switch: Guid) -> set[int]:
    return {p for p, far, _ in d.fabric.neighbours(switch) if far.guid == far_switch}


@pytest.mark.parametrize("spec", SPECS)
def test_clean_tables_route_every_pair_as_the_oracle_does(spec: str) -> None:
    d, t = tables(spec)
    got = assert_same_as_oracle(d, t)
    assert all(isinstance(v, tuple) for v in got.values())  # a clean fabric: every pair delivered
    assert all(len(v) >= 2 for (a, b), v in got.items() if a != b)


FAULTS: dict[str, Callable[[Discovery, Lfts], str]] = {
    "loop": loop,
    "black_hole": black_hole,
    "dead_port": dead_port,
    "other_hca": other_hca,
    "claims": claims,
}


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_planted_fault_gives_the_oracles_error(spec: str, fault: str) -> None:
    d, t = tables(spec)
    words = FAULTS[fault](d, t)
    got = assert_same_as_oracle(d, t)
    errors = [v for v in got.values() if isinstance(v, str)]
    assert errors and all(words in e for e in errors)
    lid = _hca_lid(d)
    assert all(f"LID {lid}" in e for e in errors)  # only routes to the planted LID break


@pytest.mark.parametrize("spec", SPECS)
def test_a_switch_without_a_table(spec: str) -> None:
    d, t = tables(spec)
    got = assert_same_as_oracle(d, no_table(d, t))
    errors = {v for v in got.values() if isinstance(v, str)}
    assert errors and all(e.startswith("no forwarding table for switch") for e in errors)


def test_asking_again_walks_only_the_new_pairs() -> None:
    d, t = tables("rail-small")
    router = PairRoutes(bind_tables(d.fabric, t))
    pairs = all_pairs(d)
    first = router(pairs[:100])
    walked = len(router._suffix)
    again = router(pairs[:100])
    assert len(router._suffix) == walked and again == first
    router(pairs)
    assert len(router._suffix) > walked


def test_tables_of_another_fabric_are_refused_in_one_line() -> None:
    d, ours = tables("rail-small")
    others = tuple(Guid(f"0x{0xFEED0000 + i:016x}") for i in range(len(ours.switches)))
    theirs = Lfts("theirs.dump", ours.format, others, ours.ports)
    with pytest.raises(ParseError, match=r"theirs.dump.*not in the topology.*tables of another fabric\?"):
        bind_tables(d.fabric, theirs)


@pytest.mark.parametrize("pattern", ["rail-pairs", "pairwise", "leaf-pairs"])
@pytest.mark.parametrize("fault", ["loop", "black_hole"])
def test_a_plan_over_broken_tables_lists_the_oracles_unroutable_pairs(pattern: str, fault: str) -> None:
    d, t = tables("rail-small")
    FAULTS[fault](d, t)
    ours = plan_sweep(d.fabric, d.classification, pattern, t)
    oracle = plan_sweep_oracle(d.fabric, d.classification, pattern, t.to_mapping())
    assert ours.coverage.unroutable == oracle.coverage.unroutable
    assert ours.coverage == oracle.coverage and ours.paths == oracle.paths
    broken = {k for k in ours.paths} ^ {(p.client.guid, p.server.guid) for p in ours.probes}
    assert len(broken) == len(ours.coverage.unroutable)
    assert (len(broken) > 0) == any(p.server.guid == d.fabric.hcas()[0].guid for p in ours.probes)


def test_mapping_and_array_tables_plan_alike() -> None:
    d, t = tables("rail-small")
    a = plan_sweep(d.fabric, d.classification, "rail-pairs", t)
    b = plan_sweep(d.fabric, d.classification, "rail-pairs", t.to_mapping())
    assert a.paths == b.paths and a.coverage == b.coverage
    assert a.coverage.from_routes and not a.coverage.unroutable
    assert np.array_equal(t.ports, bind_tables(d.fabric, t).lfts.ports)


def test_routes_walked_in_small_blocks_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    import topology.route_pairs as route_pairs

    d, t = tables("rail-3tier")
    loop(d, t)
    whole = assert_same_as_oracle(d, t)
    monkeypatch.setattr(route_pairs, "_BLOCK", 7)
    assert assert_same_as_oracle(d, t) == whole
