"""Link health end to end: planted faults in a lab, the real ibqueryerrors, the store, `ibfab health`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.app.health.assess import assess_store
from fabric.app.health.collect import Collector
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.cli.main import main
from fabric.health.score import finding_kind
from fabric.lab import simulator as lab
from fabric.present.counters import snapshot_line
from fabric.store import Store
from tests.healthpaths import assert_same_health
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
        collector = Collector(store, Session(Source.lab(lab_up)))
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
        assert "0 links down, 1 up" in snapshot_line(
            Collector(store, Session(Source.lab(lab_up))).collect_once()
        )
        view = assess_store(store, since_s=3600)

    links = {lk.key: lk for lk in view.report.links}
    assert {lk.key for lk in view.report.links[:3]} == {sym, downed, unplugged}
    s = links[sym]
    assert s.status.value == "critical" and s.ber.errors == 90 and s.counters["symbol_errors"] == 90
    assert finding_kind(s.reasons[0]) == "ber" and "symbol errors: 90" in s.reasons[0]
    d = links[downed]
    # counted over the time the link was observed (its first to last sample), not --since; the
    # lab's readings are seconds apart, too short a span for a rate per hour (no 7,000 flaps/h)
    assert d.status.value == "critical" and d.downs == 2 and 0 < d.observed_s < 600
    assert d.flaps_per_hour is None
    assert d.reasons[0].startswith("link went down 2 times in ")
    assert d.reasons[0].endswith(
        "of samples (a rate per hour needs 10 min of samples); both ends within 10 s counted once"
    )
    u = links[unplugged]
    assert u.status.value == "warn" and u.downs == 1 and u.flaps_per_hour is None
    assert u.reasons[0].startswith("link went down 1 time")
    rest = [lk for lk in view.report.links if lk.key not in {sym, downed, unplugged}]
    assert len(rest) == 5 and all(lk.status.value == "ok" and not lk.reasons for lk in rest)
    assert view.recorded >= 3  # today's non-ok links went into the history

    # the CLI says the same, as a table and as JSON
    code, out, err = _cli("health", "--db", db, "--since", "1h")
    assert code == 0, err
    table = out.splitlines()
    assert [row.split()[1] for row in table[2:5]] == ["critical", "critical", "warn"]
    assert "leaf-01:3 <-> spine-01:1" in "\n".join(table[2:5])
    assert "leaf-01:4 <-> spine-02:1" in "\n".join(table[2:5])
    assert "leaf-02:4 <-> spine-02:2" in "\n".join(table[2:5])
    # the span the readings cover (seconds apart in a lab), never the 1 h window asked for
    assert re.search(
        r"8 links over [\d.]+ s of readings \(3 snapshots from .*, window 60 min, topology \d+\)", out
    ), out
    code, out, _ = _cli("health", "--db", db, "--since", "1h", "--json")
    data = json.loads(out)
    assert set(data) == {
        "links",
        "nodes",
        "summary",
        "cable_notes",
        "cable_inventory",
        "one_reading",
        "readings",
    }
    assert data["readings"] == []  # nothing saturated, and read more than once
    assert data["cable_notes"] == [] and data["cable_inventory"] is None  # no ibdiagnet run kept
    assert data["one_reading"] is None  # many readings: rates are known
    top = [
        ((lk["a"]["guid"], lk["a"]["port"]), (lk["b"]["guid"], lk["b"]["port"])) for lk in data["links"][:3]
    ]
    assert set(top) == {sym, downed, unplugged}
    assert data["summary"]["links_by_status"]["critical"] == 2 and data["summary"]["snapshots"] == 3


def test_saturated_symbol_errors_are_a_lower_bound(lab_up: str, tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        collector = Collector(store, Session(Source.lab(lab_up)))
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
        collector = Collector(store, Session(Source.lab(lab_up)))
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


def test_health_gives_its_oracles_sums_and_report_on_the_lab(lab_up: str, tmp_path: Path) -> None:
    """Collections from the real tools with symbol errors rising then cleared, a saturated counter,
    a cable unplugged for one collection and link downs: the store's blocks summed column-wise
    give the oracle's per-port sums and report (tests/healthpaths.py)."""
    import time as _time

    with Store.open(tmp_path / "fast.db") as store:
        collector = Collector(store, Session(Source.lab(lab_up)))
        collector.collect_once()
        lab.set_counter(lab_up, "leaf-01", 3, "SymbolErrorCounter", 40)
        lab.set_counter(lab_up, "leaf-02", 4, "LinkDownedCounter", 2)
        collector.collect_once()
        lab.set_counter(lab_up, "leaf-01", 3, "SymbolErrorCounter", 5)  # cleared, then 5 new
        lab.set_counter(lab_up, "spine-01", 2, "SymbolErrorCounter", 70000)  # saturates at 65535
        lab.link_down(lab_up, "leaf-01", 4)
        collector.collect_once()
        lab.link_up(lab_up, "leaf-01", 4)
        lab.set_counter(lab_up, "leaf-02", 2, "PortRcvErrors", 12)
        collector.collect_once()
        now = _time.time()
        view = assert_same_health(store, 3600, now)
        fabric = store.load_topology().fabric
    flagged = {lk.key for lk in view.report.links if lk.status.value != "ok"}
    planted = {
        (n, p) for n, p in (("leaf-01", 3), ("leaf-02", 4), ("spine-01", 2), ("leaf-01", 4), ("leaf-02", 2))
    }
    assert flagged == {_key(fabric, n, p) for n, p in planted}


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

    from fabric.app.health.assess import utc_day

    with Store.open(tmp_path / "f.db") as store:
        collector = Collector(store, Session(Source.lab(lab_up)))
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
        from fabric.store import FindingSubject

        now = _time.time()
        for days_ago in (1, 2):
            store.record_findings(
                utc_day(now - days_ago * 86400), [(FindingSubject.of_link(key), "ber", "critical")]
            )
        again = assess_store(store, since_s=3600)
    link = next(lk for lk in again.report.links if lk.key == key)
    assert link.repeat_offender and link.repeat_days == 3
    assert any(r.startswith("repeat offender: findings on 3 distinct days") for r in link.reasons)


