"""Credit loops per virtual lane on a real ring fabric (tests/data/sl2vl/README.md).

The ring's shortest routes hold a credit loop in one lane. dfsssp spreads them over SLs (its path
records) and so VLs (the ports' SL2VL tables): per VL there is none. minhop's routes, the same
LFTs, all use SL 0: the loop is real, on VL 0, and is reported alone. Without the lanes, or with
part of them, the one-lane check stands and says what was missing.
"""

from __future__ import annotations

from functools import cache

import pytest

from tests.conftest import ROOT
from topology.anomaly import Severity
from topology.classify import classify
from topology.credit_loops_vl import Lanes
from topology.ibnetdiscover import parse_ibnetdiscover_text
from topology.lft import parse_lfts
from topology.model import Fabric
from topology.route_checks import RouteReport, check_routes
from topology.route_engine import SmRouting
from topology.route_findings import CREDIT_LOOP
from topology.sl2vl import PathSls, Sl2Vl, parse_path_records, parse_sl2vl

DATA = ROOT / "tests" / "data" / "sl2vl"
LFT = ROOT / "tests" / "data" / "lft"

# (forwarding tables, SL2VL tables, path records) of each real run
RUNS = {
    "dfsssp": ("dump_fts-ring5-dfsssp.txt", "smpquery-sl2vl-ring5-dfsssp.txt", "saquery-p-ring5-dfsssp.txt"),
    "dfsssp-qos": (
        "opensm-lfts-ring5-dfsssp-qos.dump",
        "opensm-sl2vl-ring5-dfsssp-qos.dump",
        "saquery-p-ring5-dfsssp-qos.txt",
    ),
    "dfsssp-qos-smpquery": (
        "opensm-lfts-ring5-dfsssp-qos.dump",
        "smpquery-sl2vl-ring5-dfsssp-qos.txt",
        "saquery-p-ring5-dfsssp-qos.txt",
    ),
    "minhop": ("dump_fts-ring5-minhop.txt", "smpquery-sl2vl-ring5-minhop.txt", "saquery-p-ring5-minhop.txt"),
    "lash": ("dump_fts-ring5-lash.txt", "smpquery-sl2vl-ring5-lash.txt", "saquery-p-ring5-lash.txt"),
}


@cache
def ring() -> Fabric:
    return parse_ibnetdiscover_text((DATA / "ibnetdiscover-ring5.txt").read_text())


def tables(name: str) -> Sl2Vl:
    return parse_sl2vl((DATA / name).read_text(), name)


def paths(name: str) -> PathSls:
    return parse_path_records((DATA / name).read_text(), name)


def judge(run: str, lanes: Lanes | None) -> RouteReport:
    fts = RUNS[run][0]
    return check_routes(ring(), classify(ring()), parse_lfts((DATA / fts).read_text(), fts), lanes=lanes)


def lanes_of(run: str) -> Lanes:
    _, sl2vl, pr = RUNS[run]
    return Lanes(tables(sl2vl), paths(pr))


def credit_findings(r: RouteReport) -> list[str]:
    return [f.kind for f in r.findings if f.kind == CREDIT_LOOP]


@pytest.mark.parametrize("run", list(RUNS))
def test_one_lane_the_ring_has_a_credit_loop_and_says_lanes_unknown(run: str) -> None:
    r = judge(run, None)
    assert r.credit.found and not r.credit.lanes_known
    assert r.credit.lanes.startswith("one lane: the SL of each route and the SL-to-VL tables are not known")
    assert [f.kind for f in r.findings if f.severity is Severity.ERROR] == [CREDIT_LOOP]
    assert len(r.credit.cycle) == 5


@pytest.mark.parametrize("run", ["dfsssp", "dfsssp-qos", "dfsssp-qos-smpquery"])
def test_dfsssp_spreads_the_cycle_over_vls_so_no_credit_loop(run: str) -> None:
    r = judge(run, lanes_of(run))
    c = r.credit
    assert not c.found and c.lanes_known
    assert c.vls_used == tuple(range(8))  # all 8 operational VLs carry host routes
    assert c.lanes.startswith(f"per VL: SL2VL tables from {RUNS[run][1]}")
    assert f"the SL of every host route from {RUNS[run][2]} (path records)" in c.lanes
    assert r.findings == () or all(f.severity is not Severity.ERROR for f in r.findings)
    assert credit_findings(r) == []


