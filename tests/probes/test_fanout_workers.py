"""Fan-out over worker processes: the same records as threads, bounded connections, a worker that
dies, host locks held by the parent, and workers that do not outlive a killed parent."""

from __future__ import annotations

import contextlib
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


# A command that says how many commands run at once as it starts (each marks a directory while it
# runs), and the first ones wait until three run together (a rendezvous, not a sleep: a slow
# machine only makes them wait longer).
_TOGETHER = """
import os, sys, time
runs, met = sys.argv[1], sys.argv[2]
mine = os.path.join(runs, str(os.getpid()))
open(mine, "w").close()
print(len(os.listdir(runs)))
deadline = time.monotonic() + 60
while not os.path.exists(met) and time.monotonic() < deadline:
    if len(os.listdir(runs)) >= 3:
        open(met, "w").close()
    time.sleep(0.01)
os.remove(mine)
"""


def test_workers_hold_at_most_concurrency_commands_at_once(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    argv = [sys.executable, "-c", _TOGETHER, str(runs), str(tmp_path / "met")]
    results = fan_out(
        [HostEntry(f"h{i}") for i in range(9)], argv, Local(), concurrency=3, workers=2, timeout=120
    )
    assert all(r.ok for r in results), [r.message or r.stderr for r in results if not r.ok]
    assert (tmp_path / "met").exists()  # three ran at once
    assert max(int(r.stdout) for r in results) == 3  # and never more


def test_a_worker_that_dies_loses_only_its_hosts() -> None:
    hosts = [HostEntry(f"n{i}") for i in range(1, 7)]
    results = fan_out(hosts, ["echo", "ok"], Local(crash_on="n3"), concurrency=2, workers=2)
    lost = [r for r in results if not r.ok]
    assert [r.host for r in lost] == ["n3"]
    assert lost[0].failure is FailureKind.ERROR
    assert lost[0].message.startswith("worker process ") and "ended (exit 9)" in lost[0].message
    assert [r.stdout for r in results if r.ok] == ["ok\n"] * 5


def test_workers_wait_for_a_host_the_parent_has_locked(tmp_path: Path) -> None:
    """n1 is locked by the parent until n2's command has run: n1 runs after, never before."""
    locks = HostLocks()
    locks.acquire(["n1"])
    released = tmp_path / "released"

    def release_once_n2_ran() -> None:
        deadline = time.monotonic() + 60  # a deadline, not a speed
        while not (tmp_path / "n2").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        released.touch()
        locks.release(["n1"])

    def argv(entry: HostEntry) -> list[str]:  # each host says whether the parent had let n1 go
        return [
            "sh",
            "-c",
            f"if [ -e {released} ]; then echo after; else echo before; fi > {tmp_path / entry.name}",
        ]

    releaser = threading.Thread(target=release_once_n2_ran)
    releaser.start()
    fan_out([HostEntry("n1"), HostEntry("n2")], argv, Local(), workers=2, locks=locks, timeout=60)
    releaser.join(60)
    assert (tmp_path / "n2").read_text() == "before\n"  # n2 was not held up by n1's lock
    assert (tmp_path / "n1").read_text() == "after\n"
    assert locks.busy() == frozenset()


def test_workers_end_when_their_parent_is_killed(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        from probes.fanout import fan_out
        from probes.inventory import HostEntry
        from tests.probes.test_fanout_workers import Local
        fan_out([HostEntry(f"h{i}") for i in range(4)], ["sleep", "300"], Local(), workers=2)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", script], env=env, cwd=ROOT)
    commands: list[int] = []
    try:
        deadline = time.monotonic() + 60  # deadlines, not speeds: a busy machine only waits longer
        workers: list[int] = []
        while len(commands) < 4 and time.monotonic() < deadline:  # each worker runs its two hosts
            time.sleep(0.05)
            workers = _children(parent.pid)
            commands = [c for w in workers for c in _children(w)]
        assert len(workers) == 2 and len(commands) == 4
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        while any(_running(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [w for w in workers if _running(w)]
        assert left == [], f"workers still running after their parent died: {left}"  # not after 300 s
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for pid in commands:  # the `sleep 300`s this test started, by PID
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _children(pid: int) -> list[int]:
    """``pid``'s child processes, started from any of its threads."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


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
