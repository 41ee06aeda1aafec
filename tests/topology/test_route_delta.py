"""Routes before and after a change, and the verdict on them: a quiet change, each planted effect alone."""

from __future__ import annotations

from fabric.advise.routing_check import (
    CREDIT_LOOP,
    ENGINE_FALLBACK,
    LOAD_RISE,
    UNREACHABLE,
    RoutingVerdict,
    SmRouted,
    judge_change,
    worst,
)
from fabric.app.discovery.discover import Discovery
from fabric.app.twin.check import without
from tests.advise_fabrics import guid_of
from tests.topology.test_route_checks import lid, port_to, route, tables
from topology.generate_routes import minhop_tables
from topology.lft import Lfts
from topology.model import Fabric, LinkKey
from topology.route_checks import RouteReport, check_routes
from topology.route_delta import route_delta

MINHOP = SmRouted("minhop")


def _cable(d: Discovery, switch: str, port: int) -> LinkKey:
    g = guid_of(d, switch)
    return next(lk.key for p, _, lk in d.fabric.neighbours(g) if p == port)


def _after(d: Discovery, t: Lfts, gone: set[LinkKey]) -> RouteReport:
    f: Fabric = without(d.fabric, gone)
    return check_routes(f, d.classification, t)


def test_the_same_tables_after_a_change_of_nothing_are_quiet() -> None:
    d, t = tables()
    before = check_routes(d.fabric, d.classification, t)
    delta = route_delta(before, check_routes(d.fabric, d.classification, t))
    assert delta.lost == () and delta.lost_routes == 0 and not delta.loop_opened and not delta.load_rise
    assert delta.entries_changed == 0 and delta.used_changed == 0
    assert judge_change(delta, MINHOP, MINHOP) == ()
    assert worst(()) is RoutingVerdict.PASS


def test_tables_kept_over_a_cable_taken_out_lose_its_destinations() -> None:
    """As OpenSM's file engine does: the entries stay, the cable is gone: a black hole."""
    d, t = tables()
    port = port_to(d, "leaf-01", "spine-01")[0]
    gone = {_cable(d, "leaf-01", port)}
    before = check_routes(d.fabric, d.classification, t)
    delta = route_delta(before, _after(d, t, gone))
    assert delta.lost_destinations > 0 and delta.unreachable_before == 0
    # every lost route crossed that cable: leaf-01's hosts up it, the others down it to leaf-01
    lost = {x.lid for x in delta.lost}
    leaf = guid_of(d, "leaf-01")
    hcas = {n.lid for n in d.fabric.hcas() if n.lid is not None}
    up = {x for x in hcas if int(t.ports[t.row(leaf), x]) == port}
    assert up <= lost
    for x in delta.lost:
        assert x.reason == "port without a cable" and x.routes > 0
        assert x.path and x.path[-1].to is None  # the route, hop by hop, ends at the dead port
    issues = judge_change(delta, MINHOP, MINHOP)
    assert [i.kind for i in issues] == [UNREACHABLE] and worst(issues) is RoutingVerdict.STOP
    assert issues[0].evidence["routes"] == delta.lost_routes


def test_rerouted_tables_lose_nothing_and_only_move_load() -> None:
    d, t = tables()
    gone = {_cable(d, "leaf-01", port_to(d, "leaf-01", "spine-01")[0])}
    f = without(d.fabric, gone)
    rerouted = minhop_tables(f)
    before = check_routes(d.fabric, d.classification, t)
    delta = route_delta(before, check_routes(f, d.classification, rerouted))
    assert delta.lost == () and not delta.loop_opened
    assert delta.used_changed > 0 and delta.hottest_after is not None and delta.hottest_before is not None
    kinds = [i.kind for i in judge_change(delta, MINHOP, MINHOP)]
    assert kinds == ([LOAD_RISE] if delta.load_rise else [])
    assert delta.load_rise == (
        delta.hottest_after.routes > 1.5 * delta.hottest_before.routes
        and delta.hottest_after.routes - delta.hottest_before.routes >= 2
    )


def test_a_credit_loop_the_change_opens_is_a_stop() -> None:
    d, t = tables()
    before = check_routes(d.fabric, d.classification, t)
    a, b = lid(d, "cn0001 mlx5_0"), lid(d, "cn0017 mlx5_0")
    up = {
        (leaf, s): port_to(d, leaf, s)[0]
        for leaf in ("leaf-01", "leaf-02", "leaf-03", "leaf-04")
        for s in ("spine-01", "spine-02")
    }
    route(t, d, "leaf-02", a, up[("leaf-02", "spine-01")])
    route(t, d, "spine-01", a, port_to(d, "spine-01", "leaf-03")[0])
    route(t, d, "leaf-03", a, up[("leaf-03", "spine-02")])
    route(t, d, "spine-02", a, port_to(d, "spine-02", "leaf-01")[0])
    route(t, d, "leaf-04", b, up[("leaf-04", "spine-02")])
    route(t, d, "spine-02", b, port_to(d, "spine-02", "leaf-01")[0])
    route(t, d, "leaf-01", b, up[("leaf-01", "spine-01")])
    route(t, d, "spine-01", b, port_to(d, "spine-01", "leaf-03")[0])
    delta = route_delta(before, check_routes(d.fabric, d.classification, t))
    assert delta.loop_opened and delta.lost == ()
    issues = judge_change(delta, MINHOP, MINHOP)
    assert CREDIT_LOOP in [i.kind for i in issues] and worst(issues) is RoutingVerdict.STOP
    loop = next(i for i in issues if i.kind == CREDIT_LOOP).evidence["loop"]
    assert len(loop["cycle"]) == 4 and set(loop["witness_lids"]) == {a, b}
    # a loop already there before is not one the change opened
    assert not route_delta(
        check_routes(d.fabric, d.classification, t), check_routes(d.fabric, d.classification, t)
    ).loop_opened


def test_an_engine_that_fell_back_is_a_warning_with_the_sms_words() -> None:
    d, t = tables()
    r = check_routes(d.fabric, d.classification, t)
    delta = route_delta(r, r)
    line = "ucast_mgr_route: ftree: cannot build lid matrices"
    issues = judge_change(delta, SmRouted("ftree"), SmRouted("minhop", ("ftree",), (line,), "osm.log"))
    assert [i.kind for i in issues] == [ENGINE_FALLBACK] and worst(issues) is RoutingVerdict.CONFIRM
    ev = issues[0].evidence
    assert ev["engine_before"] == "ftree" and ev["engine_after"] == "minhop" and ev["log_lines"] == [line]
    # the same engine before and after, none failing: nothing to say
    assert judge_change(delta, SmRouted("ftree"), SmRouted("ftree")) == ()
