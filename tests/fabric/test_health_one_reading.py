"""``ibfab health`` over a single counter reading says that rates need two readings, names the
reading (time, source) and how to get another, instead of "every link is ok": the real NDR
ibdiagnet run imported alone, one collection, one reading in the window with more outside it;
two or more readings say nothing of the kind."""

from __future__ import annotations

import json
import time
from pathlib import Path

from click.testing import CliRunner

from fabric.app.discovery.ibdiagnet import import_ibdiagnet_run
from fabric.app.session import StoreAccess
from fabric.cli.main import main
from fabric.present.overview import when
from fabric.store import Store
from tests.conftest import REALDATA
from tests.tui_data import counter_rows
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover

IBDIAG_DIR = REALDATA / "ibdiagnet"
RUN_TIME = "2025-03-31 23:43:18 UTC"  # the run's own time (db_csv)


def health(db: Path, *args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, ["health", "--db", str(db), "--no-record", *args])
    return res.exit_code, res.stdout, res.stderr


def test_one_ibdiagnet_run_says_rates_need_a_second_run(tmp_path: Path) -> None:
    db = tmp_path / "ibfab.db"
    run = import_ibdiagnet_run(StoreAccess(db), IBDIAG_DIR)
    code, out, err = health(db, "--since", "all")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == (
        f"One counter reading only: snapshot {run.counter_snapshot_id} at {RUN_TIME} from {run.source}."
    )
    assert lines[1].startswith("Error and traffic rates need two readings")
    assert (
        lines[2]
        == "For a second reading: run ibdiagnet again, then `ibfab counters collect --ibdiagnet DIR`."
    )
    assert "every link is ok" not in out and " ok," not in out
    code, text, _ = health(db, "--since", "all", "--json")
    doc = json.loads(text)
    assert doc["one_reading"] == {
        "snapshot_id": run.counter_snapshot_id,
        "taken_at": run.taken_at,
        "source": run.source,
        "ibdiagnet": True,
        "readings_outside_the_window": 0,
    }
    assert (
        f"{len(doc['links'])} links, 1 reading (topology {run.topology_id}): none judged on rates yet" in out
    )
    # the default window (the last day) holds nothing of a run from 2025: say where it is
    code, out, err = health(db)
    assert (
        code != 0
        and f"the newest is snapshot {run.counter_snapshot_id} at {RUN_TIME} (--since all reads it)" in err
    )


def collections_store(path: Path, readings: int, start: float) -> Path:
    """``readings`` collections an hour apart from ``start``, of a small generated fabric."""
    text = to_ibnetdiscover(generate("leafspine:leaves=2,spines=2,hosts=2,radix=40,speed=HDR"))
    fabric = parse_ibnetdiscover(text.splitlines(), "generated")
    with Store.open(path) as store:
        topo = store.save_topology(fabric, text, "ibnetdiscover", "generated", taken_at=start - 10)
        for i in range(readings):
            when = start + i * 3600
            store.save_counter_snapshot(when, "perfquery", topo, counter_rows(fabric, when, i, {}))
    return path


def test_one_collection_says_collect_again_and_a_narrow_window_says_widen_it(tmp_path: Path) -> None:
    start = float(int(time.time()) - 3 * 3600 + 600)  # readings 2 h 50, 1 h 50 and 50 min ago
    db = collections_store(tmp_path / "one.db", 1, start)
    code, out, err = health(db, "--since", "all")
    assert code == 0, err
    assert out.startswith(f"One counter reading only: snapshot 1 at {when(start)} from perfquery.")
    assert "For a second reading: run `ibfab counters collect` again" in out
    db = collections_store(tmp_path / "three.db", 3, start)
    code, text, _ = health(db, "--since", "all", "--json")
    assert code == 0 and json.loads(text)["one_reading"] is None
    code, out, _ = health(db, "--since", "all")
    assert "One counter reading" not in out and "3 snapshots" in out
    # the last hour holds the newest reading only: the other two are outside the window
    code, out, _ = health(db, "--since", "1h")
    assert out.startswith("One counter reading only: snapshot 3 at ")
    assert "For a second reading: widen the window: --since all (2 more readings stored)." in out


def test_two_readings_say_nothing_of_it(tmp_path: Path) -> None:
    db = collections_store(tmp_path / "two.db", 2, float(int(time.time()) - 2 * 3600))
    code, out, err = health(db, "--since", "all")
    assert code == 0, err
    assert "One counter reading" not in out and "2 snapshots" in out and "every link is ok" in out
