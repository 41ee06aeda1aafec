"""The SQLite store: round trips for every table, schema checks, crash safety, concurrent processes."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabric.core.fields import COUNTER_NAMES, FRAME_COLUMNS, max_value
from fabric.store import (
    PORT_COUNTER_FIELDS,
    FindingSubject,
    PortCounterRow,
    ProbeResultRow,
    RawCapture,
    Store,
    StoreError,
    default_db_path,
    schema,
)
from fabric.store.captures import CompressAhead
from fabric.store.schema import Migration
from tests.conftest import ROOT, realdata_files
from topology.diff import LinkEvent
from topology.ibnetdiscover import parse_ibnetdiscover, read_ibnetdiscover


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "ibfab.db") as s:
        yield s


def _row(guid: int, port: int, t: float, base: int = 0) -> tuple[object, ...]:
    counters = [base + guid + i for i in range(len(COUNTER_NAMES))]
    return (f"0x{guid:016x}", port, guid, f"0x{guid + 1:016x}", 1, True, None, t, *counters)


# -- where the store lives ------------------------------------------------------------------
def test_default_path_follows_ibfab_data_dir_then_xdg(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("IBFAB_DATA_DIR", str(tmp_path / "d"))
    assert default_db_path() == tmp_path / "d" / "ibfab.db"
    monkeypatch.delenv("IBFAB_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_db_path() == tmp_path / "xdg" / "ibfab" / "ibfab.db"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_db_path() == tmp_path / "home" / ".local" / "share" / "ibfab" / "ibfab.db"


def test_open_without_path_creates_missing_directory_with_pragmas() -> None:
    path = default_db_path()
    assert not path.parent.exists()
    with Store.open() as s:
        assert s.path == path
        db = s._db
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert db.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
        assert s.schema_version == schema.schema_version()
    assert path.is_file()
    with Store.open(path, create=False) as again:
        assert again.integrity_check() == "ok"


# -- schema version -------------------------------------------------------------------------
def test_newer_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ibfab.db"
    Store.open(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError) as info:
        Store.open(path)
    message = info.value.one_line()
    assert str(path) in message and "99" in message and f"({schema.schema_version()})" in message


def test_unknown_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ibfab.db"
    Store.open(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = 'banana' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="unknown store schema version 'banana'"):
        Store.open(path)


def test_garbage_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "ibfab.db"
    garbage = b"this is not a database\n" * 300
    path.write_bytes(garbage)
    with pytest.raises(StoreError, match="not an SQLite database") as info:
        Store.open(path)
    assert str(path) in info.value.one_line()
    assert path.read_bytes() == garbage


def test_someone_elses_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE grades (name TEXT, score INTEGER)")
    with pytest.raises(StoreError, match="not an ibfab store"):
        Store.open(path)


def test_missing_store_without_create_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no ibfab store there"):
        Store.open(tmp_path / "nope" / "ibfab.db", create=False)
    assert not (tmp_path / "nope").exists()


def test_migration_steps_upgrade_an_old_store_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ibfab.db"
    with Store.open(path) as s:
        aid = s.audit("root", "isolate", "0x1/1", "ibportstate 1 1 disable", "ok", when=5.0)
    now = schema.schema_version()
    broken = Migration(now + 1, ("ALTER TABLE audit_log ADD COLUMN ticket TEXT", "THIS IS NOT SQL"))
    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, broken))
    with pytest.raises(StoreError, match="syntax error"):
        Store.open(path)
    # the failed upgrade left the store as it was: its version, no half-added column
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(now),)
        assert "ticket" not in [r[1] for r in db.execute("PRAGMA table_info(audit_log)")]
    good = Migration(now + 1, ("ALTER TABLE audit_log ADD COLUMN ticket TEXT",))
    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS[:-1], good))
    with Store.open(path) as s:
        assert s.schema_version == now + 1
        assert [e.id for e in s.audit_log()] == [aid]
        assert "ticket" in [r[1] for r in s._db.execute("PRAGMA table_info(audit_log)")]
    # a fresh store gets the same schema through the same steps
    with Store.open(tmp_path / "fresh.db") as fresh:
        assert fresh.schema_version == now + 1
        assert "ticket" in [r[1] for r in fresh._db.execute("PRAGMA table_info(audit_log)")]


# -- captures -------------------------------------------------------------------------------
def test_raw_text_round_trips_byte_exact(store: Store) -> None:
    text = 'Switch\t36 "S-0002c90200402e10"\r\n# trailing  \r\n\u00e9\u00df\u4e2d \x00 end\n\n'
    cid = store.save_capture(
        RawCapture("topology", "ibnetdiscover", text, 12.5, "login1", ("ibnetdiscover", "-p"), "v3")
    )
    cap = store.load_capture(cid)
    assert cap.raw == text and isinstance(cap.raw, str)
    assert (cap.kind, cap.tool, cap.source, cap.argv, cap.parser_version, cap.taken_at) == (
        "topology",
        "ibnetdiscover",
        "login1",
        ("ibnetdiscover", "-p"),
        "v3",
        12.5,
    )
    assert cap.size == len(text.encode())
    blob = bytes(range(256)) + b"\xff\xfe not utf-8 \r\n"
    bid = store.save_capture(RawCapture("counters", "perfquery", blob, 13.0))
    back = store.load_capture(bid)
    assert back.raw == blob and isinstance(back.raw, bytes)
    assert back.text.encode("utf-8", "surrogateescape") == blob
    with pytest.raises(StoreError, match="no capture 999"):
        store.load_capture(999)


def test_list_captures_finds_old_parser_versions_and_reparse_rereads(store: Store) -> None:
    path = realdata_files("ibnetdiscover")[0]
    text = path.read_text()
    old = store.save_capture(
        RawCapture("topology", "ibnetdiscover", text, 1.0, str(path), (), "ibnetdiscover/1")
    )
    store.save_capture(RawCapture("topology", "ibnetdiscover", text, 2.0, str(path), (), "ibnetdiscover/2"))
    assert [c.id for c in store.list_captures(tool="ibnetdiscover", parser_version="ibnetdiscover/1")] == [
        old
    ]
    fabric, cap = store.reparse(old, lambda t, src: parse_ibnetdiscover(t.splitlines(), src))
    assert cap.parser_version == "ibnetdiscover/1"
    assert fabric == read_ibnetdiscover(path)


# -- topology snapshots ---------------------------------------------------------------------
def test_topology_round_trip_by_id_latest_and_label(store: Store) -> None:
    paths = {p.name: p for p in realdata_files("ibnetdiscover")}
    small = paths["ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt"]
    big = paths["topograph-dgx-ndr-superpod-622nodes.txt"]
    f_small, f_big = read_ibnetdiscover(small), read_ibnetdiscover(big)
    a = store.save_topology(
        f_small, small.read_text(), "ibnetdiscover", "lab", label="baseline", taken_at=100.0
    )
    b = store.save_topology(f_big, big.read_bytes(), "ibnetdiscover", "pod1", taken_at=200.0)
    assert store.load_topology(a).fabric == f_small
    assert store.load_topology(str(a)).fabric == f_small
    assert store.load_topology("baseline").id == a
    latest = store.load_topology("latest")
    assert latest.id == b and latest.fabric == f_big
    s = latest.summary
    assert (s.nodes, s.switches, s.hcas, s.links) == (
        len(f_big.nodes),
        len(f_big.switches()),
        len(f_big.hcas()),
        len(f_big.links),
    )
    assert store.load_capture(s.capture_id or 0).raw == big.read_bytes()
    assert [t.id for t in store.list_topologies()] == [a, b]
    for ref in ("nightly", 42):
        with pytest.raises(StoreError, match=repr(ref)):
            store.load_topology(ref)


def test_latest_of_an_empty_store_is_an_error(store: Store) -> None:
    with pytest.raises(StoreError, match="'latest'"):
        store.load_topology("latest")


# -- counter snapshots ----------------------------------------------------------------------
def test_counter_snapshot_round_trip_frame_contract(store: Store) -> None:
    raw = RawCapture(
        "counters",
        "perfquery",
        "# Port extended counters: Lid 10 port 1\n",
        50.0,
        "node1",
        ("perfquery", "-x"),
        "pq/1",
    )
    rows = [_row(g, p, 50.0 + g) for g in (1, 2) for p in (1, 2)]
    rec = PortCounterRow(51.0, "0x0000000000000009", 3, None, None, None, False, "timeout", {})
    sid = store.save_counter_snapshot(50.0, "daemon", None, [*rows, rec], [raw])
    (info,) = store.list_counter_snapshots()
    assert (info.id, info.ports, info.state, info.source) == (sid, 5, "complete", "daemon")
    assert store.load_capture(store.snapshot_captures(sid)[0].id).raw == raw.raw
    frame = store.load_counters()
    assert tuple(frame.columns) == FRAME_COLUMNS
    assert str(frame["lid"].dtype) == "Int64" and str(frame["peer_port"].dtype) == "Int64"
    assert all(str(frame[c].dtype) == "Int64" for c in COUNTER_NAMES)
    assert str(frame["time"].dtype) == "float64" and str(frame["reachable"].dtype) == "bool"
    assert list(frame["guid"]) == ["0x0000000000000001"] * 2 + ["0x0000000000000002"] * 2 + [
        "0x0000000000000009"
    ]
    first = frame.iloc[0]
    assert first["snapshot"] == sid and first["port"] == 1 and first["peer_guid"] == "0x0000000000000002"
    assert [first[c] for c in COUNTER_NAMES] == list(range(1, 1 + len(COUNTER_NAMES)))
    dead = frame.iloc[4]
    assert not dead["reachable"] and frame[COUNTER_NAMES[0]].isna().tolist() == [False] * 4 + [True]
    exact = store.load_port_counters(sid)
    assert exact[4] == rec
    assert exact[0].counters["rcv_pkts"] == 1 + len(COUNTER_NAMES) - 1
    assert tuple(PORT_COUNTER_FIELDS[:8]) == (
        "guid",
        "port",
        "lid",
        "peer_guid",
        "peer_port",
        "reachable",
        "unreachable_reason",
        "time",
    )


def test_load_counters_filters_by_time_guid_and_snapshot(store: Store) -> None:
    ids = [
        store.save_counter_snapshot(t, "d", None, [_row(g, 1, t, base=int(t)) for g in (1, 2, 3)])
        for t in (10.0, 20.0, 30.0)
    ]
    assert store.load_counters(since=15.0)["snapshot"].unique().tolist() == ids[1:]
    assert store.load_counters(until=20.0)["snapshot"].unique().tolist() == ids[:2]
    picked = store.load_counters(guids=["0x0000000000000002"], snapshots=[ids[2]])
    assert len(picked) == 1 and picked.iloc[0]["symbol_errors"] == 30 + 2
    assert store.load_counters(since=99.0).empty


def test_values_at_and_above_2_63_survive(store: Store) -> None:
    huge = {
        "xmit_data": 2**64 - 1,
        "rcv_data": 2**63,
        "xmit_pkts": 2**63 - 1,
        "symbol_errors": max_value("symbol_errors"),
    }
    sid = store.save_counter_snapshot(1.0, "d", None, [PortCounterRow(1.0, "0x01", 1, counters=huge)])
    assert store.load_port_counters(sid)[0].counters == huge
    row = store.load_counters().iloc[0]
    # the pandas table is Int64: values past its range show as its maximum
    assert row["xmit_data"] == 2**63 - 1 and row["rcv_data"] == 2**63 - 1 and row["xmit_pkts"] == 2**63 - 1


@pytest.mark.parametrize("bad", [-1, 2**64])
def test_out_of_range_values_leave_nothing_behind(store: Store, bad: int) -> None:
    with pytest.raises(StoreError, match=r"negative|unsigned 64-bit"):
        store.save_counter_snapshot(
            1.0, "d", None, [_row(1, 1, 1.0), PortCounterRow(1.0, "0x02", 1, counters={"rcv_data": bad})]
        )
    assert store.list_counter_snapshots() == [] and store.load_counters().empty
    assert store._db.execute("SELECT count(*) FROM counter_blocks").fetchone() == (0,)


def test_duplicate_port_in_a_snapshot_rolls_back_everything(store: Store) -> None:
    raw = RawCapture("counters", "perfquery", "x", 1.0)
    with pytest.raises(StoreError, match="0x0000000000000001 1 appears twice"):
        store.save_counter_snapshot(1.0, "d", None, [_row(1, 1, 1.0), _row(1, 1, 1.0)], [raw])
    assert store.list_counter_snapshots() == [] and store.list_captures() == []


def test_prune_counters_drops_old_snapshots_and_their_captures(store: Store) -> None:
    old = store.save_counter_snapshot(
        1.0, "d", None, [_row(1, 1, 1.0)], [RawCapture("counters", "perfquery", "old", 1.0)]
    )
    new = store.save_counter_snapshot(
        9.0, "d", None, [_row(1, 1, 9.0, base=7)], [RawCapture("counters", "perfquery", "new", 9.0)]
    )
    # the newer snapshot was stored as a change against the older one
    assert store._db.execute(
        "SELECT base_id FROM counter_blocks WHERE snapshot_id = ?", (new,)
    ).fetchone() == (old,)
    assert store.prune_counters(before=5.0) == 1
    assert [s.id for s in store.list_counter_snapshots()] == [new]
    assert [store.load_capture(c.id).raw for c in store.list_captures()] == ["new"]
    assert store._db.execute(
        "SELECT count(*) FROM counter_blocks WHERE snapshot_id = ?", (old,)
    ).fetchone() == (0,)
    # ... and was rewritten whole before its base went: its values are intact, in a fresh reader too
    expected = _row(1, 1, 9.0, base=7)
    with Store.open(store.path) as fresh:
        (row,) = fresh.load_port_counters(new)
    assert [row.counters[name] for name in COUNTER_NAMES] == list(expected[8:])


# -- events, findings, sweeps, audit, schedules, runs ----------------------------------------
def test_link_events_round_trip(store: Store) -> None:
    link = (("0x0000000000000001", 3), ("0x0000000000000002", 1))
    other = (("0x0000000000000005", 1), ("0x0000000000000006", 7))
    events = [
        LinkEvent(10.0, link, "down", "daemon"),
        LinkEvent(12.0, link, "up", "daemon"),
        LinkEvent(11.0, other, "down"),
    ]
    assert store.add_link_events(events) == 3
    assert store.load_link_events() == [events[0], events[2], events[1]]
    assert store.load_link_events(since=11.0, link=link) == [events[1]]
    with pytest.raises(ValueError, match="'down' or 'up'"):  # the record refuses it before the store's CHECK
        store.add_link_events([LinkEvent(1.0, link, "sideways")])


def test_findings_history_keeps_one_status_per_day_subject_kind(store: Store) -> None:
    link = FindingSubject.of_link((("0x0000000000000001", 3), ("0x0000000000000002", 1)))
    store.record_findings(
        "2024-05-01",
        [(link, "ber", "warning"), (FindingSubject.of_node("0x0000000000000007"), "flapping", "error")],
    )
    store.record_findings("2024-05-02", [(link, "ber", "warning")])
    store.record_findings("2024-05-02", [(link, "ber", "error")])
    history = store.load_findings_history()
    assert [(f.day, f.subject, f.kind, f.status) for f in history] == [
        ("2024-05-01", "0x0000000000000001/3-0x0000000000000002/1", "ber", "warning"),
        ("2024-05-01", "0x0000000000000007", "flapping", "error"),
        ("2024-05-02", "0x0000000000000001/3-0x0000000000000002/1", "ber", "error"),
    ]
    assert [f.day for f in store.load_findings_history(since="2024-05-02")] == ["2024-05-02"]


def test_probe_sweep_round_trip(store: Store) -> None:
    cid = store.save_capture(RawCapture("probe", "ib_write_bw", "BW average[Gb/sec] 97.1\n", 5.0, "gpu1"))
    sweep = store.save_sweep(5.0, "rail-pairs", "cli")
    results = [
        ProbeResultRow("gpu1", "mlx5_0", "gpu2", "mlx5_0", 97.1, 100.0, True, None, cid),
        ProbeResultRow("gpu3", "mlx5_1", "gpu4", "mlx5_1", None, 100.0, False, "ssh: connection refused"),
    ]
    assert store.add_probe_results(sweep, results) == 2
    store.finish_sweep(sweep, 9.0)
    loaded = store.load_sweep(sweep)
    assert loaded.results == tuple(results)
    assert (loaded.sweep.started, loaded.sweep.finished, loaded.sweep.pattern) == (5.0, 9.0, "rail-pairs")
    assert [s.id for s in store.list_sweeps()] == [sweep]
    with pytest.raises(StoreError, match="no probe sweep 77"):
        store.add_probe_results(77, results)


def test_audit_log_round_trip_with_undo(store: Store) -> None:
    first = store.audit(
        "alice", "isolate", "0x0002c903006e29b0/5", "ibportstate 12 5 disable", "ok", when=1.0
    )
    undo = store.audit(
        "bob", "deisolate", "0x0002c903006e29b0/5", "ibportstate 12 5 enable", "ok", undo_of=first, when=2.0
    )
    log = store.audit_log()
    assert [(e.id, e.user, e.action, e.undo_of) for e in log] == [
        (first, "alice", "isolate", None),
        (undo, "bob", "deisolate", first),
    ]
    assert log[0].command == "ibportstate 12 5 disable" and log[0].time == 1.0
    assert [e.id for e in store.audit_log(since=1.5)] == [undo]
    with pytest.raises(StoreError, match="unknown entry 404"):
        store.audit("eve", "deisolate", "x", "y", "ok", undo_of=404)


def test_schedules_crud_and_runs(store: Store) -> None:
    sid = store.add_schedule(
        "counters-5m", "counters", interval_seconds=300, args={"hosts": "gpu[1-4]"}, next_run=600.0
    )
    store.add_schedule("nightly-sweep", "sweep", cron="0 2 * * *", enabled=False)
    with pytest.raises(StoreError, match="exactly one"):
        store.add_schedule("both", "sweep", interval_seconds=5, cron="* * * * *")
    with pytest.raises(StoreError, match="UNIQUE"):
        store.add_schedule("counters-5m", "counters", interval_seconds=60)
    with pytest.raises(StoreError, match="CHECK"):
        store.add_schedule("weird", "coffee", interval_seconds=60)
    got = store.schedule("counters-5m")
    assert (got.id, got.kind, got.interval_seconds, got.cron, dict(got.args), got.enabled, got.next_run) == (
        sid,
        "counters",
        300,
        None,
        {"hosts": "gpu[1-4]"},
        True,
        600.0,
    )
    assert [s.name for s in store.list_schedules(enabled_only=True)] == ["counters-5m"]
    changed = store.update_schedule(sid, interval_seconds=60, enabled=False, args={"hosts": "all"})
    assert (changed.interval_seconds, changed.enabled, dict(changed.args)) == (60, False, {"hosts": "all"})
    with pytest.raises(StoreError, match="name"):
        store.update_schedule(sid, name="x")
    run = store.start_run(sid, started=700.0)
    assert store.list_runs(sid)[0].finished is None
    done = store.finish_run(run, ok=False, error="perfquery timed out", finished=705.0)
    assert (done.ok, done.error, done.started, done.finished) == (False, "perfquery timed out", 700.0, 705.0)
    assert store.schedule(sid).last_run == 700.0
    manual = store.start_run(None, started=800.0)
    assert [r.id for r in store.list_runs()] == [manual, run]
    store.delete_schedule("counters-5m")
    assert store.list_runs()[1].schedule_id is None  # runs outlive their schedule
    with pytest.raises(StoreError, match="no schedule 'counters-5m'"):
        store.schedule("counters-5m")


# -- crash safety and concurrency (real processes) -------------------------------------------
_WRITER = textwrap.dedent(
    """
    import sys
    from fabric.core.fields import COUNTER_NAMES
    from fabric.store import RawCapture, Store

    path, taken_at, nrows = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])

    def rows():
        # the rows are consumed inside the write transaction: say so, then keep going
        print("in-transaction", flush=True)
        for i in range(nrows):
            yield (f"0x{i // 40:016x}", 1 + i % 40, i // 40, None, None, True, None, taken_at,
                   *[i + k for k in range(len(COUNTER_NAMES))])

    with Store.open(path) as store:
        raw = RawCapture("counters", "perfquery", "x" * 100_000, taken_at)
        sid = store.save_counter_snapshot(taken_at, "crash-test", None, rows(), [raw])
        print("committed", sid, flush=True)
    """
)


def _fingerprint(store: Store) -> dict[int, tuple[int, int, int]]:
    """snapshot id -> (ports it claims, rows it has, sum of one counter) for every visible snapshot."""
    out = {}
    for s in store.list_counter_snapshots():
        frame = store.load_counters(snapshots=[s.id])
        out[s.id] = (s.ports, len(frame), int(frame["symbol_errors"].sum()))
    return out


@pytest.mark.slow
def test_sigkill_mid_snapshot_leaves_all_or_nothing(tmp_path: Path) -> None:
    path = tmp_path / "ibfab.db"
    with Store.open(path) as s:
        for t in (1.0, 2.0):
            s.save_counter_snapshot(t, "before", None, [_row(g, 1, t) for g in range(1, 500)])
        before = _fingerprint(s)
    nrows = 200_000
    rng = random.Random(7)
    outcomes = []
    # the write takes a few seconds: spread the kills from the first row to around the commit
    delays = [rng.uniform(lo, hi) for lo, hi in ((0.0, 0.3), (0.3, 1.5), (1.5, 2.6), (2.6, 4.0))]
    kept = []
    for attempt, delay in enumerate(delays):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), str(10.0 + attempt), str(nrows)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "in-transaction"
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        outcomes.append(proc.returncode)
        with Store.open(path, create=False) as s:
            assert s.integrity_check() == "ok"
            now = _fingerprint(s)
            assert {k: now[k] for k in before if k in now} == before  # every earlier snapshot intact
            new = [k for k in now if k not in before]
            # the writer's symbol_errors of row i is i, so a complete snapshot sums to n(n-1)/2
            assert len(new) <= 1 and all(now[k] == (nrows, nrows, nrows * (nrows - 1) / 2) for k in new), now
            if new:
                assert len(s.snapshot_captures(new[0])) == 1
            kept.append(bool(new))
            orphans = s._db.execute(
                "SELECT count(*) FROM counter_blocks WHERE snapshot_id NOT IN (SELECT id FROM counter_snapshots)"
            ).fetchone()[0]
            assert orphans == 0
            assert s._db.execute(
                "SELECT count(*) FROM counter_snapshots WHERE state != 'complete'"
            ).fetchone() == (0,)
            # the next write works
            s.save_counter_snapshot(100.0 + attempt, "after", None, [_row(1, 1, 1.0)])
            before = _fingerprint(s)
    print(f"\nkill after {[round(d, 2) for d in delays]} s: exit {outcomes}, snapshot kept {kept}")
    assert -signal.SIGKILL in outcomes
    assert not kept[0]  # killed while the rows were being written: nothing of it is visible


@pytest.mark.slow
def test_two_writer_processes_and_a_reader_at_once(tmp_path: Path) -> None:
    path = tmp_path / "ibfab.db"
    Store.open(path).close()
    nrows, rounds = 20_000, 4
    loop = textwrap.dedent(
        f"""
        import subprocess, sys
        for r in range({rounds}):
            subprocess.run([sys.executable, "-c", {_WRITER!r}, {str(path)!r}, sys.argv[1] + str(r), "{nrows}"],
                           check=True, stdout=subprocess.DEVNULL)
        """
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", loop, tag], cwd=ROOT, stderr=subprocess.PIPE, text=True)
        for tag in ("1", "2")
    ]
    seen: set[int] = set()
    reads = 0
    with Store.open(path, create=False) as reader:
        while any(w.poll() is None for w in writers) or reads == 0:
            for snap in reader.list_counter_snapshots():
                if snap.id not in seen:
                    frame = reader.load_counters(snapshots=[snap.id])
                    assert len(frame) == nrows == snap.ports  # never a part of a snapshot
                    seen.add(snap.id)
            reads += 1
            time.sleep(0.05)
        for w in writers:
            _, err = w.communicate()
            assert w.returncode == 0, err
        assert len(reader.list_counter_snapshots()) == 2 * rounds
        assert reader.integrity_check() == "ok"
    assert len(seen) >= 2  # the reader saw snapshots appear while the writers ran


def test_captures_compressed_ahead_are_stored_byte_exact_and_taken_once(store: Store) -> None:
    text = "".join(f"GUID 0x{i:016x} port {i % 64}: [PortXmitWait == {i * 7}]\n" for i in range(3000))
    other = "x" * 5000 + "\udcff"  # a lone surrogate, as surrogateescape keeps undecodable bytes
    with CompressAhead(min_bytes=1) as ahead:
        ahead.add(text)
        ahead.add(other)
        equal_copy = "".join([text[:10], text[10:]])  # same content, another object
        assert equal_copy is not text
        sid = store.save_counter_snapshot(
            5.0,
            "t",
            None,
            [_row(1, 1, 5.0)],
            [
                RawCapture("counters", "ibqueryerrors", equal_copy, 5.0),
                RawCapture("counters", "x", "small", 5.0),
            ],
            ahead=ahead,
        )
        assert ahead.take(text) is None  # the save took it
        assert ahead.take(other) is not None  # never stored: still there until the context ends
    stored = {c.tool: store.load_capture(c.id) for c in store.snapshot_captures(sid)}
    assert stored["ibqueryerrors"].raw == text and stored["ibqueryerrors"].size == len(text)
    assert stored["x"].raw == "small"
    assert store._db.execute("PRAGMA cache_size").fetchone()[0] == -2000  # the save's bigger cache is undone


def test_tuple_rows_list_rows_and_records_mixed_in_one_snapshot(store: Store) -> None:
    rec = PortCounterRow(3.0, "0x0000000000000009", 2, counters={"xmit_data": 5})
    sid = store.save_counter_snapshot(3.0, "d", None, [_row(1, 1, 3.0), list(_row(2, 1, 3.0)), rec])
    rows = store.load_port_counters(sid)
    assert [(r.guid, r.port) for r in rows] == [
        ("0x0000000000000001", 1),
        ("0x0000000000000002", 1),
        ("0x0000000000000009", 2),
    ]
    assert rows[1].counters["symbol_errors"] == 2 and rows[2].counters == {"xmit_data": 5}
