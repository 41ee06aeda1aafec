"""Counter snapshots as columnar blocks: exact round trips (any uint64, NULLs, odd times), the
delta chains and their key blocks, and the upgrade of a version-1 store (rows) with nothing lost."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric.core.fields import COUNTER_NAMES, PORT_COUNTER_FIELDS
from fabric.store import PortCounterRow, RawCapture, Store, StoreError, schema
from fabric.store.blocks import KEY_EVERY

_U64 = st.one_of(
    st.none(),
    st.integers(0, 2**64 - 1),
    st.sampled_from([0, 1, 2**16 - 1, 2**63 - 1, 2**63, 2**64 - 1]),
)
_TIME = st.one_of(
    st.floats(0, 2e9, allow_nan=False),
    st.floats(1.7e9, 1.8e9),
    st.sampled_from([0.0, 1e-7, 1_800_000_000.123456789]),
)


@st.composite
def _snapshots(draw: st.DrawFn) -> list[list[PortCounterRow]]:
    """A few snapshots of the same few ports (so that later ones are stored as changes)."""
    ports = draw(
        st.lists(
            st.tuples(st.sampled_from(["0x01", "0x0a", "0x02", "odd guid \u00e9"]), st.integers(1, 64)),
            min_size=1,
            max_size=6,
            unique=True,
        )
    )
    out = []
    for _ in range(draw(st.integers(1, 4))):
        rows = []
        for guid, port in ports:
            reachable = draw(st.booleans())
            counters = {name: v for name in COUNTER_NAMES if (v := draw(_U64)) is not None}
            rows.append(
                PortCounterRow(
                    time=draw(_TIME),
                    guid=guid,
                    port=port,
                    lid=draw(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))),
                    peer_guid=draw(st.one_of(st.none(), st.sampled_from(["0x01", "0xff", "peer"]))),
                    peer_port=draw(st.one_of(st.none(), st.integers(0, 255))),
                    reachable=reachable,
                    unreachable_reason=None
                    if reachable
                    else draw(st.sampled_from(["timeout", "MAD \u00e9"])),
                    counters=counters if reachable else {},
                )
            )
        out.append(rows)
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(snapshots=_snapshots())
def test_every_value_comes_back_exactly(tmp_path: Path, snapshots: list[list[PortCounterRow]]) -> None:
    path = tmp_path / "blocks.db"
    path.unlink(missing_ok=True)
    with Store.open(path) as store:
        ids = [store.save_counter_snapshot(rows[0].time, "t", None, rows) for rows in snapshots]
    with Store.open(path) as fresh:  # nothing from the writer's memory
        for sid, rows in zip(ids, snapshots, strict=True):
            assert fresh.load_port_counters(sid) == sorted(rows, key=lambda r: (r.guid, r.port))
        frame = fresh.load_counters()
    assert len(frame) == sum(len(rows) for rows in snapshots)


def _rows(t: float, step: int) -> list[tuple[object, ...]]:
    return [
        (f"0x{g:016x}", p, g, f"0x{g + 100:016x}", 1, True, None, t, *[step * (g + p + k) for k in range(17)])
        for g in range(1, 5)
        for p in (1, 2)
    ]


def test_changes_chain_to_a_key_block_every_key_every_snapshots(tmp_path: Path) -> None:
    with Store.open(tmp_path / "c.db") as store:
        ids = [
            store.save_counter_snapshot(float(i), "t", None, _rows(float(i), i)) for i in range(KEY_EVERY + 2)
        ]
        chain = dict(store._db.execute("SELECT snapshot_id, base_id FROM counter_blocks").fetchall())
        # a new set of ports starts its own key block
        other = store.save_counter_snapshot(99.0, "t", None, _rows(99.0, 1)[:3])
        assert store._db.execute(
            "SELECT base_id FROM counter_blocks WHERE snapshot_id = ?", (other,)
        ).fetchone() == (None,)
    assert [chain[i] for i in ids] == [None, *ids[: KEY_EVERY - 1], None, ids[KEY_EVERY]]
    with Store.open(tmp_path / "c.db") as fresh:
        for i, sid in enumerate(ids):
            got = fresh.load_port_counters(sid)
            assert [r.counters["rcv_pkts"] for r in got] == [row[-1] for row in _rows(0.0, i)]


def test_unchanged_error_counters_cost_next_to_nothing(tmp_path: Path) -> None:
    ports = 5000
    rows = [
        (
            f"0x{g:016x}",
            1,
            g,
            None,
            None,
            True,
            None,
            1.8e9,
            *([0] * 12),
            7 * g,
            2**50 + g,
            2**50,
            2**40,
            2**40,
        )
        for g in range(ports)
    ]
    moved = [
        (*r[:7], 1.8e9 + 60, *([0] * 12), 7 * g + 3, 2**50 + g + 10**9, 2**50 + 5, 2**40, 2**40)
        for g, r in enumerate(rows)
    ]
    with Store.open(tmp_path / "c.db") as store:
        store.save_counter_snapshot(1.8e9, "t", None, rows)
        second = store.save_counter_snapshot(1.8e9 + 60, "t", None, moved)
        (size,) = store._db.execute(
            "SELECT length(data) FROM counter_blocks WHERE snapshot_id = ?", (second,)
        ).fetchone()
    # 4 bytes per port for the one counter that moved by ~2**30: nothing for the 16 others
    assert size < ports * 5


def _v1_store(path: Path) -> None:
    """A store as the version-1 code wrote it: the base schema, port rows, a capture, a topology."""
    db = sqlite3.connect(path)
    for statement in schema.BASE_SCHEMA:
        db.execute(statement)
    db.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
    db.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '1')")
    db.execute(
        "INSERT INTO captures VALUES (1, 'counters', 'perfquery', '[]', 'n1', 10.0, 'pq/1', 1, 3, ?)",
        (__import__("zlib").compress(b"raw"),),
    )
    marks = ", ".join("?" * (len(PORT_COUNTER_FIELDS) + 1))
    for sid, t in ((1, 10.0), (2, 70.0), (3, 130.0)):
        db.execute("INSERT INTO counter_snapshots VALUES (?, ?, 'daemon', NULL, 3, 'complete')", (sid, t))
        counters = [sid * 10 + k for k in range(len(COUNTER_NAMES))]
        counters[-1] = (2**64 - sid) - 2**64  # a value >= 2**63, stored two's-complement (negative)
        db.executemany(
            f"INSERT INTO port_counters VALUES ({marks})",
            [
                (sid, "0x0000000000000001", 1, 5, "0x0000000000000002", 3, 1, None, t + 0.5, *counters),
                (
                    sid,
                    "0x0000000000000001",
                    2,
                    None,
                    None,
                    None,
                    0,
                    "timeout",
                    t,
                    *([None] * len(COUNTER_NAMES)),
                ),
                (sid, "0x0000000000000002", 3, 6, "0x0000000000000001", 1, 1, None, t, *counters[:-1], None),
            ],
        )
    db.execute("INSERT INTO counter_snapshot_captures VALUES (2, 1)")
    db.commit()
    db.close()


def test_a_version_1_store_upgrades_in_place_with_nothing_lost(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _v1_store(path)
    with Store.open(path) as store:
        assert store.schema_version == schema.schema_version()
        tables = {r[0] for r in store._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "port_counters" not in tables and "counter_blocks" in tables
        assert [(s.id, s.taken_at, s.ports) for s in store.list_counter_snapshots()] == [
            (1, 10.0, 3),
            (2, 70.0, 3),
            (3, 130.0, 3),
        ]
        for sid in (1, 2, 3):
            up, down, other = store.load_port_counters(sid)
            counters = {name: sid * 10 + k for k, name in enumerate(COUNTER_NAMES)}
            counters[COUNTER_NAMES[-1]] = 2**64 - sid
            assert up == PortCounterRow(
                sid * 60 - 50 + 0.5, "0x0000000000000001", 1, 5, "0x0000000000000002", 3, True, None, counters
            )
            assert down == PortCounterRow(
                {1: 10.0, 2: 70.0, 3: 130.0}[sid],
                "0x0000000000000001",
                2,
                None,
                None,
                None,
                False,
                "timeout",
                {},
            )
            assert other.counters == {k: v for k, v in counters.items() if k != COUNTER_NAMES[-1]}
        assert [c.id for c in store.snapshot_captures(2)] == [1]
        assert store.load_capture(1).raw == "raw"
        frame = store.load_counters()
        assert len(frame) == 9 and frame[COUNTER_NAMES[-1]].tolist()[::3] == [2**63 - 1] * 3
        # the next snapshot is stored as a change against the converted ones
        new = store.save_counter_snapshot(190.0, "daemon", None, [r for r in store.load_port_counters(3)])
        assert store._db.execute(
            "SELECT base_id FROM counter_blocks WHERE snapshot_id = ?", (new,)
        ).fetchone() == (3,)
        assert store.integrity_check() == "ok"


def test_an_upgrade_that_fails_leaves_the_version_1_store_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _v1_store(path)
    with sqlite3.connect(path) as db:  # a value the rows could hold but no counter can be
        db.execute("UPDATE port_counters SET symbol_errors = 'lots' WHERE snapshot_id = 2 AND port = 1")
    with pytest.raises(StoreError, match=r"counter snapshot 2: .*symbol_errors = 'lots'"):
        Store.open(path)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
        assert db.execute("SELECT count(*) FROM port_counters").fetchone() == (9,)


def test_save_refuses_what_is_not_a_counter_and_stores_nothing(tmp_path: Path) -> None:
    with Store.open(tmp_path / "c.db") as store:
        raw = RawCapture("counters", "perfquery", "x", 1.0)
        for bad in (1.5, "12", -3, 2**64):
            row = PortCounterRow(1.0, "0x01", 1, counters={"xmit_data": bad})  # type: ignore[dict-item]
            with pytest.raises(StoreError, match="xmit_data"):
                store.save_counter_snapshot(1.0, "t", None, [row], [raw])
        assert store.list_counter_snapshots() == [] and store.list_captures() == []
