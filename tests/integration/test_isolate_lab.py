"""Isolation against a lab fabric with the real ibportstate and ibnetdiscover.

What really happens in ibsim (checked): ``ibportstate <lid> <port> disable`` takes the cable out of
``ibnetdiscover`` at once, but OpenSM hears no trap, so ``apply_plan`` sends it a SIGHUP to
reroute. ``enable`` alone leaves the port Polling; undo also Unlinks + ReLinks it on the console.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner

from fabric.app.discovery.discover import Discovery, discover
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.cli.main import main
from fabric.lab import simulator as lab
from fabric.store import Store

pytestmark = pytest.mark.lab
NAME = "iso"


@pytest.fixture
def rail_lab() -> Iterator[str]:
    lab.up("rail-small", (), name=NAME)
    try:
        yield NAME
    finally:
        lab.down(NAME)


def _uplink(d: Discovery, leaf: str, port: int) -> tuple[tuple[str, int], tuple[str, int]]:
    g = next(x for x, c in d.classification.nodes.items() if c.name == leaf)
    return next(lk.key for p, _, lk in d.fabric.neighbours(g) if p == port)


def _hosts_connected(d: Discovery) -> bool:
    g = d.fabric.graph()
    hcas = [n.guid for n in d.fabric.hcas()]
    comp = nx.node_connected_component(g, hcas[0])
    return all(h in comp for h in hcas)


def test_recommended_isolation_apply_rediscover_audit_undo(rail_lab: str, tmp_path: Path) -> None:
    before = discover(Session(Source.lab(rail_lab)))
    hcas = len(before.fabric.hcas())
    key = _uplink(before, "leaf-su01-r0", 5)
    a, b = key
    health = tmp_path / "health.json"
    health.write_text(
        json.dumps(
            {
                "links": [
                    {
                        "a": {"guid": a[0], "port": a[1]},
                        "b": {"guid": b[0], "port": b[1]},
                        "status": "critical",
                        "score": 10,
                        "ber": {"value": 2e-11},
                        "flaps_per_hour": 0.0,
                        "reasons": ["BER 2e-11 over budget"],
                    }
                ]
            }
        )
    )
    db = str(tmp_path / "ibfab.db")
    runner = CliRunner()
    res = runner.invoke(main, ["recommend", "--lab", rail_lab, "--health", str(health), "--json", "--db", db])
    assert res.exit_code == 0, res.output
    recs = json.loads(res.stdout)
    (iso,) = [x for x in recs["actions"] if x["kind"] == "isolate_port"]
    assert iso["target"].startswith("leaf-su01-r0:5 <-> spine-")
    assert recs["routing"]["subnet_manager"]["engine"] == "minhop"
    assert recs["routing"]["subnet_manager"]["vendor"] == "upstream"

    # Without --yes and without a terminal: refused in one line, nothing changed.
    res = runner.invoke(main, ["isolate", "leaf-su01-r0:5", "--lab", rail_lab, "--apply", "--db", db])
    assert res.exit_code == 2 and "add --yes" in res.stderr
    assert key in {lk.key for lk in discover(Session(Source.lab(rail_lab))).fabric.links}

    res = runner.invoke(
        main, ["isolate", "leaf-su01-r0:5", "--lab", rail_lab, "--apply", "--yes", "--db", db]
    )
    assert res.exit_code == 0, res.output
    assert "audit 1: ibportstate" in res.stdout

    after = discover(Session(Source.lab(rail_lab)))
    assert key not in {lk.key for lk in after.fabric.links}
    assert len(after.fabric.links) == len(before.fabric.links) - 1
    assert len(after.fabric.hcas()) == hcas and _hosts_connected(after)
    # OpenSM reroutes after the SIGHUP: a new 'tables configured' line follows the isolation.
    # It sweeps in its own time (seconds on a loaded machine), so wait for it.
    deadline = time.monotonic() + 30
    while (
        Path(lab.opensm_log(rail_lab)).read_text().count("tables configured on all switches") < 2
        and time.monotonic() < deadline
    ):
        time.sleep(0.2)
    assert Path(lab.opensm_log(rail_lab)).read_text().count("tables configured on all switches") >= 2

    with Store.open(db) as store:
        (entry,) = store.audit_log()
    assert entry.action == "isolate" and entry.result.startswith("ok")
    # by directed route from the discovery's origin, around the cable being disabled
    assert entry.command.startswith("ibportstate -D 0,") and entry.command.split()[3:5] == ["5", "disable"]
    assert entry.target.startswith(f"{a[0]}/5 " if a[1] == 5 else f"{b[0]}/5 ")
    assert entry.user

    # Inside the 126-minute re-test window: refused unless forced.
    res = runner.invoke(main, ["isolate", "--undo", "1", "--lab", rail_lab, "--apply", "--yes", "--db", db])
    assert res.exit_code == 8 and "re-test window" in res.stderr
    res = runner.invoke(
        main, ["isolate", "--undo", "1", "--lab", rail_lab, "--apply", "--yes", "--force", "--db", db]
    )
    assert res.exit_code == 0, res.output
    assert 'Unlink "leaf-su01-r0"[5]' in res.stdout

    back = discover(Session(Source.lab(rail_lab)))
    assert key in {lk.key for lk in back.fabric.links}
    assert len(back.fabric.links) == len(before.fabric.links)
    with Store.open(db) as store:
        log_entries = store.audit_log()
    assert [(e.action, e.undo_of) for e in log_entries] == [("isolate", None), ("deisolate", 1)]
    res = runner.invoke(main, ["isolate", "--undo", "1", "--lab", rail_lab, "--db", db])
    assert res.exit_code == 2 and "already undone" in res.stderr


def test_unsafe_isolation_is_refused_and_changes_nothing(rail_lab: str, tmp_path: Path) -> None:
    db = str(tmp_path / "ibfab.db")
    res = CliRunner().invoke(
        main,
        ["isolate", "leaf-su01-r0:5", "leaf-su01-r0:6", "--lab", rail_lab, "--apply", "--yes", "--db", db],
    )
    assert res.exit_code == 8
    assert "[uplink_floor]" in res.stdout
    d = discover(Session(Source.lab(rail_lab)))
    assert len(d.fabric.links) == 64 + 16 * 4  # every HCA cable and every uplink still there
    with Store.open(db) as store:
        assert store.audit_log() == []


def test_whatif_follows_the_labs_forwarding_tables(rail_lab: str) -> None:
    res = CliRunner().invoke(main, ["whatif", "degrade", "leaf-su01-r0:5=50%", "--lab", rail_lab, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["routing_model"] == "static routes from the forwarding tables"
    rail0 = next(g for g in out["groups"] if g["group"] == "rail 0")
    # OpenSM's min-hop tables send some rail-0 destinations over the halved uplink: those pairs
    # run at half speed alone; ideal AR still has 1400 Gb/s up for 914 Gb/s of demand.
    assert rail0["pairs"] == 56 and set(rail0["slowed_pairs"]) == {"0.5"}
    assert 0 < rail0["all_to_all"]["static"] <= rail0["all_to_all"]["adaptive"] == pytest.approx(1.0)
    others = [g for g in out["groups"] if g["group"] != "rail 0"]
    assert all(g["slowed_pairs"] == {} for g in others)


def test_whatif_isolate_keeps_table_routes_of_unaffected_pairs(rail_lab: str) -> None:
    """Only pairs whose table route used the isolated uplink are rerouted: the other rails keep
    exactly their baseline, and rail 3 loses some all-to-all bandwidth under static routing."""
    res = CliRunner().invoke(main, ["whatif", "isolate", "leaf-su01-r3:5", "--lab", rail_lab, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["routing_model"].startswith("static routes from the forwarding tables; pairs whose route")
    by_group = {g["group"]: g for g in out["groups"]}
    for name, g in by_group.items():
        if name != "rail 3":
            assert g["all_to_all"]["static"] == pytest.approx(g["all_to_all"]["static_baseline"]), name
    rail3 = by_group["rail 3"]["all_to_all"]
    assert rail3["static"] < rail3["static_baseline"] and rail3["adaptive"] == pytest.approx(1.0)
    assert "rail-3 pairs" in out["sentence"]
