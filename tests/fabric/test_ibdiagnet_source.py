"""An ibdiagnet run as a source: ``--ibdiagnet DIR`` for the commands that read a fabric, and
``ibfab counters collect --ibdiagnet DIR`` storing the run's port counters as a counter snapshot
(PM_INFO of the db_csv, else ibdiagnet2.pm), on the real NDR run in tests/data/realdata."""

from __future__ import annotations

import csv
import io
import json
import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.counters.parse import read_ibdiagnet_pm
from fabric.store import Store
from tests.conftest import REALDATA, realdata_files
from topology.model import Guid

IBDIAG_DIR = REALDATA / "ibdiagnet"
DB_CSV = IBDIAG_DIR / "garyli-ndr-272nodes-ibdiagnet2.db_csv"
PM = IBDIAG_DIR / "garyli-ndr-272nodes-ibdiagnet2.pm"
CABLES = IBDIAG_DIR / "garyli-ndr-272nodes-ibdiagnet2.cables"
CAPTURE = REALDATA / "ibnetdiscover" / "garyli-ibdiagnet2-ndr-272nodes-label-ports.txt"
RUN_TIME = 1743464598.0  # RUN_INFO: 2025-03-31 23:43:18 UTC +0000


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout, res.stderr


def without_section(text: str, name: str) -> str:
    return re.sub(rf"START_{name}\n.*?END_{name}\n", "", text, flags=re.S)


@pytest.mark.parametrize(
    "command",
    [["export", "hostfile"], ["export", "slurm-topology"], ["place", "--nodes", "8", "--format", "slurm"]],
)
def test_ibdiagnet_dir_is_a_source_like_the_capture_of_the_same_run(command: list[str]) -> None:
    code, from_run, err = run(*command, "--ibdiagnet", str(IBDIAG_DIR))
    assert code == 0, err
    code, from_capture, _ = run(*command, "--input", str(CAPTURE))
    # The same document, but for the header line that names the file it was written from.
    assert code == 0 and from_run.replace(str(DB_CSV), "F") == from_capture.replace(str(CAPTURE), "F")


