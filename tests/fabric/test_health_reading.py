"""One reading is evidence too: a saturated counter, or a large error total on a link read once,
is a finding naming the cable and saying what to do (clear, read again). On the real 272-node NDR
ibdiagnet run: exactly its 5 saturated SymbolErrorCounters, 2 saturated PortRcvErrors and the
three large symbol totals; on a clean reading, and under the threshold, nothing."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from click.testing import CliRunner

from fabric.app.discovery.ibdiagnet import import_ibdiagnet_run
from fabric.app.health.assess import assess_store
from fabric.app.session import StoreAccess
from fabric.cli.main import main
from fabric.core.fields import COUNTER_NAMES
from fabric.health.reading import judge_reading
from fabric.health.thresholds import HealthThresholds, thresholds_from_mapping
from fabric.store import Store
from tests.conftest import REALDATA
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Fabric, Guid

IBDIAG_DIR = REALDATA / "ibdiagnet"
# The HCA ends of the run's cables whose counters the .pm file shows at 0xffff or large.
SATURATED_SYMBOL = {
    "0x5c25730300c09c68",
    "0x5c25730300e66b0e",
    "0x5c25730300e6a04e",
    "0x5c25730300f3df50",
    "0xc470bd0300100612",
}
SATURATED_RCV = {"0x5c25730300e68e76", "0x5c25730300f3df50"}
LARGE_SYMBOL = {
    "0xc470bd03001005da": 44375,
    "0x5c25730300c09c50": 23817,
    "0x5c25730300e68e76": 11160,  # beside its saturated rcv_errors
    "0x5c25730300f3e670": 2497,
}


def health(db: Path, *args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, ["health", "--db", str(db), "--no-record", "--since", "all", *args])
    return res.exit_code, res.stdout, res.stderr


def test_the_real_ibdiagnet_run_lists_its_saturated_and_large_counters(tmp_path: Path) -> None:
    db = tmp_path / "ibfab.db"
    import_ibdiagnet_run(StoreAccess(db), IBDIAG_DIR)
    code, text, err = health(db, "--json")
    assert code == 0, err
    found = json.loads(text)["readings"]
    counts = [(c["guid"], c["counter"], c["value"], c["saturated"]) for f in found for c in f["counts"]]
    assert {g for g, n, _, sat in counts if sat and n == "symbol_errors"} == SATURATED_SYMBOL
    assert {g for g, n, _, sat in counts if sat and n == "rcv_errors"} == SATURATED_RCV
    assert {g: v for g, n, v, sat in counts if n == "symbol_errors" and not sat and v > 2000} == LARGE_SYMBOL
    # one entry per cable, the saturated ones first; the switch ends' link_downed (10-86 on every
    # port: reboots) and relay errors are no evidence against a cable and are not listed
    assert len(found) == 9 and [f["saturated"] for f in found] == [True] * 6 + [False] * 3
    assert {c["counter"] for f in found for c in f["counts"]} == {"symbol_errors", "rcv_errors"}
    code, out, _ = health(db)
    assert "9 findings from the reading alone" in out
    assert "Counters that say something from the reading alone (9 cables)" in out
    assert "Clear both ends (perfquery -R LID PORT, or ibclearcounters) and read again" in out
    assert "is-north-7-compute-24 mlx5_10:1: symbol_errors 44,375" in out


def _fabric() -> tuple[str, Fabric]:
    text = to_ibnetdiscover(generate("leafspine:leaves=2,spines=2,hosts=2,radix=40,speed=HDR"))
    return text, parse_ibnetdiscover(text.splitlines(), "generated")


def _store(
    path: Path, readings: Sequence[Mapping[tuple[Guid, int], Mapping[str, int]]], start: float
) -> tuple[Path, Fabric]:
    """One counter snapshot per entry of ``readings`` (end -> counter values), 10 minutes apart."""
    text, fabric = _fabric()
    with Store.open(path) as store:
        topo = store.save_topology(fabric, text, "ibnetdiscover", "generated", taken_at=start - 10)
        for i, values in enumerate(readings):
            when = start + i * 600
            rows = []
            for lk in fabric.links:
                for end, peer in ((lk.a, lk.b), (lk.b, lk.a)):
                    counters = dict.fromkeys(COUNTER_NAMES, 0)
                    counters["xmit_data"] = counters["rcv_data"] = (i + 1) * 10**11
                    counters.update(values.get((end.guid, end.port), {}))
                    values_read = [counters[n] for n in COUNTER_NAMES]
                    rows.append(
                        (end.guid, end.port, None, peer.guid, peer.port, True, None, when, *values_read)
                    )
            store.save_counter_snapshot(when, "perfquery", topo, rows)
    return path, fabric


def test_a_clean_reading_and_totals_under_the_threshold_say_nothing(tmp_path: Path) -> None:
    start = float(int(time.time()) - 3600)
    db, fabric = _store(tmp_path / "clean.db", [{}], start)
    with Store.open(db) as store:
        assert assess_store(store, since_s=None, record=False).readings == ()
    up = fabric.links[0]
    under = {(up.a.guid, up.a.port): {"symbol_errors": 999, "rcv_errors": 999, "link_downed": 255}}
    db, _ = _store(tmp_path / "under.db", [under], start)
    with Store.open(db) as store:
        assert assess_store(store, since_s=None, record=False).readings == ()
    code, out, _ = health(db)
    assert code == 0 and "0 findings from the reading alone" in out and "Counters that say" not in out


def test_a_large_first_reading_is_a_finding_and_two_readings_judge_the_rate(tmp_path: Path) -> None:
    start = float(int(time.time()) - 3600)
    _, fabric = _store(tmp_path / "x.db", [{}], start)
    bad, other = fabric.links[0], fabric.links[3]
    values = {
        (bad.a.guid, bad.a.port): {"symbol_errors": 1000},
        (other.b.guid, other.b.port): {"link_error_recovery": 255},  # 8 bits: saturated
    }
    db, _ = _store(tmp_path / "one.db", [values], start)
    with Store.open(db) as store:
        found = assess_store(store, since_s=None, record=False).readings
    assert [(f.key, [(c.counter, c.saturated) for c in f.counts]) for f in found] == [
        (other.key, [("link_error_recovery", True)]),
        (bad.key, [("symbol_errors", False)]),
    ]
    assert all(f.one_reading for f in found)
    # the same totals read twice: the rate (none) judges the large one; the saturated one stays,
    # since a counter at its maximum cannot show what happens next
    db, _ = _store(tmp_path / "two.db", [values, values], start)
    with Store.open(db) as store:
        found = assess_store(store, since_s=None, record=False).readings
    assert [f.key for f in found] == [other.key] and not found[0].one_reading
    code, out, _ = health(db)
    assert code == 0 and "Counters that say something from the newest reading (1 cable)" in out


def test_the_threshold_is_the_sites_to_set() -> None:
    assert HealthThresholds().reading_errors_large == 1000
    t = thresholds_from_mapping({"health": {"reading_errors_large": 50}})
    values = {("0x1", 1): {"symbol_errors": 60}, ("0x2", 1): {}}
    assert judge_reading(values, [(("0x1", 1), ("0x2", 1))], one_reading=True, thresholds=t)
    assert not judge_reading(values, [(("0x1", 1), ("0x2", 1))], one_reading=True)
    assert not judge_reading(values, [(("0x1", 1), ("0x2", 1))], one_reading=False, thresholds=t)


def test_the_span_is_what_the_readings_cover_not_the_window(tmp_path: Path) -> None:
    """Three readings 10 min apart in a 24 h window: '20 min of readings', never '24.0 h'."""
    start = float(int(time.time()) - 3600)
    db, _ = _store(tmp_path / "span.db", [{}, {}, {}], start)
    res = CliRunner().invoke(main, ["health", "--db", str(db), "--no-record"])
    out = res.stdout
    assert res.exit_code == 0 and "links over 20 min of readings (3 snapshots from " in out, out
    assert "window 24.0 h" in out and "over 24.0 h" not in out
    doc = json.loads(CliRunner().invoke(main, ["health", "--db", str(db), "--no-record", "--json"]).stdout)
    assert doc["summary"]["covered"] == [start, start + 1200]
