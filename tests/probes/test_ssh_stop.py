"""Ending running commands when ibfab stops (``probes.transport.stop_all``): a remote command over
a real sshd on loopback is killed on the host with its whole session, as a local one is with its
process group; a finished command leaves nothing behind and a stop with nothing running is a no-op.
Every remote process is found by a unique marker in its command line, then checked by PID."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from probes import transport
from probes.inventory import HostEntry
from probes.runner import LocalTransport
from probes.ssh import SshTransport
from probes.transport import CommandResult, FailureKind, Transport
from tests.sshd import Sshd, sshd_server

pytestmark = pytest.mark.sshd
__all__ = ["sshd_server"]  # the fixture, imported so pytest finds it here


def _ssh(server: Sshd, tmp_path: Path) -> SshTransport:
    known = server.write_known_hosts(tmp_path / "known_hosts")
    entry = HostEntry("node2", "127.0.0.2", server.user, server.port, str(server.user_key))
    return SshTransport(entry, known_hosts=known, ssh_config=None, connect_timeout=5.0)


def _pids(pattern: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return sorted(int(p) for p in found.split())


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _until(what: object, seconds: float = 60.0) -> None:
    """Wait for ``what`` to hold, up to a deadline (generous: a busy machine only waits longer)."""
    assert callable(what)
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            pytest.fail("condition not reached in time")
        time.sleep(0.05)


def _kill_what_is_left(patterns: tuple[str, ...]) -> None:
    for pattern in patterns:
        for pid in _pids(pattern):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _in_thread(t: Transport, argv: list[str], box: dict[str, CommandResult]) -> threading.Thread:
    thread = threading.Thread(target=lambda: box.setdefault(t.host, t.run(argv, 600.0)), daemon=True)
    thread.start()
    return thread


def test_stop_all_kills_the_remote_session_and_the_local_group_alike(
    sshd_server: Sshd, tmp_path: Path
) -> None:
    marker = f"ibfab-stop-{uuid.uuid4().hex[:12]}"
    naps = f"{600 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 1000}"  # unique, for the children
    local_naps = f"{naps}1"
    remote = ["sh", "-c", f"echo started; sleep {naps} & sleep {naps}; echo never", marker]
    local = ["sh", "-c", f"sleep {local_naps} & sleep {local_naps}", f"{marker}-local"]
    box: dict[str, CommandResult] = {}
    ssh = _ssh(sshd_server, tmp_path)
    patterns = (f" {marker}$", f"^sleep {naps}$", f" {marker}-local$", f"^sleep {local_naps}$")
    try:
        threads = [_in_thread(ssh, remote, box), _in_thread(LocalTransport("local"), local, box)]
        # Before the stop: the remote shell (its session leader) and both of its sleeps run, and so
        # does the local command with its children.
        _until(lambda: len(_pids(f"^sleep {naps}$")) == 2 and len(_pids(f"^sleep {local_naps}$")) == 2)
        remote_pids = _pids(f" {marker}$") + _pids(f"^sleep {naps}$")
        local_pids = _pids(f" {marker}-local$") + _pids(f"^sleep {local_naps}$")
        assert len(remote_pids) == 3 and len(local_pids) == 3
        assert all(_alive(p) for p in remote_pids + local_pids)
        assert transport.running_count() == 2

        started = time.monotonic()
        assert transport.stop_all(grace=1.0) == 2
        took = time.monotonic() - started
        for thread in threads:
            thread.join(10)
        assert took < 60.0, took  # a deadline: not the commands' 600 s timeout

        _until(lambda: not any(_alive(p) for p in remote_pids + local_pids))
        r = box["node2"]
        assert (r.failure, r.exit_code) == (FailureKind.ERROR, None)
        assert r.message == "stopped: ibfab is stopping; the command was killed"
        assert r.stdout == "started\n"  # what it printed before the stop is kept
        assert box["local"].exit_code == -15  # SIGTERM to its process group
        assert transport.running_count() == 0
        # The stopped transport is closed and starts nothing more (ibfab is stopping).
        later = ssh.run(["echo", "again"], 5.0)
        assert (later.failure, later.message) == (FailureKind.ERROR, "stopped: ibfab is stopping; not run")
    finally:
        _kill_what_is_left(patterns)  # only when the test failed: its own processes, by PID


def test_a_finished_command_leaves_nothing_and_a_stop_then_is_a_no_op(
    sshd_server: Sshd, tmp_path: Path
) -> None:
    marker = f"ibfab-done-{uuid.uuid4().hex[:12]}"
    with _ssh(sshd_server, tmp_path) as ssh:
        # $$ of the command is the remote session leader: the wrapper's login shell exec'd it.
        r = ssh.run(["sh", "-c", "echo $$; sleep 0.2", marker], 10.0)
        assert r.ok, r
        session = int(r.stdout)
        assert transport.running_count() == 0
        _until(lambda: not _alive(session))
        assert _pids(f" {marker}$") == []

        started = time.monotonic()
        # nothing running: nothing to end, and neither the grace nor the slack after it waited for
        assert transport.stop_all(grace=60.0) == 0
        assert time.monotonic() - started < 60.0
        # A transport that was not running a command is not stopped by it.
        assert ssh.run(["echo", "still here"], 10.0).stdout == "still here\n"


def test_a_command_registered_by_a_refused_thread_is_ended_at_once() -> None:
    """The race the check before a command cannot close: a job thread passed the check, the
    daemon then refused it and took its list of running commands, and only then did the command
    register. Registering from a refused thread ends it at once, as stop_all would have."""
    ended: list[float] = []
    ready, refused_now, done = threading.Event(), threading.Event(), threading.Event()

    def job() -> None:
        ready.set()
        refused_now.wait(5)
        assert transport.refused()
        with transport.running(ended.append):
            assert ended == [0.0]
        done.set()

    worker = threading.Thread(target=job)
    worker.start()
    ready.wait(5)
    assert transport.stop_all(refusing=[worker]) == 0 and not transport.refused()
    refused_now.set()
    worker.join(5)
    assert done.is_set() and ended == [0.0] and transport.running_count() == 0
