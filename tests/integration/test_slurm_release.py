"""No allocation outlives the process that asked for it, even when it is stopped while salloc waits.

The window: SIGTERM arrives while salloc is still waiting for nodes. salloc is killed with the
process, but Slurm keeps the request and grants it later to nobody. The request token salloc
carries in ``--comment`` lets the stopping process find and cancel that job.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fabric.app.session import StoreAccess
from probes.slurm import REQUEST_PREFIX, Slurm
from probes.slurm_parse import parse_granted
from tests.slurm import SlurmCluster, slurm, slurm_cluster

__all__ = ["slurm", "slurm_cluster"]

ROOT = Path(__file__).resolve().parents[2]

PENDING_SCRIPT = """
import sys
from probes.slurm import AllocationRequest, Slurm
s = Slurm({"SLURM_CONF": sys.argv[1]})
with s.allocation(AllocationRequest(count=4, time_limit_minutes=5, immediate=60)) as alloc:
    print("granted", alloc.job_id, flush=True)
"""


def _sweep_jobs(cluster: SlurmCluster) -> list[tuple[str, str, str]]:
    out = cluster.client("squeue", "-h", "-n", "ibfab-sweep", "-o", "%i|%T|%k").stdout
    return [tuple(line.split("|")) for line in out.splitlines() if line.strip()]  # type: ignore[misc]


@pytest.mark.slurm
def test_sigterm_while_salloc_waits_cancels_the_request_granted_later(slurm: SlurmCluster) -> None:
    # Another job holds node1, so a request for all four nodes waits in the queue.
    blocker = parse_granted(
        slurm.client("salloc", "--no-shell", "-N1", "-w", "node1", "--time=5", "--job-name=blocker").stderr
    )
    assert blocker is not None
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(PENDING_SCRIPT), str(slurm.conf)],
        stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not [j for j in _sweep_jobs(slurm) if j[1] == "PENDING"]:
            assert time.monotonic() < deadline, "salloc never queued its request"
            time.sleep(0.1)
        ((job, _, comment),) = _sweep_jobs(slurm)
        assert comment.startswith(REQUEST_PREFIX)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 128 + signal.SIGTERM
        assert proc.stdout is not None and proc.stdout.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        slurm.client("scancel", blocker)
    # The nodes are free now: a request still queued would be granted to nobody within a second.
    time.sleep(2.0)
    assert _sweep_jobs(slurm) == [] and Slurm(slurm.env).jobs(job) == []


@pytest.mark.slurm
def test_release_requested_cancels_only_its_own_token(slurm: SlurmCluster) -> None:
    s = Slurm(slurm.env)
    granted = {}
    for token, node in (("aaaa", "node1"), ("bbbb", "node2")):
        res = slurm.client(
            "salloc", "--no-shell", "-N1", "-w", node, "--time=5", "--job-name=ibfab-sweep",
            f"--comment={REQUEST_PREFIX}{token}",
        )  # fmt: skip
        granted[token] = parse_granted(res.stderr)
    assert s.release_requested("aaaa") == [granted["aaaa"]]
    assert [j.job_id for j in s.jobs(name="ibfab-sweep")] == [granted["bbbb"]]
    assert s.release_requested("cccc") == []
    assert s.release_requested("bbbb") == [granted["bbbb"]]
    assert s.jobs(name="ibfab-sweep") == []


@pytest.mark.slurm
def test_a_daemon_stopped_past_its_grace_cancels_the_allocation_its_job_holds(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    import threading

    from fabric.app.daemon.jobs import JobContext
    from fabric.serve.daemon import Daemon
    from fabric.store import Schedule, Store
    from probes.slurm import AllocationRequest

    granted: list[str] = []
    finish = threading.Event()

    def sweep_that_overruns(schedule: Schedule, ctx: JobContext) -> str:  # the job is the boundary
        with Slurm(slurm.env).allocation(
            AllocationRequest(hosts=("node1", "node2"), time_limit_minutes=5)
        ) as a:
            granted.append(a.job_id)
            finish.wait(60)
        return "done"

    db = tmp_path / "store.db"
    with Store.open(db) as store:
        store.add_schedule("long", "sweep", interval_seconds=3600, args={}, next_run=time.time())
    daemon = Daemon(StoreAccess(db), runner=sweep_that_overruns, grace_seconds=0.5)
    loop = threading.Thread(target=daemon.run)
    loop.start()
    try:
        deadline = time.monotonic() + 20
        while not granted:
            assert time.monotonic() < deadline, "the job never got its allocation"
            time.sleep(0.05)
        assert [j for j in _sweep_jobs(slurm) if j[0] == granted[0]]
        daemon.stop()
        loop.join(40)
        assert not loop.is_alive()
        assert _sweep_jobs(slurm) == []  # cancelled by the daemon, not left to its time limit
        with Store.open(db) as store:
            (run,) = store.list_runs()
        assert not run.ok and run.error is not None
        assert f"Slurm job(s) {granted[0]} cancelled" in run.error
    finally:
        finish.set()
        loop.join(10)
