"""``ibfab sweep run --launcher slurm`` through the CLI against the real 4-node Slurm (tests/slurm.py).

The fabric's hosts cn0001..cn0004 are the Slurm nodes node1..node4 (a node map says so). After
every test the fixture checks no job is queued and no step process is left.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fabric.app.session import Session
from fabric.app.slurm import NodeMap, parse_node_map
from fabric.app.source import Source
from fabric.app.sweeps import sweep as sweeps
from fabric.app.sweeps.sweep_slurm import SlurmChoice, run_slurm
from fabric.cli.main import main
from probes.fanout import HostLocks
from probes.slurm import Slurm
from tests.slurm import SlurmCluster, slurm, slurm_cluster
from topology.errors import UsageError
from topology.generate import generate, to_ibnetdiscover

__all__ = ["slurm", "slurm_cluster"]

FOUR_HOSTS = "leafspine:leaves=2,spines=2,hosts=2,radix=40,speed=HDR"


@pytest.fixture
def node_map(tmp_path: Path) -> str:
    path = tmp_path / "nodes.map"
    path.write_text("# fabric host  slurm node\ncn[0001-0004] node[1-4]\n")
    return str(path)


@pytest.fixture
def topo(tmp_path: Path) -> str:
    path = tmp_path / "fabric.topo"
    path.write_text(to_ibnetdiscover(generate(FOUR_HOSTS)))
    return str(path)


def invoke(cluster: SlurmCluster | None, *args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, list(args), env={**(cluster.env if cluster else {}), **(env or {})})


def test_node_maps_pair_ranges_and_refuse_what_does_not_pair() -> None:
    m = parse_node_map("cn[0001-0002] node[1-2]  # two\nlogin01 login01-ib\n")
    assert [m.node(h) for h in ("cn0001", "cn0002", "login01", "other")] == [
        "node1",
        "node2",
        "login01-ib",
        "other",
    ]
    assert (m.host("node2"), m.label("node2"), m.label("other")) == ("cn0002", "node2 (cn0002)", "other")
    for bad, why in (
        ("cn[1-3] node[1-2]", "names 3 hosts but node"),
        ("cn1 node1\ncn1 node2", "cn1 is already mapped to node1"),
        ("cn1 node1\ncn2 node1", "Slurm node node1 is already cn1's"),
        ("cn1", "expected 'FABRIC_HOST SLURM_NODE'"),
    ):
        with pytest.raises(UsageError, match=why):
            parse_node_map(bad, "m")
    assert NodeMap().node("x") == "x"


def test_slurm_options_need_the_slurm_launcher(topo: str) -> None:
    res = invoke(None, "sweep", "run", "--input", topo, "--partition", "p", "--idle")
    assert res.exit_code == 2 and "--partition, --idle only apply with --launcher slurm" in res.output
    res = invoke(None, "sweep", "run", "--input", topo, "--launcher", "slurm", "--nodes", "n1", "--idle")
    assert res.exit_code == 2 and "give --nodes RANGE or --idle, not both" in res.output


def test_slurm_not_installed_is_one_line(topo: str, tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    res = invoke(None, "sweep", "run", "--input", topo, "--launcher", "slurm", env={"PATH": str(empty)})
    assert res.exit_code == 9, res.output
    assert res.output.strip().splitlines() == [
        "ibfab: error: Slurm is not installed here (scontrol not found; install slurm-client or sweep over SSH)"
    ]


@pytest.mark.slurm
def test_a_controller_that_does_not_answer_is_one_line(
    slurm: SlurmCluster, topo: str, tmp_path: Path
) -> None:
    conf = tmp_path / "down.conf"
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf.write_text(
        "\n".join(
            f"SlurmctldPort={port}" if line.startswith("SlurmctldPort=") else line
            for line in slurm.conf.read_text().splitlines()
        )
        + "\n"
    )
    start = time.monotonic()
    res = invoke(None, "sweep", "run", "--input", topo, "--launcher", "slurm", env={"SLURM_CONF": str(conf)})
    assert res.exit_code == 9, res.output
    assert res.output.strip().splitlines() == [
        "ibfab: error: Slurm does not answer: slurm_load_node error: Unable to contact slurm controller (connect failure)"
    ]
    assert time.monotonic() - start < 30


@pytest.mark.slurm
def test_hosts_slurm_will_not_give_are_reported_and_the_rest_swept(
    slurm: SlurmCluster, topo: str, node_map: str
) -> None:
    s = Slurm(slurm.env)
    s.drain("node2", "cable leaf-01/2 BER 1e-9")
    try:
        start = time.monotonic()
        res = invoke(slurm, "sweep", "run", "--input", topo, "--pattern", "pairwise", "--launcher", "slurm",
                     "--node-map", node_map, "--timeout", "60", "--no-retest", "--json")  # fmt: skip
        assert res.exit_code == 0, res.output
        assert time.monotonic() - start < 240  # a deadline: the drained node is not waited for
    finally:
        s.resume("node2")
        slurm.wait_idle(("node2",))
    doc = json.loads(res.stdout)
    job = doc["slurm"]
    assert (job["job_name"], job["nodes"], job["hosts"]) == (
        "ibfab-sweep", ["node1", "node3", "node4"], ["cn0001", "cn0003", "cn0004"]
    )  # fmt: skip
    assert job["not_given"] == [
        {"node": "node2", "host": "cn0002", "why": "idle+drain: ibfab: cable leaf-01/2 BER 1e-9"}
    ]
    # The three pairs with cn0002 were not run, and are not slow pairs; the other three ran for real.
    assert len(job["unmeasured"]) == 3 and all(
        "cn0002" in u["client"] + u["server"] for u in job["unmeasured"]
    )
    assert all("node2 is not in Slurm job" in u["why"] for u in job["unmeasured"])
    ran = doc["results"]
    assert len(ran) == 3 and not any("cn0002" in r["client"] + r["server"] for r in ran)
    assert all(r["backend"] == "slurm" and "Did not detect devices" in r["error"] for r in ran)
    assert doc["suspects"] == [] and s.jobs(job["job_id"]) == []


@pytest.mark.slurm
def test_nodes_and_idle_choose_the_hosts_and_say_which_were_left_out(
    slurm: SlurmCluster, topo: str, node_map: str
) -> None:
    base = ["sweep", "run", "--input", topo, "--pattern", "pairwise", "--launcher", "slurm",
            "--node-map", node_map, "--timeout", "60", "--no-retest"]  # fmt: skip
    res = invoke(slurm, *base, "--nodes", "node[1-2]")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert any(line.startswith("slurm job ") and "on node[1-2]: released" in line for line in lines)
    assert "  not swept: node3 (cn0003): not in --nodes node[1-2]" in lines
    assert "  not swept: node4 (cn0004): not in --nodes node[1-2]" in lines
    assert "  5 pair(s) not measured (not counted as slow):" in lines
    # --idle: a node running another job is left out with Slurm's word for it.
    blocker = slurm.client(
        "salloc", "--no-shell", "--exclusive", "-N1", "-w", "node4", "--time=5", "--job-name=other"
    ).stderr
    job = blocker.split()[-1]
    try:
        res = invoke(slurm, *base, "--idle", "--json")
    finally:
        slurm.client("scancel", job)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)["slurm"]
    assert doc["nodes"] == ["node1", "node2", "node3"]
    assert doc["not_given"] == [{"node": "node4", "host": "cn0004", "why": "allocated (running another job)"}]
    res = invoke(slurm, *base, "--nodes", "node9")
    assert res.exit_code == 2 and "--nodes node9 names none of the plan's hosts (node[1-4])" in res.output


@pytest.fixture
def cable_lab() -> Iterator[str]:
    from fabric.lab import simulator as lab

    # cn0001's own cable trains at 1x: every pair it takes part in is slow.
    lab.up(FOUR_HOSTS, ["degraded-width:leaf-01:1"], name="slurmcli")
    try:
        yield "slurmcli"
    finally:
        lab.down("slurmcli")


@pytest.mark.slurm
@pytest.mark.lab
def test_a_lab_sweep_through_slurm_finds_the_planted_cable_as_the_lab_path_does(
    slurm: SlurmCluster, cable_lab: str, node_map: str
) -> None:
    direct = invoke(slurm, "sweep", "run", "--lab", cable_lab, "--pattern", "pairwise", "--json")
    assert direct.exit_code == 0, direct.output
    through = invoke(slurm, "sweep", "run", "--lab", cable_lab, "--pattern", "pairwise", "--json",
                     "--launcher", "slurm", "--node-map", node_map, "--timeout", "30")  # fmt: skip
    assert through.exit_code == 0, through.output
    a, b = json.loads(direct.stdout), json.loads(through.stdout)
    assert (a["backend"], b["backend"]) == ("lab-simulated", "slurm:lab-simulated")

    def measured(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(r["client"], r["server"], r["attempt"], r["gbps"], r["ok"]) for r in doc["results"]]

    assert measured(b) == measured(a) and b["suspects"] == a["suspects"]
    assert (b["retest_passes"], b["followup_probes"]) == (a["retest_passes"], a["followup_probes"])
    top = b["suspects"][0]
    assert {f"{top['a']['name']}/{top['a']['port']}", f"{top['b']['name']}/{top['b']['port']}"} == {
        "leaf-01/1",
        "cn0001 mlx5_0/1",
    }
    job = b["slurm"]
    assert job["nodes"] == ["node1", "node2", "node3", "node4"] and job["not_given"] == []
    assert job["unmeasured"] == [] and job["lost"] == []
    assert Slurm(slurm.env).jobs(job["job_id"]) == []
    # Stored like any sweep, with the job it ran as.
    shown = invoke(slurm, "sweep", "show", str(b["sweep_id"]), "--json")
    assert (
        json.loads(shown.stdout)["source"]
        == f"slurm:lab-simulated: lab {cable_lab}, slurm job {job['job_id']}"
    )


@pytest.mark.slurm
@pytest.mark.lab
def test_host_locks_hold_across_a_slurm_sweep_and_another_sweep(
    slurm: SlurmCluster, cable_lab: str, node_map: str
) -> None:
    locks = HostLocks()
    ctx = sweeps.prepare(Session(Source.lab(cable_lab)), "pairwise")
    got: list[float] = []

    def other_sweep() -> None:
        locks.acquire(["cn0002"])
        got.append(time.monotonic())

    other = threading.Thread(target=other_sweep)
    seen: list[bool] = []

    def each_step(step: object) -> None:  # a sweep over SSH wants cn0002 while Slurm holds it
        if not other.is_alive() and not got:
            other.start()
        seen.append(bool(got))

    report = run_slurm(ctx, SlurmChoice(node_map=parse_node_map("cn[0001-0004] node[1-4]")),
                       Session(Source.lab(cable_lab)), timeout=30, locks=locks, progress=each_step, env=slurm.env)  # fmt: skip
    other.join(10)
    assert report.outcome.suspects and len(seen) >= 3
    # The other sweep waited for cn0002 through every step of the Slurm sweep, and got it after.
    assert not any(seen) and len(got) == 1 and locks.busy() == frozenset({"cn0002"})
    locks.release(["cn0002"])


@pytest.mark.slurm
@pytest.mark.lab
def test_a_scheduled_sweep_runs_through_slurm_in_the_daemon(
    slurm: SlurmCluster, cable_lab: str, node_map: str, tmp_path: Path
) -> None:
    db = str(tmp_path / "store.db")
    added = invoke(slurm, "schedule", "add", "weekly", "--kind", "sweep", "--every", "7d", "--lab", cable_lab,
                   "--db", db, "--", "--pattern", "pairwise", "--launcher", "slurm", "--node-map", node_map,
                   "--timeout", "30", "--no-retest")  # fmt: skip
    assert added.exit_code == 0, added.output
    listed = json.loads(invoke(None, "schedule", "list", "--db", db, "--json").stdout)
    (entry,) = listed if isinstance(listed, list) else listed["schedules"]
    assert entry["args"]["launcher"] == "slurm" and entry["args"]["node_map"] == node_map
    ran = invoke(slurm, "daemon", "--once", "--db", db)
    assert ran.exit_code == 0, ran.output
    assert "weekly" in ran.output and " ok (" in ran.output, ran.output
    shown = json.loads(invoke(None, "sweep", "show", "1", "--db", db, "--json").stdout)
    # Stored as `sweep run --launcher slurm` stores it: the job it ran as, the planted cable on top.
    assert {r["backend"] for r in shown["results"]} == {"slurm:lab-simulated"} and len(shown["results"]) == 6
    assert re.fullmatch(rf"slurm:lab-simulated: lab {cable_lab}, slurm job \d+", shown["source"])
    top = shown["suspects"][0]
    assert {f"{top['a']['name']}/{top['a']['port']}", f"{top['b']['name']}/{top['b']['port']}"} == {
        "leaf-01/1",
        "cn0001 mlx5_0/1",
    }
    job_id = shown["source"].rsplit(" ", 1)[1]
    assert Slurm(slurm.env).jobs(job_id) == []  # released when the job ended


def test_a_scheduled_slurm_sweep_is_checked_when_added(tmp_path: Path, node_map: str) -> None:
    db = str(tmp_path / "store.db")
    base = ["schedule", "add", "w", "--kind", "sweep", "--every", "1d", "--db", db]
    res = invoke(None, *base, "--", "--input", "f.topo", "--partition", "gpu")
    assert res.exit_code == 2 and "--partition only apply with --launcher slurm" in res.output
    res = invoke(None, *base, "--inventory", node_map, "--", "--input", "f.topo", "--launcher", "slurm")
    assert res.exit_code == 2 and "drop --inventory" in res.output
    res = invoke(None, *base, "--", "--launcher", "slurm")
    assert res.exit_code == 2 and "needs --lab NAME or the fabric: add -- --input TOPO" in res.output
    missing = str(tmp_path / "no-such-map")
    res = invoke(None, *base, "--", "--input", "f.topo", "--launcher", "slurm", "--node-map", missing)
    assert res.exit_code == 3 and f"{missing}: node map: No such file or directory" in res.output
    res = invoke(
        None, *base, "--", "--input", "f.topo", "--launcher", "slurm", "--partition", "gpu", "--idle"
    )
    assert res.exit_code == 0, res.output
    listed = invoke(None, "schedule", "list", "--db", db)
    assert "input f.topo through slurm (partition gpu)" in listed.output
