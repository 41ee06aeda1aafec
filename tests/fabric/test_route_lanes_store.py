"""The lanes of stored forwarding tables (SL2VL tables, the SM's path records): kept beside the
tables of their topology snapshot, so that ``routes check --snapshot`` judges credit loops per VL
as the check of the files did; where none were stored it stays in one lane and says why.

The ring is a real lab capture (tests/data/sl2vl/README.md): dfsssp breaks its one-lane loop over
VLs, minhop keeps it on VL 0.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.store import Store, StoreDamaged, route_lanes, schema
from tests.conftest import ROOT
from topology.credit_loops_vl import Lanes
from topology.errors import StoreError
from topology.ibnetdiscover import read_ibnetdiscover
from topology.lft import read_lfts
from topology.sl2vl import parse_path_records, parse_sl2vl

RING = ROOT / "tests" / "data" / "sl2vl"
TOPO = RING / "ibnetdiscover-ring5.txt"


def files(run: str) -> tuple[Path, Path, Path]:
    """(forwarding tables, SL2VL tables, path records) of a real run of the ring."""
    return (
        RING / f"dump_fts-ring5-{run}.txt",
        RING / f"smpquery-sl2vl-ring5-{run}.txt",
        RING / f"saquery-p-ring5-{run}.txt",
    )


def lanes_of(run: str) -> Lanes:
    _, sl2vl, paths = files(run)
    return Lanes(
        parse_sl2vl(sl2vl.read_text(), str(sl2vl)), parse_path_records(paths.read_text(), str(paths))
    )


def stored(path: Path, run: str, lanes: Lanes | None) -> int:
    with Store.open(path) as store:
        sid = store.save_topology(read_ibnetdiscover(TOPO), "ring", "ibnetdiscover", str(TOPO))
        store.save_routes(sid, read_lfts(files(run)[0]), source=run, lanes=lanes)
    return sid


def run_cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout, res.stderr


# -- the store ------------------------------------------------------------------------------
def test_lanes_round_trip_with_their_tables(tmp_path: Path) -> None:
    want = lanes_of("dfsssp")
    sid = stored(tmp_path / "s.db", "dfsssp", want)
    with Store.open(tmp_path / "s.db") as store:
        got = store.load_route_lanes(sid)
        assert store.load_route_lanes(sid + 1) is None
    assert got is not None and got.tables is not None and got.paths is not None
    assert want.tables is not None and want.paths is not None
    for name in ("lid", "in_port", "out_port", "vls"):
        a, b = getattr(got.tables, name), getattr(want.tables, name)
        assert np.array_equal(a, b) and a.dtype == b.dtype, name
    for name in ("slid", "dlid", "sl"):
        a, b = getattr(got.paths, name), getattr(want.paths, name)
        assert np.array_equal(a, b) and a.dtype == b.dtype, name
    assert (got.tables.source, got.tables.format) == (want.tables.source, want.tables.format)
    assert got.tables.nodes == want.tables.nodes  # every row of every port, as parsed
    assert (got.paths.source, got.paths.records) == (want.paths.source, want.paths.records)


def test_lanes_of_one_kind_only_round_trip(tmp_path: Path) -> None:
    whole = lanes_of("minhop")
    sid = stored(tmp_path / "s.db", "minhop", Lanes(whole.tables, None))
    with Store.open(tmp_path / "s.db") as store:
        got = store.load_route_lanes(sid)
    assert whole.tables is not None
    assert got is not None and got.paths is None and got.tables is not None
    assert got.tables.nodes == whole.tables.nodes


def test_opensm_dump_keeps_which_lids_are_switches(tmp_path: Path) -> None:
    dump = RING / "opensm-sl2vl-ring5-dfsssp-qos.dump"
    tables = parse_sl2vl(dump.read_text(), str(dump))
    assert tables.switch_lids  # the OpenSM form says which nodes are switches
    sid = stored(tmp_path / "s.db", "dfsssp", Lanes(tables))
    with Store.open(tmp_path / "s.db") as store:
        got = store.load_route_lanes(sid)
    assert got is not None and got.tables is not None
    assert (got.tables.switch_lids, got.tables.hca_lids) == (tables.switch_lids, tables.hca_lids)


def test_tables_stored_again_without_lanes_lose_the_old_ones(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    sid = stored(path, "dfsssp", lanes_of("dfsssp"))
    with Store.open(path) as store:
        with_lanes = store.routes_stamp(sid)
        store.save_routes(sid, read_lfts(files("dfsssp")[0]), taken_at=with_lanes[0] if with_lanes else 0)
        assert store.load_route_lanes(sid) is None
        assert store.routes_stamp(sid) != with_lanes  # a reader judges them again
        assert store._db.execute("SELECT count(*) FROM route_lanes").fetchone() == (0,)


def test_damaged_lanes_are_refused_not_read(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    sid = stored(path, "dfsssp", lanes_of("dfsssp"))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE route_lanes SET crc = crc + 1")
    with (
        Store.open(path) as store,
        pytest.raises(StoreDamaged, match=r"lanes of the routes.*checksum mismatch"),
    ):
        store.load_route_lanes(sid)


@pytest.mark.parametrize(
    ("table", "meta", "said"),
    [
        ("route_lanes", "[1]", "a JSON list, not an object"),
        ("route_lanes", '{"version": 1, "sl2vl": 3, "paths": null}', "not subscriptable"),
        ("route_lanes", '{"version": 2, "sl2vl": null, "paths": null}', "version 2"),
        ("route_lanes", "not json", "Expecting value"),
        ("route_tables", "[1]", "has no attribute"),
    ],
)
def test_damaged_meta_of_stored_routes_is_one_line_from_the_cli(
    tmp_path: Path, table: str, meta: str, said: str
) -> None:
    """The blob is CRC-checked, its JSON description is not: damage there (still JSON, or not) is
    one line naming the store and the snapshot, never a traceback."""
    path = tmp_path / "s.db"
    stored(path, "dfsssp", lanes_of("dfsssp"))
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE {table} SET meta = ?", (meta,))
    code, out, err = run_cli("routes", "check", "--snapshot", "latest", "--db", str(path))
    assert code != 0 and out == ""
    assert "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert line.startswith("ibfab: error: ") and "topology snapshot 1 do not read back" in line
    assert said in line


def test_lanes_out_of_range_read_back_are_damage(tmp_path: Path) -> None:
    """A VL or SL above 15 would index past the check's 16 lanes: refused as damage on reading."""
    path = tmp_path / "s.db"
    sid = stored(path, "dfsssp", lanes_of("dfsssp"))
    with Store.open(path) as store:
        good = store.load_route_lanes(sid)
    assert good is not None and good.tables is not None and good.paths is not None
    for bad, said in (
        (Lanes(replace(good.tables, vls=good.tables.vls + 16), good.paths), "a VL of"),
        (Lanes(good.tables, replace(good.paths, sl=good.paths.sl + 16)), "an SL of"),
    ):
        meta, data = route_lanes.encode_lanes(bad, "test")
        with pytest.raises(ValueError, match=said):
            route_lanes.decode_lanes(meta, data, "test")
    meta, data = route_lanes.encode_lanes(good, "test")
    again = route_lanes.decode_lanes(meta, data, "test")
    assert again.tables is not None and (again.tables.vls == good.tables.vls).all()


