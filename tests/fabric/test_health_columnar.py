"""Health (the store's blocks summed column-wise, fabric.health.columns) gives what its oracle
gives (tests/oracles/health.py: the counter table's deltas, every record the long way): the same
per-port table and the same report, on planted faults,
on random histories (resets, saturation, unreadable counters, unreachable spells, re-cabling,
ports coming and going, windows cut mid-way), and on the real ibdiagnet run in tests/data/realdata."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import fabric.app.health.assess as healthsvc
from fabric.app.health.assess import utc_day
from fabric.cli.main import main
from fabric.core.fields import COUNTER_NAMES, ERROR_COUNTERS, max_value
from fabric.counters.deltas import OutOfOrder
from fabric.health import Status, assess, frame_snapshots, in_time_order
from fabric.store import FindingSubject, PortCounterRow, Store
from tests.conftest import REALDATA
from tests.fabric.test_health import HCA0, HCA1, NOW, UP1, eventful_frame, fabric, frame_for, link_of
from tests.healthpaths import assert_same_health
from tests.oracles.health import assess_oracle
from topology.diff import LinkEvent
from topology.model import Fabric, Link

IBDIAG_DIR = REALDATA / "ibdiagnet"
RUN_TIME = 1743464598.0  # the run's RUN_INFO time


def save_frame(path: Path, fab: Fabric, frame: pd.DataFrame, order: Sequence[int] | None = None) -> Path:
    """The counter table's snapshots as stored collections (in ``order`` of snapshot, default by id)."""
    with Store.open(path) as store:
        topo = store.save_topology(
            fab, "-", "ibnetdiscover", "test", taken_at=float(frame["time"].min()) - 10
        )
        for s in order if order is not None else sorted(frame["snapshot"].unique()):
            rows = frame[frame["snapshot"] == s]
            tuples = [
                (
                    r["guid"],
                    int(r["port"]),
                    _value(r["lid"]),
                    _value(r["peer_guid"]),
                    _value(r["peer_port"]),
                    bool(r["reachable"]),
                    None if r["reachable"] else "timeout",
                    float(r["time"]),
                    *(_value(r[name]) for name in COUNTER_NAMES),
                )
                for r in rows.to_dict("records")
            ]
            store.save_counter_snapshot(float(rows["time"].min()), "test", topo, tuples)
    return path


def _value(v: Any) -> Any:
    return None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v


@pytest.mark.parametrize("since_s", [None, 3000.0, 600.0])
@pytest.mark.parametrize("piece_rows", [12, 40, 200_000])
def test_planted_faults_give_the_same_health_both_ways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, since_s: float | None, piece_rows: int
) -> None:
    fab = fabric()
    frame = eventful_frame(fab)
    path = save_frame(tmp_path / "h.db", fab, frame)
    monkeypatch.setattr(healthsvc, "PIECE_ROWS", piece_rows)  # one snapshot a piece ... all at once
    with Store.open(path) as store:
        view = assert_same_health(store, since_s, NOW)
    # and the same as the oracle's report of the frame itself: the planted faults are there
    whole = assess_oracle(frame, fab, since=None if since_s is None else NOW - since_s, now=NOW)
    assert view.report.to_dict() == whole.to_dict()
    if since_s is None:
        assert link_of(view.report, HCA0).ber.errors == 42 and link_of(view.report, UP1).downs == 3
        assert [e.saturated for e in link_of(view.report, HCA1).ends if e.ref == HCA1] == [("rcv_errors",)]


