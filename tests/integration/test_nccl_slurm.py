"""``ibfab probe nccl --launcher srun`` from this machine: allocation -> steps -> release, on the real
4-node Slurm (tests/slurm.py). No GPU or nccl-tests here: the launches fail on the nodes for real
(or hang, with a stand-in for a hung tool), and every outcome must leave no job behind."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.store import Store
from probes.slurm import Slurm
from tests.slurm import SlurmCluster, slurm, slurm_cluster

__all__ = ["slurm", "slurm_cluster"]

BASE = ("probe", "nccl", "--launcher", "srun", "--mpi", "none", "--no-gres", "--gpus-per-node", "2",
        "-b", "8", "-e", "64")  # fmt: skip


def invoke(cluster: SlurmCluster, *args: str) -> Any:
    return CliRunner().invoke(main, [*BASE, *args], env=cluster.env)


@pytest.mark.slurm
def test_each_launch_is_a_step_of_one_allocation_released_after(slurm: SlurmCluster, tmp_path: Path) -> None:
    db = str(tmp_path / "ibfab.db")
    res = invoke(slurm, "--hosts", "node[1-2]", "--per-rail", "--rail-hcas", "mlx5_0,mlx5_1", "--db", db,
                 "--json")  # fmt: skip
    # The binary is not on the nodes: each launch fails there, in slurmstepd's words, and is kept.
    assert res.exit_code == 4, res.output
    doc = json.loads(res.stdout)
    assert doc["head"].startswith("slurm job ") and doc["launcher"] == "srun" and doc["hosts"] == "node[1-2]"
    job = doc["head"].removeprefix("slurm job ")
    assert [r["label"] for r in doc["runs"]] == ["rail 0 (mlx5_0)", "rail 1 (mlx5_1)"]
    for r in doc["runs"]:
        assert not r["ok"] and "execve(): all_reduce_perf: No such file or directory" in r["error"]
        assert r["argv"][:3] == ["srun", "--nodes=2", "--nodelist=node1,node2"]
    assert res.output.splitlines()[-1].startswith(f"ibfab: error: srun on slurm job {job} failed (exit 2)")
    with Store.open(db) as store:
        (sweep,) = store.list_sweeps()
        assert sweep.pattern == "nccl" and f"via slurm job {job}" in sweep.source
        assert len(store.load_sweep(sweep.id).results) == 2
    assert Slurm(slurm.env).jobs(job) == [] and slurm.jobs() == []


@pytest.mark.slurm
def test_a_launch_that_hangs_is_cancelled_recorded_and_the_allocation_released(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    hung = bindir / "all_reduce_perf"  # stands in for nccl-tests stuck in a collective
    hung.write_text("#!/bin/sh\nexec sleep 300\n")
    hung.chmod(0o755)
    start = time.monotonic()
    res = invoke(slurm, "--hosts", "node[3-4]", "--binary-dir", str(bindir), "--timeout", "3",
                 "--db", str(tmp_path / "ibfab.db"), "--json")  # fmt: skip
    assert res.exit_code == 4, res.output
    (run,) = json.loads(res.stdout)["runs"]
    assert run["error"] == "command_timeout: step timed out after 3 s"
    assert time.monotonic() - start < 40
    assert slurm.jobs() == []  # and the fixture checks no sleep is left on any node


@pytest.mark.slurm
def test_a_node_slurm_will_not_give_stops_the_probe_before_it_allocates(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    s = Slurm(slurm.env)
    s.drain("node2", "cable leaf-01/2 down")
    try:
        res = invoke(slurm, "--hosts", "node[1-2]", "--db", str(tmp_path / "ibfab.db"))
        assert res.exit_code == 9, res.output
        assert res.output.splitlines() == [
            "ibfab: error: nccl-tests needs every node; Slurm will not give node2 (idle+drain: ibfab: cable leaf-01/2 down)"
        ]
        assert slurm.jobs() == []
    finally:
        s.resume("node2")
        slurm.wait_idle(("node2",))


@pytest.mark.slurm
def test_a_node_another_ibfab_process_probes_stops_the_probe_before_it_allocates(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys

    db = tmp_path / "ibfab.db"
    root = Path(__file__).resolve().parents[2]
    script = (
        "import sys, time\nfrom pathlib import Path\nfrom fabric.app.hostlocks import host_locks\n"
        "from fabric.app.session import StoreAccess\n"
        "host_locks(StoreAccess(Path(sys.argv[1]))).acquire(['node2'], why='sweep run')\nprint('held', flush=True)\ntime.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", script, str(db)], stdout=subprocess.PIPE, text=True,
                              cwd=root, env={**os.environ, "PYTHONPATH": str(root)})  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        res = invoke(slurm, "--hosts", "node[1-2]", "--db", str(db))
        assert res.exit_code == 9, res.output
        assert res.output.splitlines()[-1].startswith(
            f"ibfab: error: host node2 is busy: another ibfab process probes it: PID {holder.pid} "
        )
        assert slurm.jobs() == []  # nothing was asked of Slurm
        # node1 is the fabric host cn0001: an SSH sweep holding cn0001 stops it too, once the node
        # map says so (without it the two names are two machines)
        node_map = tmp_path / "nodes.map"
        node_map.write_text("cn0001 node1\n")
        other = subprocess.Popen([sys.executable, "-c", script.replace("'node2'", "'cn0001'"), str(db)],
                                 stdout=subprocess.PIPE, text=True, cwd=root,
                                 env={**os.environ, "PYTHONPATH": str(root)})  # fmt: skip
        try:
            assert other.stdout is not None and other.stdout.readline() == "held\n"
            res = invoke(slurm, "--hosts", "node1", "--db", str(db), "--node-map", str(node_map))
            assert res.exit_code == 9, res.output
            assert res.output.splitlines()[-1].startswith(
                f"ibfab: error: host cn0001 is busy: another ibfab process probes it: PID {other.pid} "
            )
            assert slurm.jobs() == []
        finally:
            other.kill()
            other.wait()
    finally:
        holder.kill()
        holder.wait()
