"""``ibfab triage --slurm`` against a real Slurm on loopback (tests/slurm.py): one allocation of
every node, each test a job step in it (single-node runs and collectives by srun, ib_write_bw
pairs as a sweep's steps), released on every way out.

The fabric is a saved ibnetdiscover of four hosts cn0001..cn0004 with 8 HDR HCAs each (a DGX A100's
rails); a node map makes them the Slurm nodes node1..node4, which have 8 CPUs each here (a rank per
GPU). What cannot run here is the GPU and HCA work itself: ``all_reduce_perf`` and ``ib_write_bw``
are stand-ins (below) in a directory on PATH that print real captures from tests/data/realdata.
After every test the fixture checks no job is queued and no step process is left.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from probes.slurm import Slurm
from tests.slurm import SlurmCluster, slurm, start_slurm
from topology.generate import generate, to_ibnetdiscover

__all__ = ["slurm", "slurm_cluster"]

pytestmark = pytest.mark.slurm

FABRIC = "leafspine:leaves=2,spines=2,hosts=2,hcas=8,radix=40,speed=HDR"
HOSTS = "cn[0001-0004]"
BUDGET = math.ceil(math.log2(4)) + 2
REAL = Path(__file__).resolve().parents[1] / "data" / "realdata"
ONE_NODE = REAL / "nccl-tests" / "superbench-all_reduce_perf-1node-8xA100-old-format.txt"
TWO_NODES = REAL / "nccl-tests" / "deepops-all_reduce_perf-2x-dgxa100-8xhdr-k8s-old-format.txt"
CUDA_BUSY = REAL / "nccl-tests" / "nccl-tests-issue369-gh200-2x4-cuda-busy-failure.txt"
WRITE_BW = REAL / "ib_write_bw" / "superbench-loopback-8M-hdr-server-client-concat.txt"

# The stand-in for nccl-tests' all_reduce_perf (this machine has no GPU). Rank 0 prints a real run:
# one DGX A100 alone, else two DGX A100 with 8 HDR HCAs each (188.7 GB/s busbw), its time, algbw and
# busbw columns scaled by half when $IBFAB_STANDIN_SLOW is one of the step's nodes (that node's
# GPU-to-HCA path is slow: fine alone, slow across the network). On $IBFAB_STANDIN_HANG it hangs (a
# collective stuck); on $IBFAB_STANDIN_FAIL it prints a real CUDA failure and exits 1. On
# $IBFAB_STANDIN_LOSE, as rank 0 of a step of $IBFAB_STANDIN_LOSE_NODES nodes (1: its run alone), it
# prints its run and then kills that node's slurmd by the PID the test recorded when it started it
# ($IBFAB_STANDIN_LOSE_PID): the node is lost mid-triage, every later step there fails to launch.
ALL_REDUCE_PERF = f"""#!/bin/sh
[ "$SLURMD_NODENAME" = "$IBFAB_STANDIN_HANG" ] && exec sleep 300
[ "$SLURM_PROCID" = 0 ] || exit 0
[ "$SLURMD_NODENAME" = "$IBFAB_STANDIN_FAIL" ] && {{ cat {CUDA_BUSY}; exit 1; }}
if [ "$SLURM_STEP_NUM_NODES" = 1 ]; then
  cat {ONE_NODE}
else
  f=1
  for n in $(scontrol show hostnames "$SLURM_STEP_NODELIST"); do [ "$n" = "$IBFAB_STANDIN_SLOW" ] && f=0.5; done
  awk -v f=$f 'NF == 12 && $1 !~ /^#/ {{$5 /= f; $6 *= f; $7 *= f; $9 /= f; $10 *= f; $11 *= f}} {{print}}' {TWO_NODES}
fi
if [ "$SLURMD_NODENAME" = "$IBFAB_STANDIN_LOSE" ] && [ "$SLURM_STEP_NUM_NODES" = "${{IBFAB_STANDIN_LOSE_NODES:-1}}" ]; then
  kill -9 "$IBFAB_STANDIN_LOSE_PID"
