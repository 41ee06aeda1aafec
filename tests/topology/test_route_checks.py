"""Route checks on generated fabrics: clean minimal tables report nothing, each planted fault alone.

The tables come from :func:`topology.generate_routes.minhop_tables` (OpenSM's minhop, LID by LID)
and faults are planted by editing single entries, as an operator's mistake or a broken SM would.
The lab tests (tests/integration/test_routes_lab.py) do the same with OpenSM's own tables.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

from fabric.app.discovery.discover import Discovery
from tests.advise_fabrics import fabric_of, guid_of
from topology.anomaly import Severity
from topology.errors import ParseError
from topology.generate_routes import minhop_tables
from topology.lft import NO_ROUTE, Lfts
from topology.model import Guid
from topology.route_checks import RouteReport, check_routes
from topology.route_engine import SmRouting
from topology.route_findings import (
    CREDIT_LOOP,
    CROSSES_FLAGGED,
    CROSSES_ISOLATED,
    DOWN_UP,
    ENGINE_FALLBACK,
    ENGINE_MISMATCH,
    FORWARDING_LOOP,
    IMBALANCE,
    LONGER_THAN_MINIMAL,
    NO_TABLE,
    WRONG_DESTINATION,
)
from topology.route_findings import (
    NO_ROUTE as NO_ROUTE_KIND,
)

FAT = "fattree-small"  # 4 leaves x 8 hosts, 2 spines, 4 cables from each leaf to each spine


@lru_cache(maxsize=4)
def _clean(spec: str) -> tuple[Discovery, Lfts]:
    d = fabric_of(spec)
    return d, minhop_tables(d.fabric)


def tables(spec: str = FAT) -> tuple[Discovery, Lfts]:
    d, t = _clean(spec)
    return d, Lfts(t.source, t.format, t.switches, t.ports.copy(), t.switch_lids)


def check(d: Discovery, t: Lfts, **kw: object) -> RouteReport:
    return check_routes(d.fabric, d.classification, t, **kw)  # type: ignore[arg-type]


def kinds(r: RouteReport, at_least: Severity = Severity.WARNING) -> list[str]:
    rank = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2, Severity.CRITICAL: 3}
    return sorted(f.kind for f in r.findings if rank[f.severity] >= rank[at_least])


def lid(d: Discovery, name: str) -> int:
    node = d.fabric.nodes[guid_of(d, name)]
    assert node.lid is not None
    return node.lid


def port_to(d: Discovery, switch: str, far: str) -> list[int]:
    """Ports of ``switch`` cabled to ``far``."""
    g, f = guid_of(d, switch), guid_of(d, far)
    return sorted(p for p, end, _ in d.fabric.neighbours(g) if end.guid == f)


def route(t: Lfts, d: Discovery, switch: str, to: int, port: int) -> None:
    t.ports[t.row(guid_of(d, switch)), to] = port


def spine_for(t: Lfts, d: Discovery, leaf: str, to: int) -> str:
    """The spine ``leaf`` sends LID ``to`` up to (minhop sends a LID up one spine from every leaf)."""
    port = int(t.ports[t.row(guid_of(d, leaf)), to])
    far = next(end.guid for p, end, _ in d.fabric.neighbours(guid_of(d, leaf)) if p == port)
    return d.classification.nodes[far].name


@pytest.mark.parametrize("spec", [FAT, "rail-small", "rail-3tier"])
def test_clean_minimal_tables_report_no_error_and_no_routing_fault(spec: str) -> None:
    d, t = tables(spec)
    r = check(d, t)
    assert r.errors == 0
    faults = {NO_ROUTE_KIND, WRONG_DESTINATION, FORWARDING_LOOP, CREDIT_LOOP, LONGER_THAN_MINIMAL, DOWN_UP}
    assert not faults & {f.kind for f in r.findings}
    assert r.summary["switches_with_tables"] == r.summary["switches"]
    assert not r.credit.found and r.credit.dependencies > 0
    assert r.engine.up_down is True and r.engine.minimal
    assert "minhop" in r.engine.consistent and "ftree" in r.engine.consistent


def test_clean_fat_tree_is_quiet_and_balanced() -> None:
    d, t = tables()
    r = check(d, t)
    assert kinds(r, Severity.INFO) == []
    # 32 hosts all-to-all: each of the 4 leaves sends 8 x 24 routes up over 8 cables
    up = next(x for x in r.balance.directions if x.direction == "leaf -> spine")
    assert (up.links, up.routes, up.max, up.even) == (32, 768, 24, 24)
    assert r.summary["host_routes"] == 32 * 31


def test_black_hole_is_found_alone_with_its_switch_lid_and_path() -> None:
    d, t = tables()
    dst = lid(d, "cn0009 mlx5_0")  # on leaf-02
    spine = spine_for(t, d, "leaf-01", dst)
    route(t, d, spine, dst, NO_ROUTE)
    r = check(d, t)
    assert kinds(r) == [NO_ROUTE_KIND]
    f = r.findings[0]
    assert f.severity is Severity.ERROR and f.lid == dst and f.switch == guid_of(d, spine)
    assert f.detail["reason"] == "no entry" and f.count > 0
    assert f.destination == guid_of(d, "cn0009 mlx5_0")
    # the path shown climbs from a host's leaf to the spine where it stops
    assert f.path and f.path[-1].to == guid_of(d, spine)


def test_a_port_without_a_cable_is_a_black_hole() -> None:
    d, t = tables()
    dst = lid(d, "cn0009 mlx5_0")
    route(t, d, "leaf-02", dst, 30)  # no cable on port 30
    r = check(d, t)
    assert kinds(r) == [NO_ROUTE_KIND]
    f = r.findings[0]
    assert f.detail["reason"] == "port without a cable" and f.port == 30 and f.switch == guid_of(d, "leaf-02")
    assert f.count == 31  # every other host's route to it


def test_wrong_hca_is_found_alone() -> None:
    d, t = tables()
    dst = lid(d, "cn0009 mlx5_0")
    other = port_to(d, "leaf-02", "cn0010 mlx5_0")[0]
    route(t, d, "leaf-02", dst, other)
    r = check(d, t)
    assert kinds(r) == [WRONG_DESTINATION]
    f = r.findings[0]
    assert f.detail["delivered_to"] == guid_of(d, "cn0010 mlx5_0") and f.lid == dst


def test_forwarding_loop_is_found_alone() -> None:
    d, t = tables()
    dst = lid(d, "cn0009 mlx5_0")  # leaf-02
    # the spine sends it down to leaf-03, which sends it back up to that spine
    spine = spine_for(t, d, "leaf-01", dst)
    route(t, d, spine, dst, port_to(d, spine, "leaf-03")[0])
    route(t, d, "leaf-03", dst, port_to(d, "leaf-03", spine)[0])
    r = check(d, t)
    assert kinds(r) == [FORWARDING_LOOP]
    f = r.findings[0]
    assert set(f.detail["loop"]) == {guid_of(d, spine), guid_of(d, "leaf-03")}
    assert f.severity is Severity.ERROR and f.lid == dst


def test_credit_loop_from_two_down_up_routes() -> None:
    """LID a (leaf-01) goes leaf-02 -> spine-01 -> leaf-03 -> spine-02 -> leaf-01, LID b (leaf-03)
    goes leaf-04 -> spine-02 -> leaf-01 -> spine-01 -> leaf-03: the four channels between them wait
    on each other in a ring."""
    d, t = tables()
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
    r = check(d, t)
    assert r.credit.found
    assert CREDIT_LOOP in kinds(r, Severity.ERROR)
    # the cycle, link by link: each hop's far end is the next hop's switch
    cyc = r.credit.cycle
    assert len(cyc) == 4
    for here, nxt in zip(cyc, cyc[1:] + cyc[:1], strict=True):
        assert here.to == nxt.switch
    assert {h.switch for h in cyc} == {guid_of(d, n) for n in ("spine-01", "leaf-03", "spine-02", "leaf-01")}
    assert set(r.credit.witnesses) <= {a, b} and set(r.credit.witnesses) == {a, b}
    assert "one lane" in r.credit.lanes
    # the same routes also turn down then up and are longer than minimal: warnings, said so
    assert DOWN_UP in kinds(r) and LONGER_THAN_MINIMAL in kinds(r)
    assert r.engine.up_down is False and not r.engine.minimal
    assert "updn" not in r.engine.consistent and "minhop" not in r.engine.consistent


def test_one_down_up_route_is_no_credit_loop() -> None:
    d, t = tables()
    a = lid(d, "cn0001 mlx5_0")
    route(t, d, "leaf-02", a, port_to(d, "leaf-02", "spine-01")[0])
    route(t, d, "spine-01", a, port_to(d, "spine-01", "leaf-03")[0])
    route(t, d, "leaf-03", a, port_to(d, "leaf-03", "spine-02")[0])
    route(t, d, "spine-02", a, port_to(d, "spine-02", "leaf-01")[0])
    r = check(d, t)
    assert not r.credit.found and r.errors == 0
    assert {DOWN_UP, LONGER_THAN_MINIMAL} <= set(kinds(r))


def test_skewed_table_is_found_alone() -> None:
    """leaf-01 sends every remote host up one cable of its eight."""
    d, t = tables()
    one = port_to(d, "leaf-01", "spine-01")[0]
    for n in range(9, 33):
        route(t, d, "leaf-01", lid(d, f"cn{n:04d} mlx5_0"), one)
    r = check(d, t)
    assert kinds(r) == [IMBALANCE]
    f = r.findings[0]
    assert f.switch == guid_of(d, "leaf-01") and f.port == one
    assert f.detail == {
        "direction": "leaf -> spine",
        "routes": 192,
        "cables": 8,
        "max": 192,
        "even": 24,
        "idle_cables": 7,
        "switches": 1,
        "pattern": "all-to-all",
    }
    hot = r.balance.hottest[0]
    assert (hot.switch, hot.port, hot.routes) == (guid_of(d, "leaf-01"), one, 192)
    # each cable against its direction's mean (the map's hot links): 768 routes up over 32 cables
    b = r.balance
    load = b.routes / b.mean
    at = int(
        np.flatnonzero((np.array(b.walk.bound.switches)[b.src] == guid_of(d, "leaf-01")) & (b.port == one))[0]
    )
    assert b.mean[at] == 24.0 and load[at] == 8.0
    assert load.max() == 8.0 and (load == 0).sum() == 7  # leaf-01's other seven cables up idle


def test_even_tables_put_every_cable_at_its_directions_mean() -> None:
    d, t = tables()
    b = check(d, t).balance
    assert len(b.src) == 64 and set(b.mean.tolist()) == {24.0} and set(b.routes.tolist()) == {24}


def test_routes_over_flagged_and_isolated_cables() -> None:
    d, t = tables()
    leaf, spine = guid_of(d, "leaf-01"), guid_of(d, "spine-01")
    cable = next(lk for p, end, lk in d.fabric.neighbours(leaf) if end.guid == spine)
    r = check(d, t, flagged={cable.key: "critical"})
    assert kinds(r) == [CROSSES_FLAGGED]
    assert r.findings[0].count == 24 + 24 and r.findings[0].detail["status"] == "critical"
    r = check(d, t, isolated={cable.key})
    assert kinds(r) == [CROSSES_ISOLATED] and r.errors == 1
    idle = next(
        lk
        for p, end, lk in d.fabric.neighbours(guid_of(d, "leaf-01"))
        if end.guid == guid_of(d, "cn0001 mlx5_0")
    )
    assert kinds(check(d, t, isolated={idle.key})) == [
        CROSSES_ISOLATED
    ]  # a host's own cable carries 31 routes


def test_missing_tables_are_unknown_not_black_holes() -> None:
    d, t = tables()
    keep = [i for i, g in enumerate(t.switches) if g != guid_of(d, "spine-02")]
    partial = Lfts("part", t.format, tuple(t.switches[i] for i in keep), t.ports[keep])
    r = check(d, partial)
    assert kinds(r) == [NO_TABLE] and r.errors == 0
    assert r.findings[0].switch == guid_of(d, "spine-02")


def test_tables_of_another_fabric_are_refused() -> None:
    d, _ = tables()
    other, t = tables("rail-small")
    with pytest.raises(ParseError, match="tables of another fabric"):
        check(d, t)
    assert other.fabric is not d.fabric


def test_what_the_sm_says_against_the_tables() -> None:
    d, t = tables()
    quiet = check(d, t, sm=SmRouting(engine="minhop", source="osm.log"))
    assert kinds(quiet) == []
    fell = check(d, t, sm=SmRouting(engine="ftree", failed=("torus-2QoS",), source="osm.log"))
    assert kinds(fell) == [ENGINE_FALLBACK] and fell.errors == 1
    assert fell.findings[0].detail["failed"] == ["torus-2QoS"]
    conf = check(
        d,
        t,
        sm=SmRouting(engine="minhop", configured="ftree,minhop", source="osm.log", conf_source="opensm.conf"),
    )
    assert kinds(conf) == [ENGINE_FALLBACK] and conf.errors == 0
    # updn says up/down; a route turning down then up says otherwise
    a = lid(d, "cn0001 mlx5_0")
    for sw, far in (
        ("leaf-02", "spine-01"),
        ("spine-01", "leaf-03"),
        ("leaf-03", "spine-02"),
        ("spine-02", "leaf-01"),
    ):
        route(t, d, sw, a, port_to(d, sw, far)[0])
    r = check(d, t, sm=SmRouting(engine="updn", source="osm.log"))
    assert ENGINE_MISMATCH in kinds(r)
    assert next(f for f in r.findings if f.kind == ENGINE_MISMATCH).detail["rule"] == "up/down"


def test_json_form_is_stable() -> None:
    d, t = tables()
    out = check(d, t).to_dict()
    assert sorted(out) == ["balance", "credit_loops", "engine", "findings", "format", "summary", "tables"]
    assert sorted(out["balance"]) == ["directions", "hosts", "hottest", "links", "pattern"]
    link = out["balance"]["links"][0]
    assert sorted(link) == [
        "destinations",
        "direction",
        "gbps",
        "lids",
        "port",
        "routes",
        "switch",
        "to",
        "to_port",
    ]
    assert sorted(out["credit_loops"]) == [
        "channels",
        "channels_in_cycles",
        "cycle",
        "cycle_vls",
        "dependencies",
        "found",
        "lanes",
        "lanes_known",
        "vls_used",
        "witness_lids",
    ]


def test_hop_counts_follow_the_cabling() -> None:
    d, t = tables("rail-3tier")
    r = check(d, t)
    w = r.walk
    b = w.bound
    # a host's leaf reaches an HCA of another unit in 4 switch hops (leaf, spine, core, spine, leaf)
    src = b.index[guid_of(d, "leaf-su01-r0")]
    col = b.lid_column(lid(d, "dgx-0005 mlx5_0"))
    assert col is not None and int(w.hops[src, col]) == 4
    assert int(np.count_nonzero(w.end)) == 0 or r.summary["switches"] > 0


def test_lid_column_lookup() -> None:
    d, t = tables()
    b = check(d, t).walk.bound
    assert b.lid_column(lid(d, "cn0001 mlx5_0")) is not None
    assert b.lid_column(9999) is None
    assert Guid(b.switches[0]) in b.index


@pytest.mark.parametrize("spec", [FAT, "rail-3tier"])
def test_generated_tables_written_as_dump_lfts_read_back_the_same(spec: str) -> None:
    import io

    from topology.generate_routes import write_dump_lfts
    from topology.lft import parse_lfts

    d, t = tables(spec)
    t.ports[0, 5] = NO_ROUTE  # a switch with a LID it does not route is written line by line
    out = io.BytesIO()
    write_dump_lfts(d.fabric, t, out)
    back = parse_lfts(
        out.getvalue(), "generated", port_counts={n.guid: n.nports for n in d.fabric.switches()}
    )
    assert back.format == "ibroute" and back.switches == t.switches
    assert np.array_equal(back.ports, t.ports[:, : back.top + 1])


def test_lids_the_topology_does_not_know_are_no_evidence_of_another_fabric() -> None:
    """A dump naming LIDs the topology lacks (second HCA ports, an LMC range, nodes gone since)
    is read; a LID naming another node than the topology's is a warning with both names."""
    from topology.lft import Destination

    d, t = tables()
    known: dict[int, Destination] = {
        n.lid: Destination("Channel Adapter", n.guid, n.description) for n in d.fabric.nodes.values() if n.lid
    }
    extra = {
        9000 + i: Destination("Channel Adapter", Guid(f"0x{i + 1:016x}"), f"gone-{i} mlx5_1")
        for i in range(50)
    }
    at = lid(d, "cn0001 mlx5_0")
    renamed = {at: Destination("Channel Adapter", Guid("0x0000000000000099"), "elsewhere mlx5_0")}
    named = Lfts(
        t.source, t.format, t.switches, t.ports, t.switch_lids, (), (), {**known, **extra, **renamed}
    )
    r = check(d, named)
    (f,) = [f for f in r.findings if f.kind == "lid_mismatch"]
    assert f.lid == at and f.count == 1 and f.detail["in_tables"] == "elsewhere mlx5_0"
    assert r.errors == 0
