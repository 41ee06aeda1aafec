"""The running jobs a change touches, through the real 4-node Slurm and the lab's real forwarding tables.

The fabric's hosts cn0001..cn0004 are the Slurm nodes node1..node4 (a node map says so): cn0001 and
cn0002 on leaf-01, cn0003 and cn0004 on leaf-02. One job runs across the leaves (node1, node3), one
within leaf-01 (node1, node2). Which of leaf-01's uplinks each job's routes cross is worked out
here from the tables hop by hop, apart from ibfab's own walk.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fabric.app.discovery.discover import Discovery, discover
from fabric.app.routes.tables import read_tables
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.cli.main import main
from fabric.lab import simulator as lab
from tests.slurm import SlurmCluster, slurm, slurm_cluster
from topology.lft import Lfts
from topology.model import Guid

__all__ = ["slurm", "slurm_cluster"]

pytestmark = [pytest.mark.slurm, pytest.mark.lab]
FOUR_HOSTS = "leafspine:leaves=2,spines=2,hosts=2,radix=40,speed=HDR"
LAB = "jobslab"


@pytest.fixture
def jobs_lab(slurm: SlurmCluster, tmp_path: Path) -> Iterator[dict[str, Any]]:
    lab.up(FOUR_HOSTS, (), name=LAB)
    ids: list[str] = []
    try:
        for name, nodes in (("across", "node1,node3"), ("within", "node1,node2")):
            out = slurm.client(
                "sbatch",
                "--parsable",
                "-J",
                name,
                "-N2",
                "-w",
                nodes,
                "-o",
                str(tmp_path / "slurm-%j.out"),
                "--wrap",
                "sleep 600",
            ).stdout
            ids.append(out.strip().split(";")[0])
        deadline = time.monotonic() + 30
        while slurm.client("squeue", "-h", "-t", "RUNNING", "-o", "%i").stdout.split() != sorted(ids):
            assert time.monotonic() < deadline, slurm.client("squeue").stdout
            time.sleep(0.2)
        node_map = tmp_path / "nodes.map"
        node_map.write_text("cn[0001-0004] node[1-4]\n")
        yield {"across": ids[0], "within": ids[1], "map": str(node_map), "slurm": slurm}
    finally:
        for job in ids:
            slurm.client("scancel", job, check=False)
        deadline = time.monotonic() + 30
        while slurm.client("squeue", "-h", "-o", "%i").stdout.strip() and time.monotonic() < deadline:
            time.sleep(0.2)
        lab.down(LAB)


def invoke(cluster: SlurmCluster, *args: str) -> Any:
    return CliRunner().invoke(main, list(args), env=cluster.env)


def _guid(d: Discovery, name: str) -> Guid:
    return next(g for g, c in d.classification.nodes.items() if c.name == name)


def _path_ports(d: Discovery, t: Lfts, src: str, dst: str) -> set[tuple[Guid, int]]:
    """(switch, out port) of every hop from ``src``'s leaf to ``dst``, followed in the tables."""
    dst_lid = d.fabric.nodes[_guid(d, dst)].lid
    here = next(far.guid for _, far, _ in d.fabric.neighbours(_guid(d, src)))
    hops: set[tuple[Guid, int]] = set()
    while True:
        port = int(t.ports[t.row(here), dst_lid])
        far = next(f for p, f, _ in d.fabric.neighbours(here) if p == port)
        hops.add((here, port))
        if d.fabric.nodes[far.guid].kind.value != "switch":
            return hops
        here = far.guid


def _crosses(d: Discovery, t: Lfts, hosts: list[str], leaf: str, port: int) -> bool:
    g = _guid(d, leaf)
    far = next(f for p, f, _ in d.fabric.neighbours(g) if p == port)
    ends = {(g, port), (far.guid, far.port)}
    hcas = [f"{h} mlx5_0" for h in hosts]
    return any(_path_ports(d, t, a, b) & ends for a in hcas for b in hcas if a != b)


def test_jobs_across_and_within_the_leaf(jobs_lab: dict[str, Any]) -> None:
    cluster = jobs_lab["slurm"]
    d = discover(Session(Source.lab(LAB)))
    t = read_tables(Session(Source.lab(LAB)), d).lfts
    leaf = _guid(d, "leaf-01")
    uplinks = sorted(
        p for p, f, _ in d.fabric.neighbours(leaf) if d.fabric.nodes[f.guid].kind.value == "switch"
    )
    assert len(uplinks) == 2
    for port in uplinks:
        res = invoke(
            cluster, "isolate", f"leaf-01:{port}", "--lab", LAB, "--min-uplink-share", "0.5",
            "--jobs", "--node-map", jobs_lab["map"], "--json",
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        jobs = json.loads(res.stdout)["jobs"]
        assert jobs["routes_known"] and jobs["running"] == 2
        listed = {j["job_id"]: j for j in jobs["jobs"]}
        across = _crosses(d, t, ["cn0001", "cn0003"], "leaf-01", port)
        assert (jobs_lab["across"] in listed) == across
        assert jobs_lab["within"] not in listed  # its traffic never leaves leaf-01
        if across:
            j = listed[jobs_lab["across"]]
            assert (j["user"], j["node_count"], j["nodes"], j["name"]) == ("root", 2, "node[1,3]", "across")
            assert j["routes_crossing"] > 0 and j["on_hosts"] == []
    # at least one uplink carries the job across the leaves (it has to leave leaf-01 somehow)
    assert any(_crosses(d, t, ["cn0001", "cn0003"], "leaf-01", p) for p in uplinks)
    crossing = next(p for p in uplinks if _crosses(d, t, ["cn0001", "cn0003"], "leaf-01", p))

    held = invoke(
        cluster, "isolate", f"leaf-01:{crossing}", "--lab", LAB, "--min-uplink-share", "0.5",
        "--avoid-running-jobs", "--node-map", jobs_lab["map"], "--apply", "--yes",
        "--db", str(Path(jobs_lab["map"]).parent / "a.db"),
    )  # fmt: skip
    assert held.exit_code == 9, held.output
    assert f"job {jobs_lab['across']} (root, 2 node(s): node[1,3])" in held.stderr
    assert "nothing was changed" in held.stderr
    assert len(discover(Session(Source.lab(LAB))).fabric.links) == len(d.fabric.links)

    res = invoke(
        cluster, "drain", "nodes", "cn0002", "--reason", "x", "--node-map", jobs_lab["map"], "--jobs"
    )
    assert res.exit_code == 0, res.output
    assert (
        f"job {jobs_lab['within']} 'within': user root, 2 node(s) (node[1-2]): runs on cn0002" in res.stdout
    )
    assert f"job {jobs_lab['across']} " not in res.stdout
    res = invoke(
        cluster,
        "drain",
        "nodes",
        "cn0001",
        "--reason",
        "x",
        "--node-map",
        jobs_lab["map"],
        "--avoid-running-jobs",
    )
    assert res.exit_code == 9 and "held: 2 running job(s)" in res.stderr


def test_no_job_running_nothing_held(slurm: SlurmCluster, tmp_path: Path) -> None:
    lab.up(FOUR_HOSTS, (), name=LAB)
    try:
        res = invoke(
            slurm, "isolate", "leaf-01:3", "--lab", LAB, "--min-uplink-share", "0.5", "--avoid-running-jobs"
        )
        assert res.exit_code == 0, res.output
        assert (
            "running jobs the change touches (1 switch-to-switch cable(s) taken out): none of 0" in res.stdout
        )
    finally:
        lab.down(LAB)
