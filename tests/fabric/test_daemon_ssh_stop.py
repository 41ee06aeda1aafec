"""A real ``ibfab daemon`` stopped by SIGTERM while its job runs a tool over SSH (a real sshd on
loopback plays the management host): the remote tool and its children are ended on the host, not
left running there; a daemon stopped when no SSH command runs exits as it always did.

ibnetdiscover cannot run here (no InfiniBand device): the host's sessions find a stand-in of that
name first on their PATH (sshd's SetEnv), as a tool stuck on a dead fabric hangs. Every process is
found by a marker unique to the test, then checked by PID; only the test's own are ever killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabric.store import Store
from tests.fabric.test_daemon_faults import _alive, _daemon, _runs, _stop, _until
from tests.sshd import Sshd, start_sshd

pytestmark = pytest.mark.sshd


@pytest.fixture
def host(tmp_path: Path) -> Iterator[tuple[Sshd, Path]]:
    """An sshd whose sessions run the tools in ``bin`` first (the stand-in ibnetdiscover)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    with start_sshd(tmp_path / "sshd", hosts=1, session_env=env) as server:
        yield server, bin_dir


def _schedule_counters_over_ssh(server: Sshd, tmp_path: Path) -> Path:
    db = tmp_path / "ibfab.db"
    known = server.write_known_hosts(tmp_path / "known_hosts")
    args = {
        "ssh": f"{server.user}@{server.addresses[0]}:{server.port}",
        "known_hosts": str(known),
        "identity": str(server.user_key),
    }
    with Store.open(db) as s:
        s.add_schedule("remote", "counters", interval_seconds=3600, args=args, next_run=time.time())
    return db


def _pids(pattern: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return sorted(int(p) for p in found.split())


def test_sigterm_ends_the_remote_tool_and_its_children_on_the_host(
    host: tuple[Sshd, Path], tmp_path: Path
) -> None:
    server, bin_dir = host
    naps = f"{600 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 1000}"  # the child's marker
    tool = bin_dir / "ibnetdiscover"  # its path is the tool's marker (tmp_path is unique)
    tool.write_text(f"#!/bin/sh\nsleep {naps} &\nwait\n")
    tool.chmod(0o755)
    db = _schedule_counters_over_ssh(server, tmp_path)
    patterns = (f"^/bin/sh {tool}", f"^sleep {naps}$")
    proc = _daemon(db, "--grace", "1")
    try:
        try:
            # Before the stop: the tool (the remote session leader) and its child run on the host.
            _until(lambda: all(len(_pids(p)) == 1 for p in patterns))
            pids = [pid for p in patterns for pid in _pids(p)]
            assert all(_alive(p) for p in pids)
        finally:
            _out, err = _stop(proc)
        assert proc.returncode == 0, err
        _until(lambda: not any(_alive(p) for p in pids), 60)  # gone on the host, with the child
        [run] = _runs(db)
        assert run.ok is False and run.error is not None
        assert run.error.startswith("daemon stopped while the job was still running (grace 1 s)")
        assert "1 running tool(s) ended" in run.error
    finally:
        for pattern in patterns:  # only if the test failed: its own processes, by PID
            for pid in _pids(pattern):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def test_a_stop_with_no_ssh_command_running_is_unaffected(host: tuple[Sshd, Path], tmp_path: Path) -> None:
    server, bin_dir = host
    tool = bin_dir / "ibnetdiscover"
    tool.write_text("#!/bin/sh\necho 'ibwarn: no InfiniBand device here' >&2\nexit 1\n")
    tool.chmod(0o755)
    db = _schedule_counters_over_ssh(server, tmp_path)
    proc = _daemon(db, "--grace", "300")
    try:
        _until(lambda: any(r.finished is not None for r in _runs(db)))  # the job ran and ended
        started = time.monotonic()
    finally:
        _out, err = _stop(proc)
    assert proc.returncode == 0, err
    assert time.monotonic() - started < 240  # no grace (300 s) waited: nothing was running
    [run] = _runs(db)
    assert run.ok is False and run.error is not None
    assert "no InfiniBand device here" in run.error  # the job's own failure, not the stop's
    assert "daemon stopped" not in run.error
    assert _pids(f"^/bin/sh {tool}") == []
