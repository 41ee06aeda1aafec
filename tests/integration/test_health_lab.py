"""Link health end to end: planted faults in a lab, the real ibqueryerrors, the store, `ibfab health`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric import lab
from fabric.app.collect import Collector
from fabric.app.health import assess_store
from fabric.app.source import Source
from fabric.cli.main import main
from fabric.health.score import finding_kind
from fabric.present.counters import snapshot_line
from fabric.store import Store
from topology.classify import switch_name
from topology.model import Fabric

SPEC = "leafspine:leaves=2,spines=2,hosts=2"
NAME = "health"

pytestmark = pytest.mark.lab


@pytest.fixture
def lab_up() -> Iterator[str]:
    lab.up(SPEC, name=NAME)
    try:
        yield NAME
    finally:
        lab.down(NAME)


def _key(fabric: Fabric, node: str, port: int) -> tuple[tuple[str, int], tuple[str, int]]:
    """The link key of the cable on switch ``node`` ``port``."""
    guid = next(g for g, n in fabric.nodes.items() if switch_name(n.description) == node)
    link = next(lk for lk in fabric.links_of(guid) if (guid, port) in lk.key)
    return link.key


def _cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout, res.stderr


def test_planted_links_and_only_those_rank_on_top(lab_up: str, tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    with Store.open(db) as store:
        collector = Collector(store, Source("lab", lab_up))
        collector.collect_once()  # baseline
        fabric = store.load_topology().fabric
        sym = _key(fabric, "leaf-01", 3)
        downed = _key(fabric, "leaf-02", 4)
        unplugged = _key(fabric, "leaf-01", 4)
        lab.set_counter(lab_up, "leaf-01", 3, "SymbolErrorCounter", 30)
        lab.set_counter(lab_up, "leaf-02", 4, "LinkDownedCounter", 2)
        lab.set_counter(lab_up, "spine-02", 2, "LinkDownedCounter", 2)
        lab.link_down(lab_up, "leaf-01", 4)
    code, out, err = _cli("counters", "collect", "--lab", lab_up, "--count", "1", "--db", db)
    assert code == 0 and "1 links down" in out, err
    lab.link_up(lab_up, "leaf-01", 4)
    lab.set_counter(lab_up, "leaf-01", 3, "SymbolErrorCounter", 90)
    with Store.open(db) as store:
        assert "0 links down, 1 up" in snapshot_line(Collector(store, Source("lab", lab_up)).collect_once())
        view = assess_store(store, since_s=3600)

    links = {lk.key: lk for lk in view.report.links}
    assert {lk.key for lk in view.report.links[:3]} == {sym, downed, unplugged}
    s = links[sym]
    assert s.status.value == "critical" and s.ber.errors == 90 and s.counters["symbol_errors"] == 90
    assert finding_kind(s.reasons[0]) == "ber" and "symbol errors: 90" in s.reasons[0]
    d = links[downed]
    assert d.status.value == "critical" and d.downs == 2 and d.flaps_per_hour == pytest.approx(2.0)
    assert d.reasons[0].startswith("link went down 2 times")
    u = links[unplugged]
    assert u.status.value == "warn" and u.downs == 1 and u.flaps_per_hour > 0
    assert u.reasons[0].startswith("link went down 1 time")
    rest = [lk for lk in view.report.links if lk.key not in {sym, downed, unplugged}]
    assert len(rest) == 5 and all(lk.status.value in ("ok", "watch") for lk in rest)
    assert view.recorded >= 3  # today's non-ok links went into the history

    # the CLI says the same, as a table and as JSON
    code, out, err = _cli("health", "--db", db, "--since", "1h")
    assert code == 0, err
    table = out.splitlines()
    assert [row.split()[1] for row in table[2:5]] == ["critical", "critical", "warn"]
    assert "leaf-01:3 <-> spine-01:1" in "\n".join(table[2:5])
    assert "leaf-01:4 <-> spine-02:1" in "\n".join(table[2:5])
    assert "leaf-02:4 <-> spine-02:2" in "\n".join(table[2:5])
    assert "8 links over 60 min" in out
    code, out, _ = _cli("health", "--db", db, "--since", "1h", "--json")
    data = json.loads(out)
    assert set(data) == {"links", "nodes", "summary"}
    top = [
        ((lk["a"]["guid"], lk["a"]["port"]), (lk["b"]["guid"], lk["b"]["port"])) for lk in data["links"][:3]
    ]
    assert set(top) == {sym, downed, unplugged}
    assert data["summary"]["links_by_status"]["critical"] == 2 and data["summary"]["snapshots"] == 3


def test_saturated_symbol_errors_are_a_lower_bound(lab_up: str, tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        collector = Collector(store, Source("lab", lab_up))
        collector.collect_once()
        assert "65535" in lab.set_counter(lab_up, "leaf-02", 3, "SymbolErrorCounter", 70000)
        collector.collect_once()
        rows = store.load_port_counters(store.list_counter_snapshots()[-1].id)
        fabric = store.load_topology().fabric
        key = _key(fabric, "leaf-02", 3)
        assert sorted(r.counters["symbol_errors"] for r in rows if (r.guid, r.port) in key) == [0, 65535]
        view = assess_store(store, since_s=3600)
    link = next(lk for lk in view.report.links if lk.key == key)
    assert view.report.links[0].key == key
    assert link.ber.at_least and link.ber.errors == 65535 and link.status.value == "critical"
    assert any("saturated" in r and "symbol_errors" in r for r in link.reasons)
    assert any(r.startswith("BER") and "at least 65535 symbol errors" in r for r in link.reasons)


def test_counter_going_down_is_a_new_baseline(lab_up: str, tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.db") as store:
        collector = Collector(store, Source("lab", lab_up))
        collector.collect_once()
        lab.set_counter(lab_up, "spine-01", 2, "SymbolErrorCounter", 500)
        collector.collect_once()
        lab.set_counter(lab_up, "spine-01", 2, "SymbolErrorCounter", 20)  # cleared, then 20 new
        collector.collect_once()
        key = _key(store.load_topology().fabric, "spine-01", 2)
        view = assess_store(store, since_s=3600)
    link = next(lk for lk in view.report.links if lk.key == key)
    assert link.counters["symbol_errors"] == 520  # 500, then 20 since the reset: never negative
    assert all(v >= 0 for lk in view.report.links for v in lk.counters.values())
    assert any(e.reset for e in link.ends) and link.ber.at_least
    assert any("cleared" in r for r in link.reasons)


def test_health_without_counters_says_to_collect_first(tmp_path: Path) -> None:
    code, out, err = _cli("health", "--db", str(tmp_path / "none.db"))
    assert code == 5 and out == "" and "ibfab counters collect" in err and err.count("\n") == 1
    Store.open(tmp_path / "empty.db").close()
    code, _, err = _cli("health", "--db", str(tmp_path / "empty.db"))
    assert code == 5 and "ibfab counters collect" in err and err.count("\n") == 1


def test_findings_history_is_idempotent_per_day_and_makes_repeat_offenders(
    lab_up: str, tmp_path: Path
) -> None:
    import time as _time

    from fabric.app.health import utc_day

    with Store.open(tmp_path / "f.db") as store:
        collector = Collector(store, Source("lab", lab_up))
        collector.collect_once()
        lab.set_counter(lab_up, "leaf-01", 3, "SymbolErrorCounter", 50)
        collector.collect_once()
        key = _key(store.load_topology().fabric, "leaf-01", 3)
        first = assess_store(store, since_s=3600)
        n_rows = len(store.load_findings_history())
        assess_store(store, since_s=3600)
        assert len(store.load_findings_history()) == n_rows  # the same day: no new rows
        link = next(lk for lk in first.report.links if lk.key == key)
        assert not link.repeat_offender and link.repeat_days == 1
        # the same link was bad on two earlier days: today makes three, a repeat offender
        from fabric.store import link_subject

        now = _time.time()
        for days_ago in (1, 2):
            store.record_findings(utc_day(now - days_ago * 86400), [(link_subject(key), "ber", "critical")])
        again = assess_store(store, since_s=3600)
    link = next(lk for lk in again.report.links if lk.key == key)
    assert link.repeat_offender and link.repeat_days == 3
    assert any(r.startswith("repeat offender: findings on 3 distinct days") for r in link.reasons)
