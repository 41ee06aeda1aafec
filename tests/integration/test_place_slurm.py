"""``ibfab place`` reading node states, drains and reservations from the real 4-node Slurm."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.app.slurm import hosts_for_jobs, parse_node_map
from fabric.cli.main import main
from probes.slurm import Slurm
from tests.slurm import SlurmCluster, slurm, slurm_cluster
from topology.errors import UsageError
from topology.generate import generate, to_ibnetdiscover

__all__ = ["slurm", "slurm_cluster"]

FOUR_HOSTS = "leafspine:leaves=2,spines=2,hosts=2,radix=40,speed=HDR"
NODES = "cn[0001-0004] node[1-4]\n"


@pytest.mark.slurm
def test_placement_takes_only_what_slurm_could_give_and_says_why_not_the_rest(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    topo, nodes = tmp_path / "fabric.topo", tmp_path / "nodes.map"
    topo.write_text(to_ibnetdiscover(generate(FOUR_HOSTS)))
    nodes.write_text(NODES)
    s = Slurm(slurm.env)
    # All free: nothing left out by Slurm.
    clean = hosts_for_jobs(s, "ibfab", node_map=parse_node_map(NODES))
    assert clean.free == ("cn0001", "cn0002", "cn0003", "cn0004") and clean.busy == {}
    s.drain("node2", "leaf-01/2 BER 2e-9")
    slurm.client("scontrol", "create", "reservation", "ReservationName=maint", "Nodes=node4",
                 "StartTime=now", "Duration=10", "Users=root", "Flags=MAINT")  # fmt: skip
    try:
        r = CliRunner().invoke(
            main,
            ["place", "--nodes", "2", "--input", str(topo), "--partition", "ibfab", "--node-map", str(nodes),
             "--format", "slurm"],
            env=slurm.env,
        )  # fmt: skip
        assert r.exit_code == 0, r.output
        assert r.stdout.strip() == "cn[0001,0003]"
        assert "left out (1) excluded: slurm: idle+drain: ibfab: leaf-01/2 BER 2e-9: cn0002" in r.stderr
        assert "left out (1) excluded: slurm: reserved (maint): cn0004" in r.stderr
        # Three hosts cannot be had now.
        r = CliRunner().invoke(
            main,
            ["place", "--nodes", "3", "--input", str(topo), "--slurm", "--node-map", str(nodes)],
            env=slurm.env,
        )
        assert r.exit_code != 0 and r.stderr.count("\n") == 1
        # Inside the reservation, only its node is free.
        inside = hosts_for_jobs(s, reservation="maint", node_map=parse_node_map(NODES))
        assert inside.free == ("cn0004",) and inside.busy["cn0001"] == "slurm: not in reservation maint"
        with pytest.raises(UsageError, match="no partition 'gpu'"):
            hosts_for_jobs(s, "gpu")
    finally:
        s.resume("node2")
        slurm.client("scontrol", "delete", "ReservationName=maint")
        slurm.wait_idle(("node2",))
