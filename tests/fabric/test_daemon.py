"""The daemon against real lab fabrics, a real store and a real sshd: runs recorded, failures kept
apart, a clean SIGTERM, and sweep jobs that share hosts never probing one at the same time."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabric.app.daemon.jobs import JobContext
from fabric.app.session import StoreAccess
from fabric.lab import simulator as lab
from fabric.serve.daemon import Daemon
from fabric.store import ProbeResultRow, ProbeSweep, Run, Schedule, Store, default_db_path
from tests.sshd import Sshd, sshd_server
from topology.errors import IbfabError
from topology.generate import generate, to_ibnetdiscover

__all__ = ["sshd_server"]


@pytest.fixture
def running_lab() -> Iterator[str]:
    lab.up("rail-small", (), name="dmn")
    try:
        yield "dmn"
    finally:
        lab.down("dmn")


def _add(name: str, kind: str, every: int, **args: object) -> int:
    with Store.open() as store:
        return store.add_schedule(name, kind, interval_seconds=every, args=args, next_run=time.time())


def _runs(name: str) -> list[Run]:
    with Store.open() as store:
        return list(reversed(store.list_runs(store.schedule(name).id)))


# -- the loop itself (a real store; the job is the boundary) ------------------------------------
def test_a_running_job_is_not_started_twice_and_workers_are_bounded() -> None:
    _add("slow", "counters", 1)
    _add("other", "counters", 1)
    release = threading.Event()
    active: list[str] = []
    most = [0]
    lock = threading.Lock()

    def job(s: Schedule, ctx: JobContext) -> str:
        with lock:
            assert s.name not in active, "started twice"
            active.append(s.name)
            most[0] = max(most[0], len(active))
        release.wait(5)
        with lock:
            active.remove(s.name)
        return f"{s.name} done"

    d = Daemon(StoreAccess(default_db_path()), workers=1, poll_seconds=0.05, runner=job)
    t = threading.Thread(target=d.run, kwargs={"max_runs": 3})
    t.start()
    time.sleep(1.0)  # 'slow' and 'other' are due every pass, but one worker is busy
    with Store.open() as store:
        started = store.list_runs()
    assert len(started) == 1 and started[0].finished is None
    release.set()
    t.join(20)
    assert not t.is_alive()
    assert most[0] == 1
    assert [r.ok for r in d.reports] == [True, True, True]
    with Store.open() as store:
        runs = store.list_runs()
    assert len(runs) == 3 and all(r.finished is not None and r.ok for r in runs)


def test_a_job_that_raises_a_bug_is_recorded_and_the_daemon_goes_on() -> None:
    _add("buggy", "counters", 3600)

    def job(s: Schedule, ctx: JobContext) -> str:
        raise KeyError("port 99")

    reports = Daemon(StoreAccess(default_db_path()), runner=job).run(once=True)
    assert [(r.ok, r.message) for r in reports] == [(False, "KeyError: 'port 99'")]
    (run,) = _runs("buggy")
    assert run.ok is False and run.error == "KeyError: 'port 99'"
    with Store.open() as store:
        s = store.schedule("buggy")
    assert s.last_run == run.started and s.next_run == pytest.approx(run.started + 3600)


def test_once_runs_only_what_is_due() -> None:
    _add("due", "counters", 60)
    with Store.open() as store:
        store.add_schedule("later", "counters", interval_seconds=60, args={}, next_run=time.time() + 600)
        store.add_schedule("off", "counters", interval_seconds=60, args={}, enabled=False, next_run=0)
    reports = Daemon(StoreAccess(default_db_path()), runner=lambda s, c: "fine").run(once=True)
    assert [r.schedule for r in reports] == ["due"]


def test_stop_waits_for_the_grace_then_records_the_job_as_failed() -> None:
    _add("stuck", "counters", 60)
    gate, running = threading.Event(), threading.Event()

    def stuck(schedule: object, ctx: object) -> str:
        running.set()
        return str(gate.wait(60))

    d = Daemon(StoreAccess(default_db_path()), grace_seconds=0.3, poll_seconds=0.05, runner=stuck)
    t = threading.Thread(target=d.run)
    t.start()
    assert running.wait(60)  # the job runs (a deadline: a busy machine only starts it later)
    d.stop()
    t.join(60)
    gate.set()
    assert not t.is_alive()
    (run,) = _runs("stuck")
    assert run.ok is False and "still running (grace 0.3 s)" in (run.error or "")


def test_a_job_past_the_grace_starts_no_new_command(tmp_path: Path) -> None:
    """A job still running when the daemon stops (its tool ended) would go on to the next command
    in the moments before the process exits; it is refused from then on, while commands of other
    threads (not the daemon's jobs) still run."""
    from probes import runner, transport

    _add("loop", "counters", 60)
    marks = tmp_path / "marks"
    stopped, seen = threading.Event(), []

    def job(schedule: object, ctx: object) -> str:
        runner.run(["sleep", "30"], timeout=60, check=False)  # ended by the stop
        stopped.wait(60)
        try:  # the next command of the job, after the stop: never started
            runner.run(["sh", "-c", f"echo started > {marks}"], timeout=10)
        except IbfabError as exc:
            seen.append(exc.one_line())
        return "done"

    d = Daemon(StoreAccess(default_db_path()), grace_seconds=0.3, poll_seconds=0.05, runner=job)
    t = threading.Thread(target=d.run)
    t.start()
    deadline = time.monotonic() + 60  # deadlines, not speeds: a busy machine only waits longer
    while transport.running_count() == 0 and time.monotonic() < deadline:  # its `sleep 30` runs
        time.sleep(0.01)
    d.stop()
    t.join(60)
    stopped.set()
    while not seen and time.monotonic() < deadline + 60:
        time.sleep(0.05)
    assert not t.is_alive()
    assert seen and "not run: ibfab is stopping this job" in seen[0]
    assert not marks.exists()
    (run,) = _runs("loop")
    assert run.ok is False and "1 running tool(s) ended" in (run.error or "")
    assert runner.run(["true"], timeout=10).exit_code == 0  # this thread is not the daemon's job


# -- against a lab ------------------------------------------------------------------------------
@pytest.mark.lab
def test_counters_every_second_stores_one_snapshot_per_run(running_lab: str) -> None:
    _add("c1s", "counters", 1, lab=running_lab)
    t0 = time.time()
    reports = Daemon(StoreAccess(default_db_path()), poll_seconds=0.1).run(max_runs=3)
    assert [r.ok for r in reports] == [True, True, True], [r.message for r in reports]
    with Store.open() as store:
        snaps = store.list_counter_snapshots()
        runs = store.list_runs()
    assert len(snaps) == 3 and all(s.state == "complete" and s.source == f"lab {running_lab}" for s in snaps)
    assert all(s.ports == 256 for s in snaps)  # rail-small: 64 HCA ports + 192 switch ports cabled
    assert len(runs) == 3 and all(r.ok and r.finished is not None for r in runs)
    starts = sorted(r.started for r in runs)
    # One run a second at most: each starts at least 1 s after the previous one started.
    assert all(b - a >= 0.99 for a, b in itertools.pairwise(starts))
    assert starts[0] >= t0
    assert "256 ports read" in reports[0].message


@pytest.mark.lab
def test_a_failing_schedule_records_failures_while_a_healthy_one_keeps_running(running_lab: str) -> None:
    _add("broken", "counters", 1, lab="no-such-lab")
    _add("healthy", "counters", 1, lab=running_lab)
    reports = Daemon(StoreAccess(default_db_path()), poll_seconds=0.1).run(max_runs=6)
    broken, healthy = _runs("broken"), _runs("healthy")
    assert len(broken) >= 2 and len(healthy) >= 2 and len(broken) + len(healthy) == 6
    assert all(r.ok is False and "no-such-lab" in (r.error or "") for r in broken)
    assert all(r.ok is True and r.error is None for r in healthy)
    with Store.open() as store:
        assert len(store.list_counter_snapshots()) == len(healthy)
    assert {r.schedule for r in reports if not r.ok} == {"broken"}


@pytest.mark.lab
def test_sigterm_stops_a_real_daemon_cleanly_with_its_runs_recorded(running_lab: str, tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    with Store.open(db) as store:
        store.add_schedule(
            "c", "counters", interval_seconds=1, args={"lab": running_lab}, next_run=time.time()
        )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from fabric.cli import main; main()",
            "daemon",
            "--db",
            str(db),
            "--grace",
            "30",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            with Store.open(db) as store:
                if any(r.finished is not None for r in store.list_runs()):
                    break
            time.sleep(0.2)
        else:
            pytest.fail("no run finished within 30 s")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "SIGTERM: finishing running jobs" in err and "ibfab daemon: stopped after" in err
    with Store.open(db) as store:
        runs = store.list_runs()
        snaps = store.list_counter_snapshots()
    assert runs and all(r.finished is not None and r.ok for r in runs)  # none left half-recorded
    assert len(snaps) == len(runs)
    assert out.count(" ok (") == len(runs)


@pytest.mark.lab
def test_two_lab_sweeps_sharing_hosts_take_turns_per_round(running_lab: str) -> None:
    _add("sw-a", "sweep", 3600, lab=running_lab, pattern="pairwise", retest=False)
    _add("sw-b", "sweep", 3600, lab=running_lab, pattern="pairwise", retest=False)
    d = Daemon(StoreAccess(default_db_path()))
    reports = d.run(once=True)
    assert sorted((r.schedule, r.ok) for r in reports) == [("sw-a", True), ("sw-b", True)]
    holds = d.activity.holds
    assert {h.job for h in holds} == {"sw-a", "sw-b"}
    # Both jobs probed every one of the 8 hosts, in 7 rounds each, and no host twice at once.
    assert all(len({h.host for h in holds if h.job == j}) == 8 for j in ("sw-a", "sw-b"))
    assert d.activity.overlaps() == []
    with Store.open() as store:
        sweeps = store.list_sweeps()
    assert len(sweeps) == 2 and all(len(store_results) == 224 for store_results in _results(sweeps))


def _results(sweeps: list[ProbeSweep]) -> list[tuple[ProbeResultRow, ...]]:
    with Store.open() as store:
        return [store.load_sweep(s.id).results for s in sweeps]


# -- SSH sweeps: real ib_write_bw over a real sshd (it finds no RDMA device here) ----------------
@pytest.mark.sshd
def test_two_ssh_sweeps_on_the_same_hosts_never_overlap(sshd_server: Sshd, tmp_path: Path) -> None:
    topo = tmp_path / "fabric.topo"
    topo.write_text(to_ibnetdiscover(generate("leafspine:leaves=2,spines=1,hosts=2,radix=40")))
    inventory = tmp_path / "hosts.txt"
    inventory.write_text(
        "".join(
            f"cn{i:04d} address=127.0.0.{i + 1} user={sshd_server.user} port={sshd_server.port}"
            f" key_file={sshd_server.user_key}\n"
            for i in range(1, 5)
        )
    )
    known = sshd_server.write_known_hosts(tmp_path / "known_hosts")
    common = {
        "inventory": str(inventory),
        "known_hosts": str(known),
        "input": str(topo),
        "pattern": "pairwise",
    }
    _add("ssh-a", "sweep", 3600, **common, retest=False, timeout=20)
    _add("ssh-b", "sweep", 3600, **common, retest=False, timeout=20)
    d = Daemon(StoreAccess(default_db_path()))
    t0 = time.time()
    reports = d.run(once=True)
    assert sorted(r.schedule for r in reports) == ["ssh-a", "ssh-b"]
    assert all(r.ok and "6 results, 6 failed" in r.message for r in reports), [r.message for r in reports]
    # Both started in the same pass (at t0), yet the stored sweeps' spans do not intersect:
    with Store.open() as store:
        spans = sorted((s.started, s.finished) for s in store.list_sweeps())
        runs = store.list_runs()
    assert len(spans) == 2 and spans[0][1] is not None and spans[0][1] <= spans[1][0]
    assert all(t0 <= r.started <= spans[0][1] for r in runs)  # both jobs began before one sweep ended
    assert d.activity.overlaps() == []
    assert {h.host for h in d.activity.holds} == {"cn0001", "cn0002", "cn0003", "cn0004"}