def random_frame(seed: int, snapshots: int = 10) -> tuple[Fabric, pd.DataFrame]:
    """A random history of the small fabric: on about half the ports, counters that climb, reset,
    saturate, go unread, the port unreachable, missing from a snapshot, re-cabled, given a new LID;
    the other ports quiet but for traffic and a little waiting; readings jittered."""
    rng = np.random.default_rng(seed)
    fab = fabric()
    if seed % 2:  # one cable trained narrower than its peers: a finding without any counter
        narrow = fab.links[int(rng.integers(0, len(fab.links)))]
        fab = Fabric.build(
            fab.nodes.values(), [Link(lk.a, lk.b, 2, lk.speed) if lk is narrow else lk for lk in fab.links]
        )
    ends = [(lk.a, lk.b) for lk in fab.links] + [(lk.b, lk.a) for lk in fab.links]
    values = {(a, name): 0 for a, _ in ends for name in COUNTER_NAMES}
    peers = {a: b for a, b in ends}
    lids = {a: 1 + i for i, (a, _) in enumerate(ends)}
    lively = {a: float(rng.random() < 0.5) for a, _ in ends}  # scales every odd event's chance
    rows: list[dict[str, Any]] = []
    for s in range(snapshots):
        start = NOW - 600.0 * snapshots + 600.0 * s
        for a, _ in ends:
            odd = lively[a]
            if rng.random() < 0.04 * odd:
                continue  # not in this snapshot: its port set differs
            if rng.random() < 0.03 * odd:
                b = peers[a]
                peers[a] = type(b)(b.guid, b.port + 10)  # re-cabled
            if rng.random() < 0.03 * odd:
                lids[a] += 100
            for name in COUNTER_NAMES:
                top = max_value(name)
                if name in ERROR_COUNTERS:
                    step = int(rng.poisson(0.4)) * int(rng.random() < 0.3 * odd)
                elif name == "xmit_wait":  # a little waiting, more on some ports
                    step = int(rng.integers(0, 10**6)) * int(rng.choice([1, 1, 1000]))
                else:
                    step = int(rng.integers(0, 10**9))
                values[(a, name)] = min(top, values[(a, name)] + step)
                if rng.random() < 0.02 * odd:
                    values[(a, name)] = int(rng.integers(0, 3))  # cleared
                if name in ERROR_COUNTERS and rng.random() < 0.01 * odd:
                    values[(a, name)] = top  # saturated
            reachable = rng.random() >= 0.08 * odd
            unread = rng.random() < 0.03 * odd  # answered, but no counter read
            peer = peers[a] if rng.random() >= 0.05 * odd else None
            row: dict[str, Any] = {
                "snapshot": s,
                "time": start + float(rng.uniform(0, 5)),
                "guid": a.guid,
                "port": a.port,
                "lid": lids[a] if rng.random() >= 0.05 * odd else None,
                "peer_guid": None if peer is None else peer.guid,
                "peer_port": None if peer is None or rng.random() < 0.05 * odd else peer.port,
                "reachable": reachable,
            }
            for name in COUNTER_NAMES:
                gone = not reachable or unread or (name in ERROR_COUNTERS and rng.random() < 0.05 * odd)
                row[name] = None if gone else values[(a, name)]
            if reachable and rng.random() < 0.02 * odd:
                row["xmit_data"] = (1 << 63) + int(rng.integers(0, 1000))  # beyond the table's Int64
            rows.append(row)
    frame = pd.DataFrame(rows, dtype=object)  # counters as Python ints, None where not read
    return fab, frame.astype({"snapshot": np.int64, "time": np.float64, "port": np.int64})


@pytest.mark.parametrize("seed", range(16))
def test_random_histories_give_the_same_health_both_ways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    fab, frame = random_frame(seed)
    path = save_frame(tmp_path / "r.db", fab, frame)
    monkeypatch.setattr(healthsvc, "PIECE_ROWS", 30)
    rng = np.random.default_rng(seed)
    with Store.open(path) as store:
        # findings on earlier days for a few links: history, and repeat offenders among them
        # (on two of the links not trained below their peers: that one may show its quiet side)
        others = [lk for lk in fab.links if lk.key not in healthsvc.below_peers(fab)]
        for at in rng.choice(len(others), size=2, replace=False).tolist():
            link = others[at]
            for days_ago in range(1, int(rng.integers(2, 4))):
                store.record_findings(
                    utc_day(NOW - days_ago * 86400), [(FindingSubject.of_link(link.key), "ber", "warn")]
                )
        # a finding on a port's earlier cable (to a node since gone) counts for its cable now
        for side in (0, 1):
            cable = others[int(rng.integers(0, len(others)))]
            moved = (cable.a, cable.b)[side]
            gone = ((moved.guid, moved.port), ("0x00000000000000ff", 1))
            store.record_findings(utc_day(NOW - 86400), [(FindingSubject.of_link(gone), "ber", "critical")])
        # discovery saw one cable go down and come back
        bounced = fab.links[int(rng.integers(0, len(fab.links)))].key
        store.add_link_events([LinkEvent(NOW - 1200, bounced, "down"), LinkEvent(NOW - 1100, bounced, "up")])
        for since_s in (None, 2500.0):
            assert_same_health(store, since_s, NOW)


def test_samples_out_of_time_order_are_put_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fab = fabric()
    frame = eventful_frame(fab)
    path = save_frame(tmp_path / "b.db", fab, frame, order=list(reversed(range(10))))  # ids run backwards
    with Store.open(path) as store:
        ids = [s.id for s in store.list_counter_snapshots()]
        with pytest.raises(OutOfOrder):
            assess(store.load_counter_blocks(ids), fab, since=None, now=NOW)
        regrouped: list[int] = []
        monkeypatch.setattr(healthsvc, "in_time_order", _counting(in_time_order, regrouped))
        view = assert_same_health(store, None, NOW)
        assert regrouped == [10]  # the window put in order: ten readings of each port
    assert view.report.to_dict() == assess_oracle(frame, fab, since=None, now=NOW).to_dict()


def _counting(regroup: Any, calls: list[int]) -> Any:
    def counted(*args: Any, **kwargs: Any) -> Any:
        out = regroup(*args, **kwargs)
        calls.append(len(out))
        return out

    return counted