def test_counters_of_the_run_are_stored_as_one_snapshot(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    code, out, err = run("counters", "collect", "--ibdiagnet", str(IBDIAG_DIR), "--db", db, "--json")
    assert code == 0, err
    stored = json.loads(out)
    assert stored["ports_read"] == 542 and stored["already_stored"] is False
    assert stored["taken_at"] == RUN_TIME and stored["time_from"] == "run"
    assert stored["counters_from"] == str(DB_CSV) and stored["topology_saved"] is True
    expected = {(s.guid, s.port): dict(s.values) for s in read_ibdiagnet_pm(str(DB_CSV))}
    with Store.open(db) as store:
        [info] = store.list_counter_snapshots()
        assert (info.id, info.taken_at, info.topology_id, info.ports) == (1, RUN_TIME, 1, 542)
        rows = store.load_port_counters(info.id)
        topology = store.load_topology(1)
        [capture] = store.snapshot_captures(info.id)
    assert topology.summary.taken_at == RUN_TIME and topology.summary.links == 271
    assert (capture.tool, capture.parser_version) == ("ibdiagnet", "ibdiagnet-pm/1")
    assert {(r.guid, r.port): dict(r.counters) for r in rows} == expected
    # Every port carries its cable's far end, from the run's LINKS.
    peers = {(lk.a.guid, lk.a.port): lk.b for lk in topology.fabric.links}
    peers |= {(lk.b.guid, lk.b.port): lk.a for lk in topology.fabric.links}
    assert all((r.peer_guid, r.peer_port) == tuple(peers[(Guid(r.guid), r.port)]) for r in rows)
    # The same run again stores nothing.
    code, out, _ = run("counters", "collect", "--ibdiagnet", str(IBDIAG_DIR), "--db", db)
    assert code == 0 and out.startswith("already stored: snapshot 1 (542 ports)")
    with Store.open(db) as store:
        assert len(store.list_counter_snapshots()) == 1 and len(store.list_topologies()) == 1


def test_same_cabling_reuses_the_stored_topology(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    assert run("discover", "--input", str(CAPTURE), "--save", "--db", db)[0] == 0
    code, out, _ = run("counters", "collect", "--ibdiagnet", str(DB_CSV), "--db", db)
    assert code == 0
    assert "snapshot 1: 542 ports read by ibdiagnet at " in out and "topology 1 (same cabling)" in out
    with Store.open(db) as store:
        assert len(store.list_topologies()) == 1
        assert store.list_counter_snapshots()[0].topology_id == 1


def test_pm_file_when_the_db_csv_has_no_pm_info(tmp_path: Path) -> None:
    text = without_section(DB_CSV.read_text(), "PM_INFO")
    assert "START_PM_INFO" not in text
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "ibdiagnet2.db_csv").write_text(text)
    (tmp_path / "run" / "ibdiagnet2.pm").write_text(PM.read_text())
    db = str(tmp_path / "s.db")
    code, out, err = run("counters", "collect", "--ibdiagnet", str(tmp_path / "run"), "--db", db, "--json")
    assert code == 0, err
    stored = json.loads(out)
    assert stored["counters_from"].endswith("ibdiagnet2.pm") and stored["ports_read"] == 542
    expected = {(s.guid, s.port): dict(s.values) for s in read_ibdiagnet_pm(str(PM))}
    with Store.open(db) as store:
        rows = store.load_port_counters(stored["snapshot_id"])
    assert {(r.guid, r.port): dict(r.counters) for r in rows} == expected
    # Without either, the run read no counters: one line, nothing stored.
    (tmp_path / "run" / "ibdiagnet2.pm").unlink()
    code, out, err = run("counters", "collect", "--ibdiagnet", str(tmp_path / "run"), "--db", db)
    assert code == 2 and out == "" and err.count("\n") == 1 and "read no port counters" in err
    with Store.open(db) as store:
        assert len(store.list_counter_snapshots()) == 1


def test_a_run_that_does_not_say_when_takes_the_file_time(tmp_path: Path) -> None:
    path = tmp_path / "x-ibdiagnet2.db_csv"
    path.write_text(without_section(DB_CSV.read_text(), "RUN_INFO"))
    db = str(tmp_path / "s.db")
    code, out, _ = run("counters", "collect", "--ibdiagnet", str(path), "--db", db, "--json")
    stored = json.loads(out)
    assert code == 0 and stored["time_from"] == "file" and stored["taken_at"] == path.stat().st_mtime
    code, out, _ = run("counters", "collect", "--ibdiagnet", str(path), "--db", db)
    assert code == 0 and "the file's time" in out


def test_ibdiagnet_counters_refuse_other_sources_and_a_schedule(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    for extra in (["--lab", "x"], ["--every", "5m"], ["--count", "2"]):
        code, _, err = run("counters", "collect", "--ibdiagnet", str(IBDIAG_DIR), "--db", db, *extra)
        assert code == 2 and err.startswith("ibfab: error: "), extra


@pytest.mark.parametrize("path", realdata_files("ibdiagnet"), ids=lambda p: p.name)
def test_every_real_ibdiagnet_file_as_a_source(path: Path) -> None:
    """The db_csv is read (with the run's other files beside it); any other file of a run is
    refused in one line naming it."""
    code, out, err = run("export", "hostfile", "--ibdiagnet", str(path))
    if path.name.endswith(".db_csv"):
        assert code == 0 and out.count(" slots=8\n") == 32, err  # 8 rail HCAs a host: 8 GPUs
        return
    assert code == 2 and out == ""
    assert err == f"ibfab: error: {path}: not an ibdiagnet2.db_csv file\n"


def shuffled_crlf(text: str, seed: int) -> str:
    """Every db_csv table with its columns in another order and an extra column, CRLF line ends."""
    rng = random.Random(seed)
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        out.append(lines[i])
        if lines[i].startswith("START_"):
            j = lines.index(f"END_{lines[i][6:]}", i)
            rows = list(csv.reader(lines[i + 1 : j]))
            if rows:
                order = list(range(len(rows[0])))
                rng.shuffle(order)
                rows = [
                    [*(r[k] for k in order if k < len(r)), "x" if n else "Extra"] for n, r in enumerate(rows)
                ]
                buf = io.StringIO()
                csv.writer(buf, lineterminator="\n").writerows(rows)
                out += buf.getvalue().splitlines()
            i = j
            continue
        i += 1
    return "\r\n".join(out) + "\r\n"


@pytest.mark.parametrize("seed", [1, 2])
def test_a_transformed_run_stores_the_same(tmp_path: Path, seed: int) -> None:
    """Columns reordered, an extra column and CRLF in the db_csv, CRLF in .cables: the same
    counters, run time, cabling and inventory are stored."""
    stored = {}
    for name, db_csv, cables in (
        ("real", DB_CSV.read_text(), CABLES.read_text()),
        ("moved", shuffled_crlf(DB_CSV.read_text(), seed), CABLES.read_text().replace("\n", "\r\n")),
    ):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "ibdiagnet2.db_csv").write_bytes(db_csv.encode())
        (folder / "ibdiagnet2.cables").write_bytes(cables.encode())
        db = str(tmp_path / f"{name}.db")
        code, out, err = run("counters", "collect", "--ibdiagnet", str(folder), "--db", db, "--json")
        assert code == 0, err
        doc = json.loads(out)
        with Store.open(db) as store:
            rows = {(r.guid, r.port): dict(r.counters) for r in store.load_port_counters(doc["snapshot_id"])}
            topo = store.load_topology("latest").fabric
        code, cable, _ = run("topology", "cable", "is-north-7-compute-1 mlx5_0/1", "--db", db, "--json")
        assert code == 0
        stored[name] = (
            doc["taken_at"],
            doc["ports_read"],
            doc["modules"],
            rows,
            topo.links,
            json.loads(cable),
        )
    real, moved = stored["real"], stored["moved"]
    assert real[:3] == (RUN_TIME, 542, 510) and moved[:5] == real[:5]
    assert {k: v for k, v in moved[5].items() if k != "inventory"} == {
        k: v for k, v in real[5].items() if k != "inventory"
    }
