"""Runs of a process killed by SIGKILL (issue 30 item 5): a run records its process (PID and an
identity that a reused PID cannot share); the next daemon start, collection or `ibfab store
check` closes every open run whose process is gone as killed, and leaves alone what it cannot
judge (a live process, another host's run, a run an older ibfab recorded without its process)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli import main
from fabric.core.processes import process_alive, process_identity
from fabric.store import Run, Store

_MAIN = "from fabric.cli import main; main()"


def _until(what: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            pytest.fail("condition not reached in time")
        time.sleep(0.1)


def _runs(db: Path) -> list[Run]:
    with Store.open(db) as store:
        return sorted(store.list_runs(limit=1000), key=lambda r: r.id)


def _open_runs(db: Path) -> list[Run]:
    return [r for r in _runs(db) if r.finished is None]


def _set_process(db: Path, run_id: int, pid: int | None, process: str | None) -> None:
    with sqlite3.connect(db) as con:
        con.execute("UPDATE runs SET pid = ?, process = ? WHERE id = ?", (pid, process, run_id))


def test_a_sigkilled_daemons_runs_are_closed_as_killed_when_the_next_one_starts(tmp_path: Path) -> None:
    """The reproduction: a daemon killed while its job runs leaves the run open (the issue saw 8
    after 40 kills); each next daemon start closes the ones before as killed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "ibnetdiscover"  # a stand-in that hangs, as a tool on a dead fabric does
    tool.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/tool.pid\nexec sleep 600\n")
    tool.chmod(0o755)
    db = tmp_path / "ibfab.db"
    with Store.open(db) as s:
        schedule = s.add_schedule("local", "counters", interval_seconds=3600, args={}, next_run=time.time())
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    argv = [sys.executable, "-c", _MAIN, "daemon", "--db", str(db)]
    for kill in range(3):
        with Store.open(db) as s:
            s.update_schedule(schedule, next_run=time.time())
        (tmp_path / "tool.pid").unlink(missing_ok=True)
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            started = kill + 1

            def running(n: int = started) -> bool:
                return (tmp_path / "tool.pid").exists() and len(_runs(db)) == n

            _until(running)
            # this daemon closed the run the one before it left open
            assert [r.id for r in _open_runs(db)] == [_runs(db)[-1].id]
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            if (tmp_path / "tool.pid").exists():
                os.kill(int((tmp_path / "tool.pid").read_text()), signal.SIGKILL)
    assert len(_open_runs(db)) == 1  # the last one killed
    with Store.open(db) as s:
        s.update_schedule(schedule, next_run=time.time() + 3600)  # nothing due: the start alone
    done = subprocess.run([*argv, "--once"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    runs = _runs(db)
    assert len(runs) == 3 and not _open_runs(db)
    for run in runs:
        assert run.ok is False and run.error is not None and run.error.startswith("killed: its process (PID ")


def test_store_check_closes_the_runs_of_dead_processes_and_only_those(tmp_path: Path) -> None:
    db = tmp_path / "ibfab.db"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        with Store.open(db) as s:
            mine = s.start_run(None)  # this process: alive
            gone = s.start_run(None)
            reused = s.start_run(None)
            other_host = s.start_run(None)
            old = s.start_run(None)
            finished = s.start_run(None)
            s.finish_run(finished, True)
        _set_process(db, gone, dead.pid, process_identity().rsplit("/", 1)[0] + "/1")  # PID of a dead one
        # a live PID whose start time is not the one recorded: the PID was reused
        stale = process_identity(sleeper.pid).rsplit("/", 1)[0] + "/1"
        _set_process(db, reused, sleeper.pid, stale)
        _set_process(db, other_host, dead.pid, "another-host/boot/123")
        _set_process(db, old, None, None)  # recorded by an ibfab before runs named their process
        assert process_alive(sleeper.pid, process_identity(sleeper.pid)) is True
        assert process_alive(sleeper.pid, stale) is False
        res = CliRunner().invoke(main, ["store", "check", "--db", str(db)])
        assert res.exit_code == 0, res.output
        assert "2 run(s) of processes that were killed closed as killed" in res.stdout
        by_id = {r.id: r for r in _runs(db)}
        assert by_id[gone].ok is False and (by_id[gone].error or "").startswith("killed")
        assert by_id[reused].finished is not None and by_id[reused].ok is False
        assert by_id[mine].finished is None  # alive: left open
        assert by_id[other_host].finished is None  # nothing here can tell
        assert by_id[old].finished is None
        assert by_id[finished].ok is True
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_next_collection_closes_a_killed_collectors_run(tmp_path: Path) -> None:
    db = tmp_path / "ibfab.db"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from fabric.store import Store; s = Store.open(sys.argv[1]);"
            " s.start_run(None); print('started', flush=True); time.sleep(600)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "started"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert len(_open_runs(db)) == 1
    empty = tmp_path / "empty-bin"
    empty.mkdir()  # no ibnetdiscover here: the collection itself fails, after the check
    res = CliRunner().invoke(
        main, ["counters", "collect", "--count", "1", "--db", str(db)], env={"PATH": str(empty)}
    )
    assert "Traceback" not in res.output
    runs = _runs(db)
    assert len(runs) == 2 and not _open_runs(db)
    assert runs[0].error is not None and runs[0].error.startswith("killed: its process")
