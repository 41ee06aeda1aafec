"""Fan-out over worker processes: the same records as threads, bounded connections, a worker that
dies, host locks held by the parent, and workers that do not outlive a killed parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from probes.fanout import HostLocks, fan_out, fold, worker_count
from probes.inventory import HostEntry
from probes.runner import LocalTransport
from probes.transport import CommandResult, FailureKind

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Local:
    """A transport factory a worker process can receive (a lambda cannot)."""

    crash_on: str = ""  # the worker running this host dies with exit 9

    def __call__(self, entry: HostEntry) -> LocalTransport:
        if entry.name == self.crash_on:
            os._exit(9)
        return LocalTransport(entry.name)


def _argv(entry: HostEntry) -> list[str]:
    if entry.name == "n3":
        return ["sh", "-c", "echo odd; echo warn >&2; exit 2"]
    if entry.name == "n4":
        return ["/nonexistent/tool"]
    return ["echo", "same"]


def _key(r: CommandResult) -> tuple[object, ...]:
    return (r.host, r.argv, r.exit_code, r.stdout, r.stderr, r.failure, r.message)


def test_workers_give_the_same_records_as_threads() -> None:
    hosts = [HostEntry(f"n{i}") for i in (10, 2, 1, 3, 4, 7, 8)]
    threads = fan_out(hosts, _argv, Local(), concurrency=3, timeout=10, workers=1)
    processes = fan_out(hosts, _argv, Local(), concurrency=3, timeout=10, workers=2)
    assert [_key(r) for r in processes] == [_key(r) for r in threads]
    assert [r.host for r in processes] == ["n1", "n2", "n3", "n4", "n7", "n8", "n10"]
    assert [(f.hosts, f.exit_code) for f in fold(processes)] == [
        ("n[1-2,7-8,10]", 0),
        ("n3", 2),
        ("n4", None),
    ]
    assert processes[3].failure is FailureKind.ERROR and "not found" in processes[3].message


def test_workers_hold_at_most_concurrency_commands_at_once() -> None:
    argv = ["sh", "-c", "date +%s.%N; sleep 0.3; date +%s.%N"]
    results = fan_out([HostEntry(f"h{i}") for i in range(9)], argv, Local(), concurrency=3, workers=2)
    assert all(r.ok for r in results)
    spans = [tuple(float(x) for x in r.stdout.split()) for r in results]
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    assert peak == 3


def test_a_worker_that_dies_loses_only_its_hosts() -> None:
    hosts = [HostEntry(f"n{i}") for i in range(1, 7)]
    results = fan_out(hosts, ["echo", "ok"], Local(crash_on="n3"), concurrency=2, workers=2)
    lost = [r for r in results if not r.ok]
    assert [r.host for r in lost] == ["n3"]
    assert lost[0].failure is FailureKind.ERROR
    assert lost[0].message.startswith("worker process ") and "ended (exit 9)" in lost[0].message
    assert [r.stdout for r in results if r.ok] == ["ok\n"] * 5


def test_workers_wait_for_a_host_the_parent_has_locked() -> None:
    locks = HostLocks()
    locks.acquire(["n1"])
    release_at = time.time() + 0.5
    threading.Timer(0.5, locks.release, args=(["n1"],)).start()
    argv = ["date", "+%s.%N"]
    results = fan_out([HostEntry("n1"), HostEntry("n2")], argv, Local(), workers=2, locks=locks)
    started = {r.host: float(r.stdout) for r in results}
    assert started["n2"] < release_at <= started["n1"]
    assert locks.busy() == frozenset()


def test_workers_end_when_their_parent_is_killed(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        from probes.fanout import fan_out
        from probes.inventory import HostEntry
        from tests.probes.test_fanout_workers import Local
        fan_out([HostEntry(f"h{i}") for i in range(4)], ["sleep", "5"], Local(), workers=2)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", script], env=env, cwd=ROOT)
    started = time.monotonic()
    try:
        workers: list[int] = []
        while len(workers) < 2 and time.monotonic() - started < 10:
            time.sleep(0.05)
            children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children").read_text().split()
            workers = [int(c) for c in children]
        assert len(workers) == 2
        time.sleep(0.5)  # the workers have their hosts
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 3  # well before their `sleep 5` would end
        while any(_running(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [w for w in workers if _running(w)]
        assert left == [], f"workers still running after their parent died: {left}"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        time.sleep(max(0.0, 5.5 - (time.monotonic() - started)))  # their `sleep 5`s have ended


def _running(pid: int) -> bool:
    """``pid`` exists and is not a zombie (an orphan waits for init to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


@pytest.mark.parametrize(
    ("hosts", "concurrency", "workers", "expected"),
    [(8, 16, None, 1), (10, 16, 4, 4), (10, 2, 4, 2), (3, 16, 8, 3)],
)
def test_worker_count(hosts: int, concurrency: int, workers: int | None, expected: int) -> None:
    assert worker_count(hosts, concurrency, workers) == expected