def test_lash_puts_the_cycle_on_two_layers_so_no_credit_loop() -> None:
    """lash (OpenSM's log: "Lanes needed: 2") answers path records with SL 0 or 1, one per layer;
    with ibsim's own tables (no QoS: SL n to VL n) the routes use VLs 0 and 1 and no cycle is left."""
    r = judge("lash", lanes_of("lash"))
    c = r.credit
    assert not c.found and c.lanes_known
    assert c.vls_used == (0, 1)
    assert sorted(set(paths(RUNS["lash"][2]).sl.tolist())) == [0, 1]
    assert credit_findings(r) == [] and all(f.severity is not Severity.ERROR for f in r.findings)
    # the cycle is broken by its SLs: the same tables with every route on SL 0 hold it on VL 0
    r = judge("lash", Lanes(tables(RUNS["lash"][1]), paths(RUNS["minhop"][2])))
    assert r.credit.found and r.credit.vls == (0,) * 5


def test_minhop_routes_all_on_sl0_hold_the_loop_on_vl0_alone() -> None:
    r = judge("minhop", lanes_of("minhop"))
    c = r.credit
    assert c.found and c.lanes_known
    assert c.vls == (0, 0, 0, 0, 0) and c.vls_used == (0,)
    assert [f.kind for f in r.findings if f.severity is Severity.ERROR] == [CREDIT_LOOP]
    f = next(f for f in r.findings if f.kind == CREDIT_LOOP)
    assert f.detail["cycle_vls"] == [0, 0, 0, 0, 0]
    names = {n.guid: n.description for n in ring().nodes.values()}
    ring_sw = [names[h.switch] for h in c.cycle]
    assert sorted(ring_sw) == [f"ring-sw0{i}" for i in range(1, 6)]
    # each hop leaves by port 7 (one way round) and its witness LID's route makes that wait
    assert {h.port for h in c.cycle} == {7} and all(c.witnesses)


def test_dfsssp_routes_on_one_sl_would_hold_the_loop() -> None:
    """The cycle is broken by the SLs, not by the tables: the dfsssp run's own tables with
    minhop's path records (every route SL 0) find the loop on VL 0."""
    r = judge("dfsssp", Lanes(tables(RUNS["dfsssp"][1]), paths(RUNS["minhop"][2])))
    assert r.credit.found and r.credit.vls == (0,) * 5


def test_tables_without_path_records_stay_one_lane_and_say_why() -> None:
    r = judge("dfsssp", Lanes(tables(RUNS["dfsssp"][1])))
    assert r.credit.found and not r.credit.lanes_known
    assert r.credit.lanes == (
        "one lane: SL2VL tables from smpquery-sl2vl-ring5-dfsssp.txt (smpquery sl2vl), but the SL of "
        "each route is not known (give the SM's path records: saquery -p)"
    )


def test_path_records_without_tables_stay_one_lane() -> None:
    r = judge("dfsssp", Lanes(None, paths(RUNS["dfsssp"][2])))
    assert r.credit.found and not r.credit.lanes_known
    assert "but the SL2VL tables are not known" in r.credit.lanes


def test_path_records_for_part_of_the_routes_stay_one_lane() -> None:
    text = (DATA / RUNS["dfsssp-qos"][2]).read_text()
    blocks = text.split("PathRecord dump:\n")[1:]
    part = "".join("PathRecord dump:\n" + b for b in blocks[:80])
    r = judge("dfsssp-qos", Lanes(tables(RUNS["dfsssp-qos"][1]), parse_path_records(part, "part.txt")))
    assert r.credit.found and not r.credit.lanes_known
    assert "the path records (part.txt) give the SL of 80 of the 90 host routes judged" in r.credit.lanes


def test_tables_lacking_a_port_the_routes_use_stay_one_lane() -> None:
    # the run's smpquery tables, less the one of LID 1 (ring-sw01) for out port 8
    name = RUNS["dfsssp"][1]
    parts = (DATA / name).read_text().split("# SL2VL table: ")
    kept = [p for p in parts if not (p.startswith("Lid 1\n") and ", out  8:" in p)]
    assert len(kept) == len(parts) - 1
    t = parse_sl2vl("# SL2VL table: ".join(kept), "cut.txt")
    r = judge("dfsssp", Lanes(t, paths(RUNS["dfsssp"][2])))
    assert r.credit.found and not r.credit.lanes_known
    assert "but they lack LID 1 in port " in r.credit.lanes
    assert "out port 8, which host routes use" in r.credit.lanes


