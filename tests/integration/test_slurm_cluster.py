"""The Slurm test cluster itself: four real nodes, each job step sees its own node, nothing left."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.slurm import SlurmCluster, slurm, slurm_cluster, start_slurm

__all__ = ["slurm", "slurm_cluster"]


@pytest.mark.slurm
def test_four_idle_nodes_and_steps_run_on_each(slurm: SlurmCluster) -> None:
    assert slurm.states() == {f"node{k}": "idle" for k in range(1, 5)}
    out = slurm.client("srun", "-N4", "-l", "hostname").stdout
    assert sorted(line.split(": ")[1] for line in out.splitlines()) == ["node1", "node2", "node3", "node4"]


@pytest.mark.slurm
def test_a_private_cluster_stops_every_process_it_started(tmp_path: Path) -> None:
    with start_slurm(tmp_path / "c", nodes=2) as cluster:
        pids = cluster.pids
        assert len(pids) == 3 and pids <= set(cluster.ours()) and cluster.strays() == []
        assert "SLURM_CONF" not in __import__("os").environ
    assert cluster.ours() == []
