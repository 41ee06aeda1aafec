"""``ibfab status`` on lab fabrics, end to end (the real ibnetdiscover, ibqueryerrors and OpenSM,
the lab's simulated sweep traffic): with four faults planted (rising symbol errors on an uplink,
a flapping uplink, a 1x uplink, a miswired host) it lists exactly those four, ranked, each with
every source's evidence; a clean lab, collected and swept the same way, lists nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fabric.app.health.collect import Collector
from fabric.app.session import Session, StoreAccess
from fabric.app.source import Source
from fabric.app.sweeps import sweep as sweeps
from fabric.cli.main import main
from fabric.lab import simulator as lab
from fabric.store import Store
from topology.classify import switch_name

pytestmark = pytest.mark.lab
NAME = "status"
SYMBOLS = ("leaf-su01-r0", 6)  # an uplink whose symbol errors rise
FLAPPING = ("leaf-su02-r1", 7)  # an uplink unplugged and plugged back, LinkDowned on both ends
ONE_X = "degraded-width:leaf-su01-r3:5:1"  # an uplink that trains at 1x
MISWIRE = "miswire:dgx-0002:1:2"


@pytest.fixture
def lab_up(request: pytest.FixtureRequest) -> Iterator[str]:
    lab.up("rail-small", request.param, name=NAME)
    try:
        yield NAME
    finally:
        lab.down(NAME)


def _far(store: Store, switch: str, port: int) -> tuple[str, int]:
    fabric = store.load_topology().fabric
    guid = next(g for g, n in fabric.nodes.items() if switch_name(n.description) == switch)
    far = next(f for p, f, _ in fabric.neighbours(guid) if p == port)
    return switch_name(fabric.nodes[far.guid].description), far.port


def collect_and_sweep(name: str, db: str, plant: bool) -> None:
    """Three collections (with the symbol errors and the flap planted between them when ``plant``),
    then a rail-pairs sweep stored as ``ibfab sweep run`` stores it."""
    session = Session(Source.lab(name), StoreAccess(Path(db)))
    with session.store.write() as store:
        collector = Collector(store, session)
        collector.collect_once()
        flap = (FLAPPING, _far(store, *FLAPPING))
        if plant:
            lab.set_counter(name, *SYMBOLS, "symbol_errors", 40)
            for node, port in flap:
                lab.set_counter(name, node, port, "link_downed", 1)
            lab.link_down(name, *FLAPPING)
        collector.collect_once()
        if plant:
            lab.link_up(name, *FLAPPING)
            lab.set_counter(name, *SYMBOLS, "symbol_errors", 400)
            for node, port in flap:
                lab.set_counter(name, node, port, "link_downed", 3)
        collector.collect_once()
    ctx = sweeps.prepare(session, "rail-pairs")
    outcome = sweeps.run_lab(ctx, session)
    sweeps.save(outcome, ctx.source, sweeps.names_of(ctx.discovery), session.store)


def status(db: str) -> tuple[int, dict[str, Any], str]:
    runner = CliRunner()
    res = runner.invoke(main, ["status", "--db", db, "--json"])
    assert res.exit_code in (0, 10), res.output
    return res.exit_code, json.loads(res.stdout), runner.invoke(main, ["status", "--db", db]).stdout


@pytest.mark.parametrize("lab_up", [(ONE_X, MISWIRE)], indirect=True)
def test_the_four_planted_faults_and_only_those_with_all_their_evidence(lab_up: str, tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    collect_and_sweep(lab_up, db, plant=True)
    code, doc, text = status(db)
    assert code == 10
    got = [(e["element"]["name"], e["severity"], e["sources"], e["action"]["kind"]) for e in doc["entries"]]
    symbols, flapping = got[0], got[1]
    assert symbols[0].startswith("leaf-su01-r0:6 <-> spine-")
    assert flapping[0].startswith("leaf-su02-r1:7 <-> spine-")
    assert symbols[1:] == flapping[1:] == ("critical", ["health"], "isolate_port")
    assert got[2:] == [
        # the 1x uplink: health judges its width, discovery sees it, the sweep's slow pairs point at it
        ("leaf-su01-r3:5 <-> spine-01:4", "error", ["health", "sweep", "wiring"], "replace_cable"),
        ("dgx-0002", "error", ["wiring"], "swap_cables"),
    ]
    by_name = {e["element"]["name"]: e for e in doc["entries"]}
    one_x = by_name["leaf-su01-r3:5 <-> spine-01:4"]
    assert [ev["kind"] for ev in one_x["evidence"]] == ["degraded_link", "suspect", "degraded_link"]
    assert one_x["confidence"] == "certain"
    sweep_ev = one_x["evidence"][1]["text"]
    assert "all 4 pair(s) crossing it were slow" in sweep_ev and "trains at 1xHDR" in sweep_ev
    # recommend with the same evidence: the replacement quotes discovery and the sweep
    assert {e.split(":")[0].split(" ")[0] for e in one_x["action"]["evidence"]} == {"discovery", "sweep"}
    assert by_name[symbols[0]]["confidence"] == "high" and by_name[flapping[0]]["basis"] == "counted"
    assert "4 things wrong in topology snapshot " in text and "(2 critical, 2 error)" in text


@pytest.mark.parametrize("lab_up", [()], indirect=True)
def test_a_clean_lab_lists_nothing(lab_up: str, tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    collect_and_sweep(lab_up, db, plant=False)
    code, doc, text = status(db)
    assert code == 0 and doc["entries"] == []
    read = {s["source"] for s in doc["sources"] if s["read"]}
    assert read == {"health", "reading", "sweep", "wiring"}  # no plan given, no routes stored
    assert text.startswith("Nothing is wrong in topology snapshot 1 (lab status)")
