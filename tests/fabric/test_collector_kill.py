"""SIGKILL the collector loop at random moments: the store stays whole and the next run works."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.lab import simulator as lab
from fabric.store import Store

SPEC = "leafspine:leaves=2,spines=2,hosts=2"
CABLED_PORTS = 16
IBFAB = [sys.executable, "-c", "from fabric.cli import main; main()"]


@pytest.fixture
def lab_name() -> Iterator[str]:
    lab.up(SPEC, name="kill")
    try:
        yield "kill"
    finally:
        lab.down("kill")


def _snapshot_count(db: Path) -> int:
    if not db.exists():
        return 0
    con = sqlite3.connect(db, timeout=30)
    try:
        return int(con.execute("SELECT count(*) FROM counter_snapshots").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


@pytest.mark.lab
@pytest.mark.slow
def test_sigkill_at_random_moments_leaves_only_complete_snapshots(lab_name: str, tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    rng = random.Random(7)
    argv = [*IBFAB, "counters", "collect", "--lab", lab_name, "--every", "0.2s", "--db", str(db)]
    kills = 0
    for _ in range(6):
        before = _snapshot_count(db)
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            # wait for the first snapshot of this run (imports + discovery), then a random moment
            deadline = time.monotonic() + 30
            while _snapshot_count(db) <= before and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 0.6))
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            proc.send_signal(signal.SIGKILL)
            kills += 1
        finally:
            proc.kill()
            proc.wait()
            if proc.stderr:
                proc.stderr.close()
    assert kills == 6

    with Store.open(db) as store:
        assert store.integrity_check() == "ok"
        snaps = store.list_counter_snapshots()
        assert len(snaps) >= 6
        for snap in snaps:
            rows = store.load_port_counters(snap.id)
            assert snap.ports == len(rows) == CABLED_PORTS
            assert all(r.reachable for r in rows)
            assert snap.topology_id == 1
        assert len(store.list_topologies()) == 1
    con = sqlite3.connect(db)
    try:
        # nothing half-written is left behind, not even invisible to the loaders
        assert (
            con.execute("SELECT count(*) FROM counter_snapshots WHERE state != 'complete'").fetchone()[0] == 0
        )
        orphans = con.execute(
            "SELECT count(*) FROM counter_blocks WHERE snapshot_id NOT IN (SELECT id FROM counter_snapshots)"
        ).fetchone()[0]
        assert orphans == 0
    finally:
        con.close()

    res = CliRunner().invoke(
        main, ["counters", "collect", "--lab", lab_name, "--count", "1", "--db", str(db)]
    )
    assert res.exit_code == 0, res.stderr
    assert f"{CABLED_PORTS} ports read, 0 unreachable" in res.stdout
    with Store.open(db) as store:
        assert len(store.list_counter_snapshots()) == len(snaps) + 1
