"""``ibfab status`` over stores built without a lab: each source's finding lands on its element with
its evidence and the action recommend gives it; a clean fabric lists nothing; a sweep suspect
reaches the advice (a replacement when it alone explains its slow pairs, nothing on a tie); one
reading's saturated counters get their clearing; a plan's miswire joins discovery's on the host;
stored routes add their findings; the real ibdiagnet run lists exactly its saturated and large
counters."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from fabric.app.discovery.ibdiagnet import import_ibdiagnet_run
from fabric.app.session import StoreAccess
from fabric.cli.main import main
from fabric.store import Store
from tests.conftest import REALDATA
from tests.statusdata import clean_store, save_slow_sweep
from tests.tui_data import build_store, uplinks
from topology.cableplan import format_cable_plan
from topology.classify import classify
from topology.generate_routes import minhop_tables
from topology.lft import NO_ROUTE
from topology.model import Link
from topology.plancheck import plan_rows


def status(db: Path, *args: str) -> tuple[int, dict[str, Any]]:
    res = CliRunner().invoke(main, ["status", "--db", str(db), "--json", *args])
    assert res.exit_code in (0, 10), res.output
    doc: dict[str, Any] = json.loads(res.stdout)
    return res.exit_code, doc


def text(db: Path, *args: str) -> str:
    return CliRunner().invoke(main, ["status", "--db", str(db), *args]).stdout


def cable_key(lk: Link) -> str:
    return f"{lk.a.guid}/{lk.a.port}-{lk.b.guid}/{lk.b.port}"


def summary(doc: dict[str, Any]) -> list[tuple[str, str, list[str], str | None]]:
    """(element key, severity, sources, action kind) per entry, in rank order."""
    return [
        (
            e["element"]["key"],
            e["severity"],
            e["sources"],
            e["action"]["kind"] if e["action"] else None,
        )
        for e in doc["entries"]
    ]


def test_a_clean_fabric_lists_nothing_and_says_what_each_source_read(tmp_path: Path) -> None:
    db = tmp_path / "clean.db"
    clean_store(db, "rail-small", time.time() - 600)
    code, doc = status(db)
    assert code == 0 and doc["entries"] == []
    sources = {s["source"]: s for s in doc["sources"]}
    assert sources["health"]["read"].startswith("128 links over 2 min of readings (3 snapshots")
    assert sources["sweep"]["missing"] == "no sweep stored (ibfab sweep run)"
    assert sources["plan"]["missing"].startswith("no cable plan given")
    out = text(db)
    assert out.startswith("Nothing is wrong in topology snapshot 1 (generated rail-small)")
    assert "  sweep: nothing read: no sweep stored (ibfab sweep run)" in out


def test_every_planted_fault_is_one_entry_with_its_evidence_and_action(tmp_path: Path) -> None:
    """Rising symbol errors and a flapping uplink (health), a miswired host (wiring) and an uplink
    only a sweep points at: exactly those four, ranked, each with the action recommend gives."""
    t0 = time.time() - 3600
    db, fabric, ber_bad, flappy = build_store(tmp_path / "s.db", snapshots=16, t0=t0)
    swept = uplinks(fabric)[10]
    assert swept.key not in (ber_bad.key, flappy.key)
    save_slow_sweep(db, fabric, swept, slow_pairs=3, when=t0 + 1000)
    code, doc = status(db)
    assert code == 10
    entries = summary(doc)
    assert [e[0] for e in entries[:2]] in (
        [cable_key(ber_bad), cable_key(flappy)],
        [cable_key(flappy), cable_key(ber_bad)],
    )
    # then by confidence: the miswire is seen in the cabling, the sweep's cable measured
    assert entries[2:] == [
        ("dgx-0002", "error", ["wiring"], "swap_cables"),
        (cable_key(swept), "error", ["sweep"], "replace_cable"),
    ]
    assert all(e[1] == "critical" and e[2] == ["health"] and e[3] == "isolate_port" for e in entries[:2])
    by_key = {e["element"]["key"]: e for e in doc["entries"]}
    sym = by_key[cable_key(ber_bad)]
    assert sym["confidence"] == "high" and sym["basis"] == "significant"
    assert sym["evidence"][0]["text"].startswith("critical (score ") and "symbol errors" in json.dumps(sym)
    flap = by_key[cable_key(flappy)]
    assert flap["basis"] == "counted" and flap["also"][0]["kind"] == "replace_cable"
    swept_entry = by_key[cable_key(swept)]
    assert swept_entry["confidence"] == "high" and swept_entry["basis"] == "sole_cause"
    assert swept_entry["evidence"][0]["text"].startswith("sweep 1 (rail-pairs at ")
    assert "all 3 pair(s) crossing it were slow" in swept_entry["evidence"][0]["text"]
    assert swept_entry["action"]["evidence"] == [swept_entry["evidence"][0]["text"]]
    # both ends named, switch end first, as recommend names its target
    name = swept_entry["element"]["name"]
    assert name.startswith("leaf-") and " <-> spine-" in name and swept_entry["action"]["target"] == name
    # recommend takes the same evidence: the sweep suspect is a replacement there too
    res = CliRunner().invoke(main, ["recommend", "--db", str(db), "--json"])
    actions = json.loads(res.stdout)["actions"]
    assert [a["evidence"] for a in actions if a["kind"] == "replace_cable" and a["target"] == name] == [
        swept_entry["action"]["evidence"]
    ]
    out = text(db)
    assert "4 things wrong in topology snapshot 1" in out
    assert f"4. ERROR  {name}  (cable)" in out and "   - [sweep] sweep 1 (rail-pairs at " in out
    assert "3. ERROR  dgx-0002  (host)" in out and "   action: swap_cables: dgx-0002" in out


def test_a_tied_sweep_suspect_gets_no_action_on_a_guess(tmp_path: Path) -> None:
    t0 = time.time() - 600
    db = tmp_path / "tie.db"
    fabric = clean_store(db, "rail-small", t0)
    up = uplinks(fabric)[3]
    save_slow_sweep(db, fabric, up, slow_pairs=1, when=t0 + 100)
    _, doc = status(db)
    assert [(e[1], e[2], e[3]) for e in summary(doc)] == [("warning", ["sweep"], None)] * 2
    assert all(e["no_action"] == "tie" and e["confidence"] == "low" for e in doc["entries"])
    assert cable_key(up) in {e["element"]["key"] for e in doc["entries"]}
    notes = json.loads(CliRunner().invoke(main, ["recommend", "--db", str(db), "--json"]).stdout)["notes"]
    assert any(n.startswith("not replacing ") and "(a tie)" in n for n in notes)
    assert "action: none on a guess: the sweep cannot tell these cables apart" in text(db)


def test_a_saturated_reading_gets_its_counters_cleared(tmp_path: Path) -> None:
    t0 = time.time() - 600
    db = tmp_path / "sat.db"
    fabric = clean_store(db, "leafspine:leaves=2,spines=2,hosts=2", t0, readings=0)
    up = uplinks(fabric)[0]
    from tests.tui_data import counter_rows

    with Store.open(db) as store:
        rows = counter_rows(fabric, t0, 1, {(up.a.guid, up.a.port): {"symbol_errors": 65535}})
        store.save_counter_snapshot(t0, "synthetic", 1, rows)
    _, doc = status(db, "--since", "all")
    assert summary(doc) == [(cable_key(up), "warning", ["reading"], "clear_counters")]
    entry = doc["entries"][0]
    assert entry["confidence"] == "medium" and entry["basis"] == "saturated"
    commands = [c["text"] for c in entry["action"]["commands"]]
    assert commands[0].startswith("perfquery -R ") and commands[1].startswith("perfquery -R ")
    assert entry["action"]["evidence"][0].startswith("counters: symbol_errors at ")


def test_a_plan_miswire_joins_discoverys_on_the_host(tmp_path: Path) -> None:
    t0 = time.time() - 600
    plan = tmp_path / "plan.csv"
    clean = clean_store(tmp_path / "plan-src.db", "rail-small", t0)
    plan.write_text(format_cable_plan(plan_rows(clean), with_speed=True))
    db = tmp_path / "mis.db"
    clean_store(db, "rail-small", t0, faults=("miswire:dgx-0002:1:2",))
    _, doc = status(db, "--plan", str(plan))
    assert summary(doc) == [("dgx-0002", "error", ["wiring", "plan"], "swap_cables")]
    plan_ev = doc["entries"][0]["evidence"][1]
    assert plan_ev["kind"] == "miswired" and plan_ev["text"].startswith("miswired: expected ")
    # the plan's own recabling is the next action for the host
    assert [a["kind"] for a in doc["entries"][0]["also"]] == ["move_cables"]
    sources = {s["source"]: s for s in doc["sources"]}
    assert sources["plan"]["read"] == str(plan) and sources["plan"]["items"] == 1
    # the clean fabric against the same plan: nothing
    _, doc = status(tmp_path / "plan-src.db", "--plan", str(plan))
    assert doc["entries"] == []
    # a plan checked and kept in the store is read without --plan
    res = CliRunner().invoke(main, ["topology", "check", "--plan", str(plan), "--db", str(db), "--save"])
    assert res.exit_code == 10 and "kept 1 plan file(s) in the store" in res.stderr, res.output
    _, doc = status(db)
    assert summary(doc) == [("dgx-0002", "error", ["wiring", "plan"], "swap_cables")]
    read = {s["source"]: s for s in doc["sources"]}["plan"]["read"]
    assert read.startswith("the plan stored at ") and read.endswith(str(plan))


def test_stored_routes_are_judged_and_a_black_hole_is_listed(tmp_path: Path) -> None:
    t0 = time.time() - 600
    db = tmp_path / "routes.db"
    fabric = clean_store(db, "fattree-small", t0)
    tables = minhop_tables(fabric)
    with Store.open(db) as store:
        store.save_routes(1, tables)
    _, doc = status(db)
    assert doc["entries"] == [] and {s["source"]: s for s in doc["sources"]}["routes"]["read"]
    # the spine the first leaf sends a far host's LID to drops it: a black hole on used routes
    cls = classify(fabric)
    first, last = cls.leaves()[0], cls.leaves()[-1]
    dst = next(
        fabric.nodes[far].lid
        for lk in fabric.links_of(last)
        if fabric.nodes[far := lk.other(last).guid].kind.value == "hca"
    )
    assert dst is not None
    up_port = int(tables.ports[tables.row(first), dst])
    spine = next(far.guid for port, far, _ in fabric.neighbours(first) if port == up_port)
    tables.ports[tables.row(spine), dst] = NO_ROUTE
    with Store.open(db) as store:
        store.save_routes(1, tables)
    _, doc = status(db)
    assert [(e["element"]["kind"], e["severity"], e["sources"]) for e in doc["entries"]] == [
        ("switch", "error", ["routes"])
    ]
    assert doc["entries"][0]["evidence"][0]["kind"] == "no_route"
    assert doc["entries"][0]["no_action"] == "none"
    assert "never arrive" in text(db)


def test_the_real_ibdiagnet_run_lists_its_saturated_and_large_counters(tmp_path: Path) -> None:
    db = tmp_path / "ib.db"
    import_ibdiagnet_run(StoreAccess(db), REALDATA / "ibdiagnet")
    _, doc = status(db, "--since", "all")
    entries = doc["entries"]
    assert len(entries) == 9
    assert [e["evidence"][0]["kind"] for e in entries] == ["saturated"] * 6 + ["large_total"] * 3
    assert all(e["sources"] == ["reading"] and e["action"]["kind"] == "clear_counters" for e in entries)
    assert all(" <-> " in e["element"]["name"] and e["element"]["kind"] == "cable" for e in entries)
    health = {s["source"]: s for s in doc["sources"]}["health"]
    assert health["missing"].startswith("one counter reading (snapshot 1): rates need a second")
