"""Host locks across processes: a host another real process holds is refused with its holder named,
waited for within a bound, taken all-or-nothing, and free again when the holder dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from probes.hostlocks import HostBusy, HostLocks

ROOT = Path(__file__).resolve().parents[2]

HOLDER = """
import sys, time
from probes.hostlocks import HostLocks
locks = HostLocks(sys.argv[1])
locks.acquire(sys.argv[2].split(","), why="schedule nightly")
print("held", flush=True)
if sys.argv[3] == "until-told":
    sys.stdin.readline()
else:
    time.sleep(float(sys.argv[3]))
locks.release(sys.argv[2].split(","))
print("released", flush=True)
time.sleep(30)
"""


def _holder(directory: Path, hosts: str, hold: float | str) -> subprocess.Popen[str]:
    """A process holding ``hosts`` for ``hold`` seconds, or ``"until-told"``: until a line on its stdin."""
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER), str(directory), hosts, str(hold)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:  # only the processes this test started
        if p.poll() is None:
            p.kill()
        p.wait()


def test_a_host_another_process_holds_is_refused_naming_the_holder(
    tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    other = _holder(tmp_path, "cn0002", 60)
    started.append(other)
    mine = HostLocks(tmp_path)
    assert not mine.try_acquire(["cn0002"])
    t0 = time.monotonic()
    with pytest.raises(HostBusy) as caught:
        mine.acquire(["cn0001", "cn0002"], timeout=0.3)
    assert time.monotonic() - t0 >= 0.3
    message = caught.value.one_line()
    assert message.startswith("host cn0002 is still busy after 0.3 s: another ibfab process probes it: ")
    assert f"PID {other.pid} (-c " in message and message.endswith(", for schedule nightly")
    # All or nothing: the free cn0001 was not kept while cn0002 was refused.
    assert mine.busy() == frozenset()
    third = HostLocks(tmp_path)
    assert third.try_acquire(["cn0001"])
    third.release(["cn0001"])
    # The holder dies without releasing (SIGKILL): the kernel frees its lock.
    os.kill(other.pid, signal.SIGKILL)
    other.wait()
    mine.acquire(["cn0002"], timeout=5)
    assert mine.busy() == frozenset({"cn0002"})
    mine.release(["cn0002"])


def test_waiting_takes_the_host_once_the_other_process_releases_it(
    tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    other = _holder(tmp_path, "cn0001,cn0003", "until-told")
    started.append(other)
    told = threading.Event()
    got: list[bool] = []  # whether the holder had been told to release when the waiter got the host

    def wait_for_it() -> None:
        with HostLocks(tmp_path).hold(["cn0003"], timeout=60):  # a deadline, not a speed
            got.append(told.is_set())

    waiter = threading.Thread(target=wait_for_it)
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and not got  # still waiting: the other process holds the host
    told.set()
    assert other.stdin is not None and other.stdout is not None
    other.stdin.write("release\n")
    other.stdin.flush()
    assert other.stdout.readline() == "released\n"
    waiter.join(60)
    assert got == [True]  # taken, and only after the holder let it go


def test_without_a_directory_locks_stay_in_the_process(tmp_path: Path) -> None:
    a, b = HostLocks(), HostLocks(tmp_path)
    assert a.try_acquire(["x"]) and b.try_acquire(["x"])  # different scopes
    assert list(tmp_path.iterdir()) == [tmp_path / "x.lock"]
    assert not HostLocks(tmp_path).try_acquire(["x"])
    a.release(["x"])
    b.release(["x"])
    assert HostLocks(tmp_path).lock_file("a/../b").name.endswith(".lock")
    assert "/" not in HostLocks(tmp_path).lock_file("a/../b").name
