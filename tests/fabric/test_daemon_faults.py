"""Real ``ibfab daemon`` processes under faults: a busy store, a second daemon on the same store,
SIGTERM while a tool runs. Every daemon is started here as a subprocess and stopped by its PID."""

from __future__ import annotations

import itertools
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fabric.store import Run, Store

# The store's busy timeout is 30 s; the busy test holds the lock for seconds, not minutes, so its
# daemon runs with a 1 s timeout (the constant is read when the store is opened).
_SHORT_BUSY = "import fabric.store.core as c; c.BUSY_TIMEOUT_SECONDS = 1.0; "
_MAIN = "from fabric.cli import main; main()"


def _daemon(
    db: Path, *extra: str, prelude: str = "", env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    argv = [sys.executable, "-c", prelude + _MAIN, "daemon", "--db", str(db), *extra]
    return subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _stop(proc: subprocess.Popen[str], timeout: float = 30) -> tuple[str, str]:
    """SIGTERM by PID, then the output; SIGKILL only if it does not stop."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise


def _until(what: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            pytest.fail("condition not reached in time")
        time.sleep(0.1)


def _runs(db: Path) -> list[Run]:
    with Store.open(db) as store:
        return sorted(store.list_runs(limit=1000), key=lambda r: r.started)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    db = tmp_path / "ibfab.db"
    with Store.open(db) as s:  # a job that fails at once, without touching the store or a tool
        s.add_schedule("c", "counters", interval_seconds=1, args={"lab": "absent"}, next_run=time.time())
    yield db


def test_a_second_daemon_names_the_first_ones_pid_and_exits(store: Path) -> None:
    first = _daemon(store)
    lock = store.with_name(store.name + ".daemon.lock")
    try:
        _until(lambda: lock.exists() and lock.read_text().strip() == str(first.pid))
        second = subprocess.run(
            [sys.executable, "-c", _MAIN, "daemon", "--db", str(store), "--once"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 5
        assert second.stderr == (
            f"ibfab: error: {store}: another ibfab daemon (PID {first.pid}) already runs this store's"
            " schedules; stop it first, or give this one another --db\n"
        )
        assert first.poll() is None  # the first one is untouched
    finally:
        _, err = _stop(first)
    assert first.returncode == 0, err
    # runs happened once per slot: every run is the first daemon's (one second apart at most once)
    starts = [r.started for r in _runs(store)]
    assert starts and all(b - a >= 0.99 for a, b in itertools.pairwise(starts))
    # the lock died with the daemon: the next one starts
    third = subprocess.run(
        [sys.executable, "-c", _MAIN, "daemon", "--db", str(store), "--once"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert third.returncode == 0, third.stderr


def test_a_busy_store_is_a_failed_run_and_the_daemon_goes_on(store: Path) -> None:
    proc = _daemon(store, prelude=_SHORT_BUSY)
    try:
        _until(lambda: len(_runs(store)) >= 1)
        holder = sqlite3.connect(store, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock for 4 s
        held_from = time.time()
        time.sleep(4.0)
        holder.execute("ROLLBACK")
        holder.close()
        held_to = time.time()
        assert proc.poll() is None  # it never exits for a busy store
        _until(lambda: any(r.started > held_to + 1 for r in _runs(store)))  # and runs again after
    finally:
        out, err = _stop(proc)
    assert proc.returncode == 0, err
    runs = _runs(store)
    busy = [r for r in runs if "store busy" in (r.error or "")]
    assert busy, [r.error for r in runs]
    assert all(r.ok is False and r.error and r.error.startswith("not run: ") for r in busy)
    assert all(held_from - 1 <= r.started <= held_to for r in busy)  # the slots missed while held
    # one slot per second at most, the missed ones included: retried at the next slot, not in a loop
    starts = [r.started for r in runs]
    assert all(b - a >= 0.99 for a, b in itertools.pairwise(starts))
    assert "slot missed, the store is busy" in err
    other = [r for r in runs if r not in busy]
    assert other and all("no lab named 'absent'" in (r.error or "") for r in other)
    assert all(r.finished is not None for r in runs)  # nothing left half-recorded
    assert out.count("FAILED") == len(runs)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_sigterm_ends_the_running_tool_with_its_children(tmp_path: Path) -> None:
    # ibnetdiscover cannot run here (no InfiniBand device); a stand-in with the same name starts a
    # child of its own and hangs, as a tool stuck on a dead fabric does.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "ibnetdiscover"
    tool.write_text(
        f"#!/bin/sh\nsleep 600 &\necho $! > {tmp_path}/child.pid\necho $$ > {tmp_path}/tool.pid\nwait\n"
    )
    tool.chmod(0o755)
    db = tmp_path / "ibfab.db"
    with Store.open(db) as s:
        s.add_schedule("local", "counters", interval_seconds=3600, args={}, next_run=time.time())
    proc = _daemon(db, "--grace", "1", env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    try:
        _until(lambda: (tmp_path / "child.pid").exists() and (tmp_path / "tool.pid").exists())
        time.sleep(0.2)
        pids = [int((tmp_path / n).read_text()) for n in ("tool.pid", "child.pid")]
        assert all(_alive(p) for p in pids)
    finally:
        _out, err = _stop(proc)
    assert proc.returncode == 0, err
    _until(lambda: not any(_alive(p) for p in pids), 60)  # the tool and its child: gone
    [run] = _runs(db)
    assert run.ok is False and run.error is not None
    assert "daemon stopped while the job was still running (grace 1 s)" in run.error
    assert "1 running tool(s) ended with their process groups" in run.error


def test_a_second_sigterm_ends_the_tool_without_waiting_for_the_grace(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "ibnetdiscover"
    tool.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/tool.pid\nexec sleep 600\n")
    tool.chmod(0o755)
    db = tmp_path / "ibfab.db"
    with Store.open(db) as s:
        s.add_schedule("local", "counters", interval_seconds=3600, args={}, next_run=time.time())
    proc = _daemon(db, "--grace", "600", env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    try:
        _until(lambda: (tmp_path / "tool.pid").exists())
        pid = int((tmp_path / "tool.pid").read_text())
        os.kill(proc.pid, signal.SIGTERM)
        time.sleep(0.5)
        assert proc.poll() is None and _alive(pid)  # waiting for the job, as the grace says
        started = time.monotonic()
    finally:
        _out, err = _stop(proc)
    assert proc.returncode == 0, err
    assert time.monotonic() - started < 300  # a deadline: not the grace's 600 s
    assert "SIGTERM again: ending running jobs now" in err
    _until(lambda: not _alive(pid), 60)
