"""A store that heals: one flipped bit in a copy of a store (in a topology, a counter block, a
port set, a capture) is found by its checksum, skipped with a warning naming it, never stops
the commands that read the store or the next collection, and `ibfab store repair` sets it aside."""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli import main
from fabric.core.fields import COUNTER_NAMES
from fabric.store import RawCapture, Store, StoreError
from fabric.store.blocks import KEY_EVERY
from tests.conftest import REALDATA
from topology.ibnetdiscover import read_ibnetdiscover
from topology.model import Fabric

CAPTURE = REALDATA / "ibnetdiscover" / "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt"
T0 = float(int(time.time()) - 7200)  # two hours ago: inside the last day, which `export json --health` reads
SNAPSHOTS = 6


def _rows(fabric_links: list[tuple[tuple[str, int], tuple[str, int]]], s: int) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for (a, pa), (b, pb) in fabric_links:
        for (g, p), (pg, pp) in (((a, pa), (b, pb)), ((b, pb), (a, pa))):
            counters = [0] * len(COUNTER_NAMES)
            counters[COUNTER_NAMES.index("xmit_data")] = 10**9 * s + 7919 * s * s * p  # every block its own
            counters[COUNTER_NAMES.index("rcv_data")] = 10**9 * s + p
            rows.append((g, p, None, pg, pp, True, None, T0 + 60 * s, *counters))
    return rows


def _build(path: Path) -> None:
    """Two topology snapshots of a real capture (the second labelled, one cable less), six counter
    snapshots."""
    fabric = read_ibnetdiscover(CAPTURE)
    raw = CAPTURE.read_text()
    links = [lk.key for lk in fabric.links]
    with Store.open(path) as store:
        store.save_topology(fabric, raw, "ibnetdiscover", "file", taken_at=T0 - 100)
        one_less = Fabric.build(list(fabric.nodes.values()), list(fabric.links)[1:])
        topo = store.save_topology(one_less, raw, "ibnetdiscover", "file", "now", taken_at=T0 - 50)
        for s in range(SNAPSHOTS):
            cap = RawCapture("counters", "ibqueryerrors", f"snapshot {s} text " * 50, T0 + 60 * s)
            store.save_counter_snapshot(T0 + 60 * s, "test", topo, _rows(links, s), [cap])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("heal") / "clean.db"
    _build(path)
    return path


def _copy(built: Path, tmp_path: Path) -> Path:
    """A copy of the store made by this test, with the WAL folded into the file."""
    with sqlite3.connect(built) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    copy = tmp_path / "ibfab.db"
    shutil.copyfile(built, copy)
    return copy


