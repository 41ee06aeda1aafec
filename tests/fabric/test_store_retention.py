"""Retention: raw snapshots folded into hourly points give the same health and repeat offenders
as the raw history; spans expire; compaction killed at any moment loses nothing; `store info`
and `store compact` through the CLI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from fabric.app.health.assess import assess_store
from fabric.app.session import StoreAccess
from fabric.app.storecare.retention import compact_after_collection, compact_store
from fabric.cli import main
from fabric.core.fields import COUNTER_NAMES
from fabric.health import Status
from fabric.store import CompactResult, FindingSubject, RawCapture, Retention, Store
from tests.conftest import REALDATA, ROOT
from topology.ibnetdiscover import read_ibnetdiscover
from topology.model import Fabric

CAPTURE = REALDATA / "ibnetdiscover" / "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt"
HOUR = 3600.0
EVERY = 300.0  # a snapshot every 5 minutes
HOURS = 10
NOW = float(int(time.time() // HOUR) * HOUR)  # the end of the history: on the hour
T0 = NOW - HOURS * HOUR


def _fabric() -> Fabric:
    return read_ibnetdiscover(CAPTURE)


def _history(fabric: Fabric) -> list[tuple[float, list[tuple[object, ...]]]]:
    """HOURS of snapshots every 5 minutes. Planted: link 0 has symbol errors on one end all along;
    link 1 flaps (LinkDowned on both ends, twice in hour 3, once in hour 7); link 2 has receive
    errors in hour 5; one port of link 3 is unreachable for a while; everything else is clean."""
    links = [lk.key for lk in fabric.links]
    noisy, flappy, rx, dark = links[0][0], links[1], links[2][1], links[3][0]
    out = []
    totals: dict[tuple[str, int], dict[str, int]] = {}
    for s in range(int(HOURS * HOUR / EVERY) + 1):
        t = T0 + s * EVERY
        hour = int((t - T0) // HOUR)
        rows: list[tuple[object, ...]] = []
        for a, b in links:
            for end, peer in ((a, b), (b, a)):
                c = totals.setdefault(end, dict.fromkeys(COUNTER_NAMES, 0))
                c["xmit_data"] += 10**9 + 7 * s
                c["rcv_data"] += 10**9 + 11 * s
                c["xmit_pkts"] += 10**6
                c["rcv_pkts"] += 10**6
                c["xmit_wait"] += 1000
                if end == noisy:
                    c["symbol_errors"] += 3
                if end in flappy and s in (40, 43, 90):
                    c["link_downed"] += 1
                if end == rx and hour == 5:
                    c["rcv_errors"] += 2
                up = not (end == dark and 20 <= s < 30)
                counters = [c[n] for n in COUNTER_NAMES] if up else [None] * len(COUNTER_NAMES)
                reason = None if up else "timeout"
                rows.append((end[0], end[1], None, peer[0], peer[1], up, reason, t + 0.5, *counters))
        out.append((t, rows))
    return out


@pytest.fixture(scope="module")
def raw_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    fabric = _fabric()
    path = tmp_path_factory.mktemp("retention") / "raw.db"
    with Store.open(path) as store:
        topo = store.save_topology(fabric, CAPTURE.read_text(), "ibnetdiscover", "file", taken_at=T0 - 60)
        for t, rows in _history(fabric):
            store.save_counter_snapshot(
                t, "test", topo, rows, [RawCapture("counters", "ibqueryerrors", "x" * 500, t)]
            )
        # findings on two earlier days: with today's, link 0 is a repeat offender (3 days in 30)
        subject = FindingSubject.of_link(fabric.links[0].key)
        for days_ago in (3, 5):
            day = time.strftime("%Y-%m-%d", time.gmtime(NOW - days_ago * 86400))
            store.record_findings(day, [(subject, "ber", "warn")])
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def _copy(raw_store: Path, tmp_path: Path, name: str = "ibfab.db") -> Path:
    copy = tmp_path / name
    shutil.copyfile(raw_store, copy)
    return copy


def _answers(path: Path, since_s: float | None) -> dict[object, tuple[object, ...]]:
    with Store.open(path, create=False) as store:
        report = assess_store(store, since_s=since_s, now=NOW + 5, record=False).report
    return {
        link.key: (
            link.status,
            link.score,
            link.ber.errors,
            link.downs,
            link.recoveries,
            link.repeat_offender,
            link.repeat_days,
            link.reasons,
            None if link.flaps_per_hour is None else round(link.flaps_per_hour, 9),
        )
        for link in report.links
    }


def test_health_and_repeat_offenders_are_the_same_on_compacted_history(
    raw_store: Path, tmp_path: Path
) -> None:
    compacted = _copy(raw_store, tmp_path)
    raw = _answers(raw_store, None)
    # the planted faults are there (and only they), so the comparison below compares something
    flagged = {k for k, v in raw.items() if v[0] is not Status.OK}
    fabric = _fabric()
    keys = [lk.key for lk in fabric.links]
    assert flagged == {keys[0], keys[1], keys[2]}, {k: raw[k] for k in flagged}
    assert raw[keys[0]][5] and raw[keys[1]][3] == 3
    # hours 0-7 become points (their last snapshot, and the very first one as the baseline)
    result, _ = compact_store(StoreAccess(compacted), raw_s=2 * HOUR, now=NOW - 5)
    assert result.done and result.hours == HOURS - 2 and result.points == HOURS - 2 + 1
    with Store.open(compacted, create=False) as store:
        snaps = store.list_counter_snapshots()
        points = store.is_hourly([s.id for s in snaps])
        assert len(points) == HOURS - 1 and len(snaps) == len(points) + 2 * 12 + 1
        assert store.check() == []
    assert _answers(compacted, None) == raw
    # a window that starts on an hourly point (the last snapshot of its hour): the same as on the
    # raw history, whether it ends in raw snapshots or not
    for hour in (2, 5):
        since_s = NOW + 5 - (T0 + hour * HOUR + 55 * 60)
        assert _answers(compacted, since_s) == _answers(raw_store, since_s)


def test_an_hourly_point_keeps_the_hours_sums_maxima_and_resets(raw_store: Path, tmp_path: Path) -> None:
    compacted = _copy(raw_store, tmp_path)
    compact_store(StoreAccess(compacted), raw_s=2 * HOUR, now=NOW - 5)
    fabric = _fabric()
    rx = fabric.links[2].key[1]
    with Store.open(compacted, create=False) as store:
        hour5 = [s for s in store.list_counter_snapshots() if T0 + 5 * HOUR <= s.taken_at < T0 + 6 * HOUR]
        (point,) = hour5
        agg = store.load_hourly(point.id)
    i = agg.ports.index(rx)
    assert agg.samples == 12 and agg.first_taken == T0 + 5 * HOUR
    assert agg.sums["rcv_errors"][i] == 24 and agg.maxima["rcv_errors"][i] == 2
    assert agg.sums["xmit_wait"][i] == 12 * 1000 and agg.maxima["xmit_pkts"][i] == 10**6
    assert "xmit_pkts" not in agg.sums  # a data counter's sum is the point's own change
    assert agg.resets[i] == 0 and agg.intervals[i] == 12


def test_spans_expire_and_the_store_gets_no_bigger(raw_store: Path, tmp_path: Path) -> None:
    path = _copy(raw_store, tmp_path)

    def compact() -> CompactResult:
        return compact_store(
            StoreAccess(path),
            raw_s=2 * HOUR,
            hourly_s=6 * HOUR,
            captures_s=HOUR,
            findings_s=4 * 86400.0,
            now=NOW + 5,
        )[0]

    result = compact()
    assert result.findings_deleted == 1  # the finding of 5 days ago
    with Store.open(path, create=False) as store:
        snaps = store.list_counter_snapshots()
        assert min(s.taken_at for s in snaps) >= NOW + 5 - 6 * HOUR
        with_raw = {s.id for s in snaps if store.snapshot_captures(s.id)}
        assert with_raw == {s.id for s in snaps if s.taken_at >= NOW + 5 - HOUR}
        assert [r.day for r in store.load_findings_history()] == [
            time.strftime("%Y-%m-%d", time.gmtime(NOW - 3 * 86400))
        ]
        assert len(store.load_counters()) == len(snaps) * 2 * len(_fabric().links)
    again = compact()
    assert (again.hours, again.snapshots_deleted, again.captures_deleted) == (0, 0, 0)


def test_compaction_stops_at_its_budget_and_the_next_one_goes_on(raw_store: Path, tmp_path: Path) -> None:
    path = _copy(raw_store, tmp_path)
    with Store.open(path, create=False) as store:
        store.set_retention(Retention(raw_s=2 * HOUR))
        first = store.compact(now=NOW - 5, budget_s=0.0)
        assert not first.done and first.hours == 1
        before = time.time()
        rest = compact_after_collection(store)  # the daemon's call: the saved policy, a few seconds
        after = time.time()
        assert rest is not None
    with Store.open(path, create=False) as store:
        done = store.compact(now=NOW - 5)
        assert done.done and done.hours == 0
        got = store.is_hourly([s.id for s in store.list_counter_snapshots()])
    # The daemon's call compacts as of the clock (NOW is the hour the module was read in; the
    # suite may run past the next hour): what a whole compaction as of that clock makes.
    expected = []
    for i, clock in enumerate((before, after)):
        ref = _copy(raw_store, tmp_path, f"ref{i}.db")
        with Store.open(ref, create=False) as store:
            store.compact(Retention(raw_s=2 * HOUR), now=clock)
            expected.append(store.is_hourly([s.id for s in store.list_counter_snapshots()]))
    assert got in expected and len(got) >= HOURS - 1


_COMPACTOR = textwrap.dedent(
    """
    import sys
    from fabric.store import Store
    path, now = sys.argv[1], float(sys.argv[2])
    with Store.open(path, create=False) as store:
        print("compacting", flush=True)
        while not store.compact(now=now, budget_s=0.0).done:  # one hour per call
            print("hour", flush=True)
    print("done", flush=True)
    """
)


@pytest.mark.slow
def test_sigkill_mid_compaction_loses_nothing(raw_store: Path, tmp_path: Path) -> None:
    reference = _copy(raw_store, tmp_path, "reference.db")
    compact_store(StoreAccess(reference), raw_s=2 * HOUR, now=NOW - 5)
    with Store.open(reference, create=False) as store:
        want = store.load_counters()
    raw_answers = _answers(raw_store, None)
    path = _copy(raw_store, tmp_path)
    with Store.open(path, create=False) as store:
        store.set_retention(Retention(raw_s=2 * HOUR))
        originals = {s.id: store.load_port_counters(s.id) for s in store.list_counter_snapshots()}
    kills = 0
    partial = []
    for delay in (0.0, 0.001, 0.002, 0.005, 0.01):
        proc = subprocess.Popen(
            [sys.executable, "-c", _COMPACTOR, str(path), repr(NOW - 5)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "compacting"
        proc.stdout.readline()  # an hour went by (or all were done): kill within the next
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += proc.returncode == -signal.SIGKILL
        with Store.open(path, create=False) as store:
            assert store.integrity_check() == "ok" and store.check() == []
            # every snapshot still there reads back exactly as it was saved
            for s in store.list_counter_snapshots():
                assert store.load_port_counters(s.id) == originals[s.id]
            partial.append(len(store.is_hourly(list(originals))))
        assert _answers(path, None) == raw_answers  # half compacted or not: the same health
    print(f"\nhourly points after each kill: {partial}")
    assert kills >= 2 and sum(0 < n < HOURS - 1 for n in partial) >= 2  # killed mid-way
    with Store.open(path, create=False) as store:
        store.compact(now=NOW - 5)
        pd.testing.assert_frame_equal(store.load_counters(), want)


def test_store_info_and_compact_through_the_cli(raw_store: Path, tmp_path: Path) -> None:
    path = _copy(raw_store, tmp_path)
    runner = CliRunner()
    res = runner.invoke(main, ["store", "info", "--db", str(path), "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    assert info["raw"]["count"] == HOURS * 12 + 1 and info["hourly"]["count"] == 0
    assert info["snapshots_per_day"] == pytest.approx(288.0)
    per_snapshot = info["raw"]["bytes"] / info["raw"]["count"]
    # once full: a week of raw snapshots, a day of raw output, 90 - 7 days of hourly points
    steady = info["projected_steady_bytes"]
    assert (
        steady > 288 * 7 * per_snapshot
        and steady < 288 * 7 * per_snapshot * 1.5 + 83 * 24 * per_snapshot * 2 + 10e6
    )
    res = runner.invoke(main, ["store", "compact", "--db", str(path), "--raw", "2h", "--save"])
    assert res.exit_code == 0, res.output
    assert "raw snapshots 2h, hourly points 90d" in res.stdout
    res = runner.invoke(main, ["store", "info", "--db", str(path)])
    assert res.exit_code == 0 and "hourly points" in res.stdout and "projected" in res.stdout
    res = runner.invoke(main, ["store", "compact", "--db", str(path), "--raw", "30d", "--hourly", "1d"])
    assert res.exit_code == 2 and "at least as long as raw" in res.stderr


def test_compaction_leaves_a_damaged_snapshot_for_repair(raw_store: Path, tmp_path: Path) -> None:
    from tests.fabric.test_store_heal import flip_bit

    path = _copy(raw_store, tmp_path)
    with Store.open(path, create=False) as store:
        in_hour_3 = [
            s.id for s in store.list_counter_snapshots() if T0 + 3 * HOUR <= s.taken_at < T0 + 4 * HOUR
        ]
    damaged = in_hour_3[5]
    flip_bit(path, "counter_blocks", "data", f"snapshot_id = {damaged}")
    result, _ = compact_store(StoreAccess(path), raw_s=2 * HOUR, now=NOW - 5)
    assert result.done
    with Store.open(path, create=False) as store:
        left = {s.id for s in store.list_counter_snapshots()}
        # the damaged one and those stored as changes against it are still there, unread
        assert damaged in left
        found = {d.ref for d in store.check() if d.kind == "counter snapshot"}
        assert damaged in found and found <= left
        assert store.set_aside(store.check()) == len(found)
        assert store.check() == []
        again = store.compact(now=NOW - 5)
        assert again.hours == 0 and again.snapshots_deleted == 0