def test_store_check_finds_damaged_lanes_and_repair_sets_only_them_aside(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    sid = stored(path, "dfsssp", lanes_of("dfsssp"))
    with Store.open(path) as store:
        assert store.check() == []  # a clean store with lanes: nothing reported
    with sqlite3.connect(path) as db:
        db.execute("UPDATE route_lanes SET crc = crc + 1")
    with Store.open(path) as store:
        found = store.check()
        assert [(d.kind, d.ref, d.reason) for d in found] == [("route lanes", sid, "checksum mismatch")]
        assert store.set_aside(found) == 1
        assert store.check() == []
        assert store.load_route_lanes(sid) is None and store.load_routes(sid) is not None
        kept = store._db.execute("SELECT kind, ref, reason FROM quarantine").fetchall()
        assert kept == [("route lanes", sid, "checksum mismatch")]


def test_damaged_route_tables_are_set_aside_with_their_lanes(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    sid = stored(path, "dfsssp", lanes_of("dfsssp"))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE route_tables SET crc = crc + 1")
    with Store.open(path) as store:
        found = store.check()
        assert [(d.kind, d.ref) for d in found] == [("route tables", sid)]
        assert store.set_aside(found) == 2
        assert store.check() == [] and not store.has_routes(sid) and store.load_route_lanes(sid) is None
        kept = store._db.execute("SELECT kind, reason FROM quarantine ORDER BY id").fetchall()
        assert kept == [
            ("route lanes", "its route tables: checksum mismatch"),
            ("route tables", "checksum mismatch"),
        ]


def test_lanes_too_large_are_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        sid = store.save_topology(read_ibnetdiscover(TOPO), "ring", "ibnetdiscover", str(TOPO))
    monkeypatch.setattr(route_lanes, "MAX_LANE_BYTES", 1000)
    with Store.open(path) as store, pytest.raises(StoreError, match="MiB as arrays, more than"):
        store.save_routes(sid, read_lfts(files("dfsssp")[0]), lanes=lanes_of("dfsssp"))
    with Store.open(path) as store:
        assert not store.has_routes(sid)


def test_a_version_7_store_is_upgraded_with_its_tables_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    now = schema.MIGRATIONS
    monkeypatch.setattr(schema, "MIGRATIONS", tuple(m for m in now if m.to_version <= 7))
    monkeypatch.setattr(schema, "TABLES", tuple(t for t in schema.TABLES if t != "route_lanes"))
    with Store.open(path) as store:
        sid = store.save_topology(read_ibnetdiscover(TOPO), "ring", "ibnetdiscover", str(TOPO))
        with store._write() as db:  # as version 7 wrote them: no lanes table to touch
            db.execute(
                "INSERT INTO route_tables (snapshot_id, taken_at, source, format, switches, lids, meta,"
                " data, crc) VALUES (?, 1.0, 'x', 'dump_fts', 0, 0, '{}', x'', 0)",
                (sid,),
            )
        assert store.schema_version == 7
    monkeypatch.undo()
    with Store.open(path) as store:
        assert store.schema_version == schema.schema_version() >= 8
        assert store.has_routes(sid) and store.load_route_lanes(sid) is None
        store.save_routes(sid, read_lfts(files("dfsssp")[0]), lanes=lanes_of("dfsssp"))
        assert store.load_route_lanes(sid) is not None


# -- routes --save, routes check --snapshot -------------------------------------------------
def save(db: Path, run: str, *lane_args: str) -> None:
    code, _, err = run_cli(
        "routes", "--db", str(db), "--input", str(TOPO), "--tables", str(files(run)[0]), *lane_args, "--save"
    )
    assert code == 0, err
    assert f"stored the tables{' and their lanes' if lane_args else ''} with topology snapshot" in err


def given(run: str) -> tuple[str, ...]:
    _, sl2vl, paths = files(run)
    return ("--sl2vl", str(sl2vl), "--path-records", str(paths))


def check_snapshot(db: Path, *extra: str) -> tuple[int, dict[str, object]]:
    code, out, err = run_cli("routes", "check", "--db", str(db), "--snapshot", "latest", "--json", *extra)
    assert code in (0, 10), err
    return code, json.loads(out)["credit_loops"]


def test_a_stored_dfsssp_ring_is_clean_per_vl(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    save(db, "dfsssp", *given("dfsssp"))
    code, c = check_snapshot(db)
    assert code == 0 and not c["found"] and c["lanes_known"]
    assert c["vls_used"] == list(range(8))
    lanes = str(c["lanes"])
    assert lanes.startswith("per VL: SL2VL tables from ") and ", stored with topology snapshot 1" in lanes
    assert "smpquery-sl2vl-ring5-dfsssp.txt" in lanes and "saquery-p-ring5-dfsssp.txt" in lanes


def test_a_stored_minhop_ring_holds_the_loop_on_vl0(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    save(db, "minhop", *given("minhop"))
    code, c = check_snapshot(db)
    assert code == 10 and c["found"] and c["lanes_known"]
    assert (c["cycle_vls"], c["vls_used"]) == ([0] * 5, [0])


def test_a_ring_stored_without_lanes_stays_one_lane_and_says_why(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    save(db, "dfsssp")
    code, c = check_snapshot(db)
    assert code == 10 and c["found"] and not c["lanes_known"] and c["cycle_vls"] == []
    assert c["lanes"] == (
        "one lane: no SL2VL tables or path records are stored with topology snapshot 1 (store them "
        "with 'ibfab routes --save' and --lanes, or --sl2vl and --path-records)"
    )
    # the same tables given as a file beside the snapshot: the usual one-lane words, nothing stored
    code, c = check_snapshot(db, "--tables", str(files("dfsssp")[0]))
    assert code == 10 and c["lanes"] == "one lane: the SL of each route and the SL-to-VL tables are not known"


def test_lanes_given_beside_a_snapshot_are_used_instead_of_the_stored(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    save(db, "dfsssp")
    code, c = check_snapshot(db, *given("dfsssp"))
    assert code == 0 and c["lanes_known"] and "stored with" not in str(c["lanes"])


def test_a_snapshots_own_tables_saved_again_keep_their_lanes_other_tables_drop_them(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    save(db, "dfsssp", *given("dfsssp"))
    code, _, err = run_cli("routes", "--db", str(db), "--snapshot", "latest", "--save")
    assert code == 0 and "stored the tables with topology snapshot 1" in err, err
    code, c = check_snapshot(db)
    assert code == 0 and c["lanes_known"]
    # other tables (here minhop's dump) stored with the snapshot: the old lanes are not theirs
    code, _, err = run_cli(
        "routes", "--db", str(db), "--snapshot", "latest", "--tables", str(files("minhop")[0]), "--save"
    )
    assert code == 0, err
    code, c = check_snapshot(db)
    assert (
        code == 10
        and not c["lanes_known"]
        and "no SL2VL tables or path records are stored" in str(c["lanes"])
    )


def test_routes_shows_the_lanes_read(tmp_path: Path) -> None:
    code, out, err = run_cli(
        "routes", "--input", str(TOPO), "--tables", str(files("dfsssp")[0]), *given("dfsssp")
    )
    assert code == 0, err
    assert "  lanes: SL2VL tables from " in out and "(145 rows, 15 LIDs); 210 path records from" in out
    code, out, _ = run_cli(
        "routes", "--input", str(TOPO), "--tables", str(files("dfsssp")[0]), *given("dfsssp"), "--json"
    )
    lanes = json.loads(out)["lanes"]
    assert lanes["sl2vl"]["rows"] == 145 and lanes["path_records"]["records"] == 210
    code, out, _ = run_cli("routes", "--input", str(TOPO), "--tables", str(files("dfsssp")[0]), "--json")
    assert json.loads(out)["lanes"] is None


def test_lane_options_before_the_subcommand_are_refused() -> None:
    code, _, err = run_cli("routes", "--lanes", "check", "--input", str(TOPO))
    assert code == 2 and "give the options after the subcommand" in err