def test_the_real_ibdiagnet_run_gives_the_same_health_both_ways(tmp_path: Path) -> None:
    """The NDR run's real counters (saturated XmitWait, LinkDowned on 264 ports...) as the first
    snapshot, then six more five minutes apart with errors, a reset and an unreachable spell."""
    db = tmp_path / "real.db"
    res = CliRunner().invoke(main, ["counters", "collect", "--ibdiagnet", str(IBDIAG_DIR), "--db", str(db)])
    assert res.exit_code == 0, res.stderr
    rng = np.random.default_rng(19)
    with Store.open(db) as store:
        [first] = store.list_counter_snapshots()
        real = store.load_port_counters(first.id)
        topo = store.list_topologies()[-1].id
        current = {(r.guid, r.port): dict(r.counters) for r in real}
        noisy = [(r.guid, r.port) for r in real[:: len(real) // 12]]
        for step in range(1, 7):
            when = RUN_TIME + 300.0 * step
            rows = []
            for r in real:
                counters = current[(r.guid, r.port)]
                for name in ("xmit_data", "rcv_data", "xmit_pkts", "rcv_pkts"):
                    if name in counters:
                        counters[name] += int(rng.integers(0, 10**10))
                if (r.guid, r.port) in noisy:
                    for name in ("symbol_errors", "link_downed", "rcv_errors"):
                        if name in counters:
                            counters[name] = min(max_value(name), counters[name] + int(rng.integers(0, 5)))
                if (r.guid, r.port) == noisy[0] and step == 3 and "symbol_errors" in counters:
                    counters["symbol_errors"] = 1  # cleared
                down = (r.guid, r.port) == noisy[1] and step in (2, 3)
                rows.append(
                    PortCounterRow(
                        time=when + float(rng.uniform(0, 2)),
                        guid=r.guid,
                        port=r.port,
                        lid=r.lid,
                        peer_guid=r.peer_guid,
                        peer_port=r.peer_port,
                        reachable=not down,
                        unreachable_reason="timeout" if down else None,
                        counters={} if down else dict(counters),
                    )
                )
            store.save_counter_snapshot(when, "test", topo, rows)
        now = RUN_TIME + 300.0 * 6 + 5
        for since_s in (None, 1000.0):
            view = assert_same_health(store, since_s, now)
    assert view.report.summary.snapshots == 4  # 1000 s back: the last four
    flagged = [lk for lk in view.report.links if lk.status is not Status.OK]
    assert flagged and all(set(lk.key) & {(g, p) for g, p in noisy} for lk in flagged)


def test_quick_records_are_the_long_ways_whatever_keeps_a_link_off_the_short_cut() -> None:
    """A clean fabric, then one thing at a time that makes a link more than quiet: a past finding
    on either end, a discovery event, a cable trained below its peers, waiting on one end."""
    from fabric.health import PastFinding

    fab = fabric()
    times = [NOW - 5400 + 600 * i for i in range(10)]
    clean = frame_for(fab, times)
    hca0 = link_of(assess(frame_snapshots(clean), fab, since=None, now=NOW), HCA0)
    a, b = hca0.a, hca0.b
    narrow = Fabric.build(
        fab.nodes.values(), [Link(lk.a, lk.b, 2, lk.speed) if a in (lk.a, lk.b) else lk for lk in fab.links]
    )
    day = 86400.0
    waiting = frame_for(fab, times, {b: {"xmit_wait": [i * 10**9 for i in range(10)]}})
    cases: list[tuple[Fabric, pd.DataFrame, dict[str, Any], int]] = [  # ..., links off the short cut
        (fab, clean, {}, 0),
        (fab, clean, {"history": [PastFinding(NOW - day, a.guid, a.port)]}, 1),
        (fab, clean, {"history": [PastFinding(NOW - d * day, b.guid, b.port) for d in (1, 2, 3)]}, 1),
        (
            fab,
            clean,
            {"events": [LinkEvent(NOW - 1200, hca0.key, "down"), LinkEvent(NOW - 1100, hca0.key, "up")]},
            1,
        ),
        (narrow, clean, {"below_peers": healthsvc.below_peers(narrow)}, 1),
        (fab, waiting, {}, 0),  # waiting on one end, below the watch level: quiet, its congestion kept
    ]
    for case_fabric, frame, extra, off in cases:
        quick = assess(frame_snapshots(frame), case_fabric, since=None, now=NOW, **extra)
        assert quick.to_dict() == assess_oracle(frame, case_fabric, since=None, now=NOW, **extra).to_dict()
        quiet = [lk for lk in quick.links if lk.status is Status.OK and not lk.reasons and not lk.repeat_days]
        assert len(quiet) == len(fab.links) - off
    assert (link_of(quick, HCA0).congestion or 0) > 0