# -- each fault alone, and the same fabric clean ---------------------------------------------------
def _collect(name: str, db: str, between: Callable[[], object] | None = None) -> None:
    with Store.open(db) as store:
        collector = Collector(store, Session(Source.lab(name)))
        collector.collect_once()
        if between is not None:
            between()
        collector.collect_once()


def _unplug_and_replug(name: str, db: str) -> None:
    with Store.open(db) as store:
        collector = Collector(store, Session(Source.lab(name)))
        collector.collect_once()
        lab.link_down(name, "leaf-02", 3)
        collector.collect_once()
        lab.link_up(name, "leaf-02", 3)
        collector.collect_once()


@pytest.mark.parametrize(
    ("fault", "act", "switch", "port", "kind"),
    [
        ("degraded-width:spine-01:1", None, "spine-01", 1, "degraded_link"),
        ("degraded-speed:spine-02:2", None, "spine-02", 2, "degraded_link"),
        (None, ("leaf-01", 3, "SymbolErrorCounter", 60), "leaf-01", 3, "ber"),
        (None, ("spine-02", 2, "LinkDownedCounter", 1), "spine-02", 2, "flapping"),
        (None, ("leaf-01", 4, "LinkErrorRecoveryCounter", 3), "leaf-01", 4, "flapping"),
        (None, ("leaf-02", 2, "PortRcvErrors", 40), "leaf-02", 2, "rcv_errors"),
        (None, "unplug", "leaf-02", 3, "flapping"),
    ],
)
def test_each_fault_alone_is_the_only_finding(
    tmp_path: Path,
    fault: str | None,
    act: tuple[str, int, str, int] | str | None,
    switch: str,
    port: int,
    kind: str,
) -> None:
    db = str(tmp_path / "one.db")
    lab.up(SPEC, [fault] if fault else [], name="alone")
    try:
        if act == "unplug":
            _unplug_and_replug("alone", db)
        elif isinstance(act, tuple):
            node, at, field, value = act
            _collect("alone", db, lambda: lab.set_counter("alone", node, at, field, value))
        else:
            _collect("alone", db)
    finally:
        lab.down("alone")
    with Store.open(db) as store:
        view = assess_store(store, since_s=3600)
        planted = _key(store.load_topology().fabric, switch, port)
    flagged = [lk for lk in view.report.links if lk.status.value != "ok"]
    assert [lk.key for lk in flagged] == [planted], [(lk.key, lk.reasons) for lk in flagged]
    assert finding_kind(flagged[0].reasons[0]) == kind
    assert all(not lk.reasons for lk in view.report.links if lk.key != planted)
    assert view.recorded == 1  # one finding for today, not one per link not yet certified


def test_a_clean_fabric_has_no_finding_and_counts_the_links_not_yet_certified(
    lab_up: str, tmp_path: Path
) -> None:
    db = str(tmp_path / "clean.db")
    _collect(lab_up, db)
    code, out, err = _cli("health", "--db", db, "--since", "1h")
    assert code == 0, err
    # Two collections seconds apart carry far too few bits to certify any link: a state, counted.
    assert out.startswith("No findings: every link is ok.")
    assert "8 links not yet certified: too few bits carried to show BER < target (--all lists them)" in out
    assert "findings recorded" not in out
    code, out, _ = _cli("health", "--db", db, "--since", "1h", "--all")
    assert out.count("not yet certified: 0 symbol errors") == 8 and "--all lists them" not in out
    code, out, _ = _cli("health", "--db", db, "--since", "1h", "--json")
    data = json.loads(out)
    assert data["summary"]["uncertified"] == 8 and data["summary"]["links_by_status"]["ok"] == 8
    assert all(not lk["certified"] and lk["reasons"] == [] and lk["pending"] for lk in data["links"])
    with Store.open(db) as store:
        assert store.load_findings_history() == []