def test_tables_mapping_every_sl_to_one_vl_need_no_sls() -> None:
    """Tables whose every SL maps to VL 0 (smpquery text of the lab's ring, every VL written as
    0): the SL does not matter, the lanes are known, and the one-lane loop is on VL 0."""
    text = (DATA / RUNS["minhop"][1]).read_text()
    zero = "\n".join(
        ln.split(": |")[0] + ": |" + " 0|" * 16 if ln.startswith("ports:") else ln for ln in text.splitlines()
    )
    r = judge("minhop", Lanes(parse_sl2vl(zero, "zero.txt")))
    c = r.credit
    assert c.found and c.lanes_known and c.vls == (0,) * 5
    assert "which map every SL to one VL on each port (the SL does not matter)" in c.lanes


def test_a_clean_fat_tree_with_lanes_reports_nothing() -> None:
    """fattree-small's minhop tables (lab capture) with every SL mapped to VL 0 on its leaf and
    spine ports: no credit loop per VL, nothing reported."""
    topo = parse_ibnetdiscover_text((LFT / "ibnetdiscover-fattree-small.txt").read_text())
    lfts = parse_lfts((LFT / "dump_fts-fattree-small-minhop.txt").read_text(), "fts")
    rows = []
    for n in topo.switches():
        rows.append(f"# SL2VL table: Lid {n.lid}")
        for port, _, _ in topo.neighbours(n.guid):
            rows += [f"ports: in {i:2d}, out {port:2d}: |" + " 0|" * 16 for i in range(n.nports + 1)]
    r = check_routes(topo, classify(topo), lfts, lanes=Lanes(parse_sl2vl("\n".join(rows), "zero.txt")))
    assert not r.credit.found and r.credit.lanes_known and r.credit.vls_used == (0,)
    assert [f for f in r.findings if f.severity in (Severity.ERROR, Severity.WARNING)] == []


def judge_with_sm(run: str, engine: str, failed: tuple[str, ...] = ()) -> RouteReport:
    fts = RUNS[run][0]
    sm = SmRouting(engine=engine, failed=failed, source="opensm.log")
    return check_routes(ring(), classify(ring()), parse_lfts((DATA / fts).read_text(), fts), sm=sm)


@pytest.mark.parametrize(("run", "engine"), [("dfsssp", "dfsssp"), ("lash", "lash")])
def test_one_lane_cycle_under_an_engine_that_spreads_vls_is_a_warning_saying_so(
    run: str, engine: str
) -> None:
    # the SM's log says it routes with an engine that gives routes SLs to break such cycles:
    # without the lanes the cycle is not known to deadlock, so no error (exit 10) on its word
    r = judge_with_sm(run, engine)
    loops = [f for f in r.findings if f.kind == CREDIT_LOOP]
    assert len(loops) == 1 and loops[0].severity is Severity.WARNING
    assert loops[0].detail["sm_engine_spreads_vls"] == engine
    assert [f for f in r.findings if f.severity is Severity.ERROR] == []
    assert r.credit.found and not r.credit.lanes_known  # the cycle is still shown link by link


@pytest.mark.parametrize(("engine", "failed"), [("minhop", ()), ("updn", ()), ("minhop", ("dfsssp",))])
def test_one_lane_cycle_under_an_engine_on_one_sl_stays_an_error(
    engine: str, failed: tuple[str, ...]
) -> None:
    # minhop and updn route every host on SL 0; a dfsssp that failed and fell back to minhop
    # gave no SLs either
    r = judge_with_sm("minhop", engine, failed)
    loops = [f for f in r.findings if f.kind == CREDIT_LOOP]
    assert len(loops) == 1 and loops[0].severity is Severity.ERROR
    assert "sm_engine_spreads_vls" not in loops[0].detail


def test_the_lanes_decide_whatever_the_sm_says() -> None:
    # with the lanes read, the per-VL verdict stands: minhop's loop on VL 0 is an error even if
    # a log claimed dfsssp
    fts = RUNS["minhop"][0]
    r = check_routes(
        ring(),
        classify(ring()),
        parse_lfts((DATA / fts).read_text(), fts),
        sm=SmRouting(engine="dfsssp", source="opensm.log"),
        lanes=lanes_of("minhop"),
    )
    loops = [f for f in r.findings if f.kind == CREDIT_LOOP]
    assert len(loops) == 1 and loops[0].severity is Severity.ERROR and loops[0].detail["cycle_vls"] == [0] * 5
