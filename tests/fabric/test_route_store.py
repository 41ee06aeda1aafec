"""Forwarding tables stored beside their topology snapshot: round trip, damage, upgrade, cascade."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from fabric.store import Store, StoreDamaged, schema
from tests.conftest import ROOT
from topology.errors import StoreError
from topology.ibnetdiscover import read_ibnetdiscover
from topology.lft import read_lfts

DATA = ROOT / "tests" / "data" / "lft"
FTS = DATA / "dump_fts-fattree-small-minhop.txt"


def _saved(path: Path) -> int:
    with Store.open(path) as store:
        sid = store.save_topology(
            read_ibnetdiscover(DATA / "ibnetdiscover-fattree-small.txt"), "t", "ibnetdiscover", "f"
        )
        store.save_routes(sid, read_lfts(FTS), FTS.read_text(), source="dump_fts on lab x")
    return sid


def test_round_trip_keeps_array_names_and_raw_dump(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    sid = _saved(path)
    want = read_lfts(FTS)
    with Store.open(path) as store:
        got = store.load_routes(sid)
        assert got is not None and store.has_routes(sid) and not store.has_routes(sid + 1)
        assert store.load_routes(sid + 1) is None
        raw = store._db.execute("SELECT capture_id, source FROM route_tables").fetchone()
        assert store.load_capture(raw[0]).text == FTS.read_text() and raw[1] == "dump_fts on lab x"
    assert np.array_equal(got.ports, want.ports) and got.switches == want.switches
    assert got.destinations == want.destinations and got.names == want.names and got.format == want.format


def test_a_damaged_table_is_refused_not_read(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    sid = _saved(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE route_tables SET crc = crc + 1")
    with Store.open(path) as store, pytest.raises(StoreDamaged, match="checksum mismatch"):
        store.load_routes(sid)


def test_routes_need_their_topology_snapshot(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store, pytest.raises(StoreError, match="no topology snapshot 7"):
        store.save_routes(7, read_lfts(FTS))


def test_a_version_4_store_is_upgraded_with_its_topologies_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    now = schema.MIGRATIONS
    monkeypatch.setattr(schema, "MIGRATIONS", tuple(m for m in now if m.to_version <= 4))
    later = ("route_tables", "route_lanes")
    monkeypatch.setattr(schema, "TABLES", tuple(t for t in schema.TABLES if t not in later))
    with Store.open(path) as store:
        sid = store.save_topology(
            read_ibnetdiscover(DATA / "ibnetdiscover-fattree-small.txt"), "t", "ibnetdiscover", "f"
        )
        assert store.schema_version == 4
    monkeypatch.undo()
    with Store.open(path) as store:
        assert store.schema_version == schema.schema_version() >= 5
        store.save_routes(sid, read_lfts(FTS))
        assert store.has_routes(sid)