def flip_bit(path: Path, table: str, column: str, where: str, bit: int = 3) -> None:
    """Flip one bit of a stored blob in the file itself (SQLite has no page checksums: only the
    store's own checks can notice)."""
    with sqlite3.connect(path) as db:
        (blob,) = db.execute(f"SELECT {column} FROM {table} WHERE {where}").fetchone()
    data = bytearray(path.read_bytes())
    probe = bytes(blob[: min(len(blob), 3000)])  # what fits on its first page
    at = data.find(probe)
    assert at > 0 and data.find(probe, at + 1) < 0, "the blob's bytes are not unique in the file"
    data[at + len(probe) // 2] ^= 1 << bit
    path.write_bytes(bytes(data))


def _ids(path: Path) -> list[int]:
    with Store.open(path, create=False) as store:
        return [s.id for s in store.list_counter_snapshots()]


def test_a_clean_store_checks_clean_and_reads_without_warnings(
    built: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _copy(built, tmp_path)
    with caplog.at_level(logging.WARNING), Store.open(path, create=False) as store:
        assert store.check() == []
        assert len(store.load_counters()) == SNAPSHOTS * 2 * (store.load_topology().summary.links + 1)
    assert caplog.records == []
    res = CliRunner().invoke(main, ["store", "check", "--db", str(path)])
    assert res.exit_code == 0 and "reads back as stored" in res.stdout


def test_a_flipped_bit_in_a_counter_block_skips_it_and_its_chain_then_repair_sets_them_aside(
    built: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _copy(built, tmp_path)
    ids = _ids(path)
    damaged = ids[2]
    flip_bit(path, "counter_blocks", "data", f"snapshot_id = {damaged}")
    with caplog.at_level(logging.WARNING), Store.open(path, create=False) as store:
        frame = store.load_counters()
        # the damaged one and the ones stored as changes against it are left out, the rest read
        assert sorted(frame["snapshot"].unique().tolist()) == ids[:2]
        warned = [r.getMessage() for r in caplog.records]
        assert any(f"counter snapshot {damaged} skipped: damaged (checksum mismatch)" in m for m in warned)
        assert any(
            f"counter snapshot {ids[3]} skipped: stored as a change against snapshot {damaged}" in m
            for m in warned
        )
        with pytest.raises(StoreError, match=f"counter snapshot {damaged} is damaged"):
            store.load_port_counters(damaged)
        # the next collection is stored (as a new key block) and reads back
        links = [lk.key for lk in store.load_topology(1).fabric.links]
        new = store.save_counter_snapshot(T0 + 3600, "test", None, _rows(links, 60))
        assert store._db.execute(
            "SELECT base_id FROM counter_blocks WHERE snapshot_id = ?", (new,)
        ).fetchone() == (None,)
        assert len(store.load_port_counters(new)) == 2 * len(links)
        found = store.check()
        assert [(d.kind, d.ref) for d in found] == [("counter snapshot", i) for i in ids[2:]]
    health = CliRunner().invoke(main, ["health", "--db", str(path), "--since", "all", "--no-record"])
    assert "Traceback" not in health.output
    assert (
        f"ibfab: warning: {path}: counter snapshot {damaged} skipped: damaged (checksum mismatch)"
        in health.stderr
    )
    res = CliRunner().invoke(main, ["store", "check", "--db", str(path), "--json"])
    assert res.exit_code == 1
    assert [d["ref"] for d in json.loads(res.stdout)["damage"]] == ids[2:]
    res = CliRunner().invoke(main, ["store", "repair", "--db", str(path)])
    assert res.exit_code == 0, res.output
    assert f"set aside {len(ids) - 2}" in res.stdout
    caplog.clear()
    with caplog.at_level(logging.WARNING), Store.open(path, create=False) as store:
        assert [s.id for s in store.list_counter_snapshots()] == [*ids[:2], new]
        assert store.check() == []
        assert sorted(store.load_counters()["snapshot"].unique().tolist()) == [*ids[:2], new]
        kept = store.list_quarantine()
        assert [(q.kind, q.ref) for q in kept] == [("counter snapshot", i) for i in ids[2:]]
        assert all(q.size for q in kept)  # the blobs are kept as they were
        assert len(store.list_captures(kind="counters")) == SNAPSHOTS + 0  # raw texts kept too
    assert caplog.records == []
    assert CliRunner().invoke(main, ["store", "check", "--db", str(path)]).exit_code == 0


def test_a_damaged_key_block_costs_at_most_its_chain(built: Path, tmp_path: Path) -> None:
    path = _copy(built, tmp_path)
    ids = _ids(path)
    flip_bit(path, "counter_blocks", "data", f"snapshot_id = {ids[0]}")
    with Store.open(path, create=False) as store:
        assert SNAPSHOTS <= KEY_EVERY  # every snapshot here hangs on the first block
        assert store.load_counters().empty
        assert {d.ref for d in store.check()} == set(ids)


def test_a_flipped_bit_in_the_port_set_skips_its_snapshots_and_the_next_save_mends_it(
    built: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _copy(built, tmp_path)
    flip_bit(path, "port_sets", "data", "id = 1")
    with caplog.at_level(logging.WARNING), Store.open(path, create=False) as store:
        assert store.load_counters().empty
        assert "port set 1 fails its checksum" in caplog.text
        assert ("port set", 1) in [(d.kind, d.ref) for d in store.check()]
        links = [lk.key for lk in store.load_topology(1).fabric.links]  # the same ports as before
        new = store.save_counter_snapshot(T0 + 3600, "test", None, _rows(links, 60))
    with Store.open(path, create=False) as store:  # a fresh reader: the port set reads again
        assert sorted(store.load_counters()["snapshot"].unique().tolist()) == _ids(path)
        assert new in _ids(path) and store.check() == []


def test_a_flipped_bit_in_the_newest_topology_is_a_warning_for_latest_and_an_error_by_id(
    built: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _copy(built, tmp_path)
    flip_bit(path, "topology_snapshots", "fabric_json_zlib", "id = 2")
    with caplog.at_level(logging.WARNING), Store.open(path, create=False) as store:
        assert store.load_topology("latest").id == 1
        assert "topology snapshot 2 is damaged (checksum mismatch); using topology snapshot 1" in caplog.text
        with pytest.raises(
            StoreError, match=r"topology snapshot 2 is damaged \(checksum mismatch\); `ibfab store repair`"
        ):
            store.load_topology("now")
        assert [(d.kind, d.ref) for d in store.check()] == [("topology", 2)]
    runner = CliRunner()
    res = runner.invoke(main, ["topology", "diff", "1", "2", "--db", str(path)])
    assert res.exit_code == 5 and "Traceback" not in res.output
    assert res.stderr.strip().count("\n") == 0 and "topology snapshot 2 is damaged" in res.stderr
    # what reads the newest topology goes on with the one before it
    res = runner.invoke(main, ["health", "--db", str(path), "--since", "all", "--json"])
    assert res.exit_code in (0, 1), res.output  # the exit code says how healthy the fabric is
    assert json.loads(res.stdout)["summary"]["snapshots"] == SNAPSHOTS
    res = runner.invoke(main, ["export", "json", "--input", str(CAPTURE), "--health", "--db", str(path)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["recommend", "--input", str(CAPTURE), "--db", str(path), "--json"])
    assert res.exit_code == 0, res.output
    assert runner.invoke(main, ["store", "repair", "--db", str(path)]).exit_code == 0
    with Store.open(path, create=False) as store:
        assert [t.id for t in store.list_topologies()] == [1]
        assert {s.topology_id for s in store.list_counter_snapshots()} == {None}
        assert store.check() == []


def test_a_flipped_bit_in_a_capture_is_a_one_line_error_and_is_set_aside(built: Path, tmp_path: Path) -> None:
    path = _copy(built, tmp_path)
    with Store.open(path, create=False) as store:
        (cap,) = store.snapshot_captures(_ids(path)[1])
    flip_bit(path, "captures", "raw_zlib", f"id = {cap.id}")
    with Store.open(path, create=False) as store:
        with pytest.raises(StoreError, match=f"capture {cap.id} is damaged"):
            store.load_capture(cap.id)
        assert [(d.kind, d.ref) for d in store.check()] == [("capture", cap.id)]
        assert store.set_aside(store.check()) == 1
        assert store.snapshot_captures(_ids(path)[1]) == []
        assert store.check() == []
        assert len(store.load_counters()) > 0


def test_what_is_not_an_ibfab_store_is_a_one_line_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"\x00not a database at all" * 100)
    res = CliRunner().invoke(main, ["store", "check", "--db", str(junk)])
    assert res.exit_code == 5 and res.stderr.count("\n") == 1 and "not an SQLite database" in res.stderr
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    res = CliRunner().invoke(main, ["store", "check", "--db", str(other)])
    assert res.exit_code == 5 and "not an ibfab store" in res.stderr
    missing = tmp_path / "missing.db"
    _build(missing)
    with sqlite3.connect(missing) as db:
        db.execute("DROP TABLE quarantine")
    # a table gone from the schema: what reads is read (a warning says why nothing is written),
    # writes are refused in one line, `store repair` makes the table anew
    res = CliRunner().invoke(main, ["health", "--db", str(missing), "--since", "all", "--no-record"])
    assert res.exit_code in (0, 1) and "Traceback" not in res.output, res.output
    assert "its schema is damaged (table quarantine missing)" in res.stderr
    res = CliRunner().invoke(
        main, ["schedule", "add", "x", "--kind", "counters", "--every", "5m", "--db", str(missing)]
    )
    assert res.exit_code == 5 and "Traceback" not in res.output
    assert (
        res.stderr.splitlines()[-1].startswith("ibfab: error: ")
        and "not written: its schema is damaged" in res.stderr
    )
    res = CliRunner().invoke(main, ["store", "repair", "--db", str(missing)])
    assert res.exit_code == 0 and "table quarantine (made anew, empty)" in res.stdout, res.output
    assert CliRunner().invoke(main, ["store", "check", "--db", str(missing)]).exit_code == 0


def test_a_store_with_damaged_pages_says_so_in_one_line(built: Path, tmp_path: Path) -> None:
    path = _copy(built, tmp_path)
    data = bytearray(path.read_bytes())
    page = 4096
    for at in range(2 * page, len(data), page):  # every b-tree page header: no longer a page
        data[at] = 0xEE
    path.write_bytes(bytes(data))
    for command in (["store", "check"], ["health"], ["store", "repair"]):
        res = CliRunner().invoke(main, [*command, "--db", str(path)])
        assert res.exit_code == 5 and "Traceback" not in res.output, res.output
        assert res.stderr.count("\n") == 1 and "a damaged SQLite database" in res.stderr


def test_a_damaged_data_page_is_found_by_the_check(built: Path, tmp_path: Path) -> None:
    path = _copy(built, tmp_path)
    with sqlite3.connect(path) as db:  # the last page that is not the schema's: a table's or an index's
        (page,) = db.execute("SELECT max(pageno) FROM dbstat WHERE name != 'sqlite_schema'").fetchone()
    data = bytearray(path.read_bytes())
    last = (page - 1) * 4096
    data[last : last + 8] = b"\xee" * 8
    path.write_bytes(bytes(data))
    res = CliRunner().invoke(main, ["store", "check", "--db", str(path)])
    assert "Traceback" not in res.output
    assert res.exit_code == 1, res.output
    assert "file" in res.stdout and "`ibfab store repair` builds a damaged index anew" in res.stdout
    res = CliRunner().invoke(main, ["store", "repair", "--db", str(path)])
    assert res.exit_code == 0 and "Traceback" not in res.output, res.output
    assert CliRunner().invoke(main, ["store", "check", "--db", str(path)]).exit_code == 0
    assert _ids(path) and len(_ids(path)) == SNAPSHOTS


@pytest.mark.lab
def test_collections_go_on_over_a_damaged_topology_and_a_damaged_block(tmp_path: Path) -> None:
    """The reproduction of issue 15: one flipped bit in the stored topology (then in the newest
    counter block) made `counters collect` fail with a zlib traceback."""
    from fabric.lab import simulator as lab

    lab.up("leafspine:leaves=2,spines=2,hosts=2", name="heal")
    try:
        db = tmp_path / "lab.db"
        collect = ["counters", "collect", "--lab", "heal", "--count", "1", "--db", str(db)]
        runner = CliRunner()
        first = runner.invoke(main, collect)
        assert first.exit_code == 0, first.output
        with sqlite3.connect(db) as con:
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        flip_bit(db, "topology_snapshots", "fabric_json_zlib", "id = 1")
        second = runner.invoke(main, collect)
        assert second.exit_code == 0, second.output
        # the damaged topology is not diffed against: stored again, and no cable went down or up
        assert "topology 2 saved" in second.stdout and "links down" not in second.stdout
        with sqlite3.connect(db) as con:
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            (newest,) = con.execute("SELECT max(snapshot_id) FROM counter_blocks").fetchone()
        flip_bit(db, "counter_blocks", "data", f"snapshot_id = {newest}")
        third = runner.invoke(main, collect)
        assert third.exit_code == 0, third.output
        with Store.open(db, create=False) as store:
            snaps = store.list_counter_snapshots()
            assert len(snaps) == 3 and len(store.load_port_counters(snaps[-1].id)) == 16
            assert [(d.kind, d.ref) for d in store.check()] == [("topology", 1), ("counter snapshot", newest)]
        assert runner.invoke(main, ["store", "repair", "--db", str(db)]).exit_code == 0
        assert runner.invoke(main, ["store", "check", "--db", str(db)]).exit_code == 0
        health = runner.invoke(main, ["health", "--db", str(db), "--since", "all", "--json"])
        assert health.exit_code in (0, 1) and json.loads(health.stdout)["summary"]["snapshots"] == 2
    finally:
        lab.down("heal")