fi
exit 0
"""

# The stand-in for perftest's ib_write_bw (no HCA here): a real 8 MiB run over HDR, the client's
# half of the capture when the last argument is the server's address, else the server's half.
IB_WRITE_BW = f"""#!/bin/sh
eval last=\\${{$#}}
case "$last" in
  *.*.*.*) exec sed '/^\\*/,$d' {WRITE_BW} ;;
  *) exec sed -n '/^\\*/,$p' {WRITE_BW} ;;
esac
"""


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """This module's cluster (the ``slurm`` fixture's): 4 nodes of 8 CPUs, one task per GPU."""
    with start_slurm(tmp_path_factory.mktemp("slurm-gpu"), nodes=4, cpus=8) as cluster:
        yield cluster


@pytest.fixture
def site(tmp_path: Path) -> dict[str, str]:
    """The fabric, the node map, the stand-ins' directory and a store, as files."""
    topo = tmp_path / "fabric.topo"
    topo.write_text(to_ibnetdiscover(generate(FABRIC)))
    node_map = tmp_path / "nodes.map"
    node_map.write_text("cn[0001-0004] node[1-4]\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, text in (("all_reduce_perf", ALL_REDUCE_PERF), ("ib_write_bw", IB_WRITE_BW)):
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    return {"topo": str(topo), "map": str(node_map), "bin": str(bindir), "db": str(tmp_path / "ibfab.db")}


def triage(cluster: SlurmCluster, site: dict[str, str], *args: str, **standin: str) -> Any:
    env = {
        **cluster.env,
        "PATH": f"{site['bin']}:{os.environ['PATH']}",
        **{f"IBFAB_STANDIN_{k.upper()}": v for k, v in standin.items()},
    }
    argv = ["triage", "--hosts", HOSTS, "--slurm", "--input", site["topo"], "--node-map", site["map"],
            "--mpi", "none", "--no-gres", "--binary-dir", site["bin"], "--db", site["db"], *args]  # fmt: skip
    return CliRunner().invoke(main, argv, env=env)


def triage_jobs(cluster: SlurmCluster) -> list[str]:
    """The ids of the jobs named ibfab-triage Slurm still shows (ended ones too, for MinJobAge)."""
    out = cluster.client("scontrol", "-o", "show", "job", check=False).stdout
    return [
        line.split()[0].removeprefix("JobId=")
        for line in out.splitlines()
        if line.startswith("JobId=") and " JobName=ibfab-triage " in f"{line} "
    ]


def test_a_clean_set_is_cleared_and_the_allocation_released(
    slurm: SlurmCluster, site: dict[str, str]
) -> None:
    before = triage_jobs(slurm)
    res = triage(slurm, site, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["backend"] == "slurm" and doc["fabric_fine"] and doc["whole_set_ran"]
    # the report names the one job Slurm ran it as (its steps' logs: sacct -j)
    [job] = [j for j in triage_jobs(slurm) if j not in before]
    assert doc["slurm_job_ids"] == [job]
    assert doc["lost_nodes"] == [] and doc["undecided"] is None
    rounds = doc["rounds"]
    assert [r["kind"] for r in rounds] == ["single-node", "pairs", "halves", "whole set"]
    assert len(rounds) <= BUDGET
    assert [r["ruled_out"] for r in rounds[:2]] == ["gpus", "cables"]
    # every node alone: the one-node capture; every rail both ways: the HDR capture's 8 MiB rate
    assert [t["measured"] for t in rounds[0]["tests"]] == [pytest.approx(235.26, abs=0.01)] * 4
    pairs = rounds[1]["tests"]
    assert len(pairs) == 4 * 8 and not any(t["slow"] or t["error"] for t in pairs)
    assert [t["measured"] for t in pairs] == [pytest.approx(201.80, abs=0.01)] * 32
    # the collectives judged against the fabric's 8 HDR HCAs per node (not left unknown)
    for r in rounds[2:]:
        for t in r["tests"]:
            assert t["busbw"]["verdict"] == "normal" and t["slow_under"] == pytest.approx(170.0)
    assert Slurm(slurm.env).jobs() == [] and slurm.jobs() == []

    res = triage(slurm, site)
    assert res.exit_code == 0, res.output
    assert any(line.startswith("the fabric is fine") for line in res.output.splitlines()), res.output
    [job] = [j for j in triage_jobs(slurm) if j not in before and j != doc["slurm_job_ids"][0]]
    assert (
        f"Slurm job {job}: its steps ran the tests (sacct -j {job} for their logs)" in res.output.splitlines()
    )
    assert slurm.jobs() == []


def test_a_planted_slow_node_is_named_with_its_evidence(slurm: SlurmCluster, site: dict[str, str]) -> None:
    res = triage(slurm, site, "--json", slow="node3")
    assert res.exit_code == 4, res.output
    assert res.stderr.splitlines() == ["ibfab: error: triage named a culprit: node cn0003"]
    doc = json.loads(res.stdout)
    assert len(doc["rounds"]) <= BUDGET
    c = doc["culprit"]
    assert (c["kind"], c["hosts"], c["reason"]) == ("node", ["cn0003"], "alone_with_cleared")
    [proof] = c["evidence"]
    assert proof["slow"] and proof["busbw"]["verdict"] == "low" and "cn0003" in proof["hosts"]
    assert proof["measured"] == pytest.approx(188.70 / 2, abs=0.01) and proof["slow_under"] == pytest.approx(
        170.0
    )
    # its GPUs alone and its cables were fine: it shows only in a collective over the network
    assert [r["ruled_out"] for r in doc["rounds"][:2]] == ["gpus", "cables"]
    assert slurm.jobs() == []


def test_a_node_slurm_will_not_give_is_one_line_and_not_waited_for(
    slurm: SlurmCluster, site: dict[str, str]
) -> None:
    s = Slurm(slurm.env)
    s.drain("node2", "cable leaf-01/3 down")
    log = slurm.directory / "slurmctld.log"
    allocations = log.read_text().count("_slurm_rpc_allocate_resources")
    try:
        res = triage(slurm, site)
        assert res.exit_code == 9, res.output
        assert res.output.splitlines() == [
            "ibfab: error: triage needs every node; Slurm will not give node2 (idle+drain: ibfab: cable leaf-01/3 down)"
        ]
        # nothing was asked of Slurm (not even the three nodes it would give)
        assert log.read_text().count("_slurm_rpc_allocate_resources") == allocations
        assert slurm.jobs() == []
    finally:
        s.resume("node2")
        slurm.wait_idle(("node2",))


def test_a_step_that_fails_or_hangs_is_a_recorded_failure(slurm: SlurmCluster, site: dict[str, str]) -> None:
    res = triage(slurm, site, "--json", "--timeout", "5", hang="node2", fail="node4")
    assert res.exit_code == 4, res.output
    assert "Traceback" not in res.output
    doc = json.loads(res.stdout)
    [single] = doc["rounds"]
    by_host = {t["hosts"][0]: t for t in single["tests"]}
    assert by_host["cn0002"]["error"] == "command_timeout: step timed out after 5 s"
    assert by_host["cn0004"]["error"].startswith(
        "gpu-1-1: Test CUDA failure common.cu:1304 'CUDA-capable device(s) is/are busy or unavailable'"
    )
    # the others of the round ran to the end (only the step that overran was cancelled)
    for host in ("cn0001", "cn0003"):
        assert by_host[host]["error"] is None and by_host[host]["measured"] == pytest.approx(235.26, abs=0.01)
    c = doc["culprit"]
    assert (c["kind"], c["hosts"], c["reason"]) == ("node", ["cn0002"], "single_node_failed")
    assert doc["also_slow"] == ["cn0004 alone"]
    assert slurm.jobs() == []  # and the fixture checks no sleep is left on any node


def node_state(cluster: SlurmCluster, node: str) -> str:
    line = cluster.client("scontrol", "-o", "show", "node", node).stdout
    return next(f for f in line.split() if f.startswith("State="))


def test_a_node_lost_mid_triage_is_a_node_finding_not_its_cables(
    tmp_path: Path, site: dict[str, str]
) -> None:
    """node3's slurmd is killed (by the PID this test's cluster recorded) right after its run alone:
    every later step there fails to launch. The node is named lost with srun's words and its Slurm
    state, no cable is suspected, and the other three hosts are triaged without it (found clean)."""
    with start_slurm(tmp_path / "cluster", nodes=4, cpus=8) as cluster:
        res = triage(cluster, site, "--json", lose="node3", lose_pid=str(cluster.node_pids["node3"]))
        assert res.exit_code == 4, res.output
        assert res.stderr.splitlines() == ["ibfab: error: triage lost node(s): cn0003 (drain and check them)"]
        doc = json.loads(res.stdout)
        assert doc["culprit"] is None and doc["undecided"] is None and not doc["fabric_fine"]
        [lost] = doc["lost_nodes"]
        assert (lost["host"], lost["round"], lost["action"]) == ("cn0003", 2, "drain")
        assert "failed on node node3" in lost["said"] and "cn0003" in lost["test"]
        # its state as read right after (slurmctld may not have noticed yet: allocated, or +not_responding)
        assert lost["slurm_state"] is not None and lost["slurm_state"].split("+")[0] in ("allocated", "down")
        single, pairs, *rest = doc["rounds"]
        assert single["ruled_out"] == "gpus" and not any(t["slow"] for t in single["tests"])
        # every pair of node3 (both ways, every rail) is not judged, never slow; the others ran at rate
        mine = [t for t in pairs["tests"] if "cn0003" in t["hosts"]]
        assert len(mine) == 2 * 8 and all(
            not t["slow"] and t["not_judged"]["reason"] == "node_lost" and t["measured"] is None for t in mine
        )
        assert {x["host"] for t in mine for x in t["not_judged"]["lost"]} == {"cn0003"}
        others = [t for t in pairs["tests"] if "cn0003" not in t["hosts"]]
        assert len(others) == 2 * 8 and all(
            t["not_judged"] is None and t["measured"] == pytest.approx(201.80, abs=0.01) for t in others
        )
        assert pairs["ruled_out"] is None  # not every cable was tested both ways
        # the rest of the bisection, without it: every collective judged normal
        assert rest and all("cn0003" not in t["hosts"] for r in rest for t in r["tests"])
        assert all(t["busbw"]["verdict"] == "normal" for r in rest for t in r["tests"])
        assert len(doc["rounds"]) <= doc["round_budget"] == BUDGET + 1
        assert doc["slurm_job_ids"] == triage_jobs(cluster)
        assert_not_responding(cluster, "node3")
        assert cluster.jobs() == []


def test_a_node_lost_in_a_collective_step_is_named_from_srun(tmp_path: Path, site: dict[str, str]) -> None:
    """node3's slurmd is killed right after the collective of the second half (cn0003, cn0004) ran:
    the whole set's step, next, fails to launch there. srun names node3 among the step's four
    nodes; the node is lost in that round and nothing is blamed."""
    with start_slurm(tmp_path / "cluster", nodes=4, cpus=8) as cluster:
        pid = str(cluster.node_pids["node3"])
        res = triage(cluster, site, "--json", lose="node3", lose_nodes="2", lose_pid=pid)
        assert res.exit_code == 4, res.output
        doc = json.loads(res.stdout)
        assert [r["kind"] for r in doc["rounds"]] == ["single-node", "pairs", "halves", "whole set"]
        assert doc["culprit"] is None and doc["undecided"] is None
        [lost] = doc["lost_nodes"]
        assert (lost["host"], lost["round"]) == ("cn0003", 4) and "failed on node node3" in lost["said"]
        halves, [whole] = doc["rounds"][2]["tests"], doc["rounds"][3]["tests"]
        assert [t["hosts"] for t in halves] == [["cn0001", "cn0002"], ["cn0003", "cn0004"]]
        assert all(t["busbw"]["verdict"] == "normal" for t in halves)  # node3 answered then
        assert whole["hosts"] == ["cn0001", "cn0002", "cn0003", "cn0004"] and not whole["slow"]
        assert [x["host"] for x in whole["not_judged"]["lost"]] == ["cn0003"]
        assert_not_responding(cluster, "node3")
        assert cluster.jobs() == []


def assert_not_responding(cluster: SlurmCluster, node: str) -> None:
    """The loss was real: Slurm itself finds the node not responding (within its SlurmdTimeout)."""
    deadline = time.monotonic() + 60
    while "NOT_RESPONDING" not in (state := node_state(cluster, node)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert "NOT_RESPONDING" in state
