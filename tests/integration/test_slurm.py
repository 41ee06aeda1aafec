"""probes.slurm and the Slurm sweep against a real 4-node Slurm on loopback (tests/slurm.py).

After every test the fixture checks that no job is left in the queue and no step process runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fabric.app.drains.drain import DrainRequest, plan_drains
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.app.sweeps import sweep as sweeps
from fabric.app.sweeps.sweep import SweepContext
from probes.pairs import PairResult, Probe
from probes.perftest import PerftestOptions
from probes.slurm import AllocationRequest, Slurm, SlurmUnavailable
from probes.slurm_parse import parse_reasons
from probes.slurm_sweep import PerftestSteps, SlurmSweep, run_slurm_sweep
from probes.sweep import PairRun, SweepOutcome
from tests.slurm import SlurmCluster, check_clean, slurm, slurm_cluster, start_slurm
from topology.errors import UsageError
from topology.generate import generate, to_ibnetdiscover
from topology.model import Guid

__all__ = ["slurm", "slurm_cluster"]

ROOT = Path(__file__).resolve().parents[2]
FOUR_HOSTS = "leafspine:leaves=2,spines=2,hosts=2,radix=40,speed=HDR"
NODE_OF = {f"cn{k:04d}": f"node{k}" for k in range(1, 5)}


def client(cluster: SlurmCluster) -> Slurm:
    return Slurm(cluster.env, timeout=30.0)


@pytest.mark.slurm
def test_an_exclusive_allocation_is_named_and_released(slurm: SlurmCluster) -> None:
    s = client(slurm)
    req = AllocationRequest(hosts=("node1", "node3"), time_limit_minutes=5, immediate=5)
    with s.allocation(req) as alloc:
        assert alloc.hosts == ("node1", "node3") and alloc.unavailable == ()
        assert alloc.addresses == {"node1": "127.0.0.11", "node3": "127.0.0.13"}
        (job,) = s.jobs(alloc.job_id)
        assert (job.name, job.state, job.nodes) == ("ibfab-sweep", "RUNNING", "node[1,3]")
        # Exclusive: both nodes are wholly the sweep's; the other two stay idle.
        states = {n.name: n.state for n in s.nodes()}
        assert states == {"node1": "ALLOCATED", "node2": "IDLE", "node3": "ALLOCATED", "node4": "IDLE"}
        assert s.idle_nodes() == ["node2", "node4"]
    assert s.jobs(alloc.job_id) == [] and slurm.jobs() == []


@pytest.mark.slurm
def test_steps_run_on_the_node_asked_for(slurm: SlurmCluster) -> None:
    s = client(slurm)
    with s.allocation(AllocationRequest(count=4, time_limit_minutes=5, immediate=5)) as alloc:
        assert alloc.hosts == ("node1", "node2", "node3", "node4")
        for node in alloc.hosts:
            r = s.run_step(alloc, node, ["hostname"], "ibfab-test/hostname", 30)
            assert r.ok and r.stdout.strip() == node and r.host == node
        bad = s.run_step(alloc, "node1", ["sh", "-c", "echo out; exit 3"], "ibfab-test/exit", 30)
        assert bad.failure is None and bad.exit_code == 3 and bad.stdout == "out\n"


@pytest.mark.slurm
def test_hosts_slurm_will_not_give_are_reported_not_waited_for(slurm: SlurmCluster) -> None:
    s = client(slurm)
    s.drain("node2", "cable leaf-01/3 BER 1e-9")
    slurm.client("scontrol", "create", "reservation", "ReservationName=ibfab-test", "Nodes=node4",
                 "StartTime=now", "Duration=10", "Users=root", "Flags=MAINT")  # fmt: skip
    try:
        start = time.monotonic()
        req = AllocationRequest(hosts=("node1", "node2", "node4", "node9"), time_limit_minutes=5, immediate=5)
        with s.allocation(req) as alloc:
            assert alloc.hosts == ("node1",)
            assert [str(u) for u in alloc.unavailable] == [
                "node2 (idle+drain: ibfab: cable leaf-01/3 BER 1e-9)",
                "node4 (reserved (ibfab-test))",
                "node9 (not a Slurm node)",
            ]
        with pytest.raises(SlurmUnavailable, match=r"none of the hosts: node2 \(idle\+drain"):
            s.allocate(AllocationRequest(hosts=("node2",), immediate=5))
        # Asked for by count, salloc itself says no within --immediate.
        with pytest.raises(SlurmUnavailable, match=r"Slurm gave no allocation \(.*Unable to allocate"):
            s.allocate(AllocationRequest(count=4, immediate=2))
        assert time.monotonic() - start < 20
        with s.allocation(
            AllocationRequest(hosts=("node4",), reservation="ibfab-test", immediate=5)
        ) as alloc:
            assert alloc.hosts == ("node4",)
    finally:
        s.resume("node2")
        slurm.client("scontrol", "delete", "ReservationName=ibfab-test")


@pytest.mark.slurm
def test_drain_and_resume_show_in_sinfo_R(slurm: SlurmCluster) -> None:
    s = client(slurm)
    s.drain("node3", "cable leaf-02/1 - cn0003/1:  symbol errors\n rising")
    # What the operator sees (sinfo -R cuts the reason at 20 characters by default).
    (line,) = slurm.client("sinfo", "-R", "-h").stdout.splitlines()
    assert line.startswith("ibfab: cable leaf-02 root") and line.endswith(" node3")
    (d,) = s.drains()
    assert (d.node, d.reason) == ("node3", "ibfab: cable leaf-02/1 - cn0003/1: symbol errors rising")
    (n,) = s.nodes(["node3"])
    assert n.drained and n.reason == d.reason
    s.resume("node3")
    assert parse_reasons(slurm.client("sinfo", "-R", "-h", "-N", "-o", "%N|%T|%u|%H|%E").stdout) == []
    slurm.wait_idle(("node3",))


def _plan(tmp_path: Path, pattern: str = "pairwise") -> SweepContext:

    topo = tmp_path / "fabric.topo"
    topo.write_text(to_ibnetdiscover(generate(FOUR_HOSTS)))
    return sweeps.prepare(Session(sweeps.sweep_source(None, str(topo))), pattern)


@pytest.mark.slurm
def test_real_ib_write_bw_error_recorded_per_pair(slurm: SlurmCluster, tmp_path: Path) -> None:
    ctx = _plan(tmp_path)
    assert len(ctx.plan.probes) == 6 and ctx.plan.rounds == 3
    s = client(slurm)
    done = run_slurm_sweep(
        ctx.plan, s, PerftestSteps(PerftestOptions("ib_write_bw", size=65536, iterations=5)),
        node_of=NODE_OF, timeout=20, base_port=18800, retest=False,
    )  # fmt: skip
    first = [r for r in done.outcome.results if r.attempt == 0]
    assert len(first) == 6 and done.unmeasured == () and done.lost == {}
    for r in first:
        assert r.backend == "slurm" and not r.ok and r.gbps is None
        assert (
            r.error is not None
            and "Did not detect devices" in r.error
            and f"client {NODE_OF[r.client.host]}" in r.error
        )
    # Both sides ran on their own node through Slurm and said so; the raw output is kept per pair.
    assert set(done.outcome.raw_outputs) == {(r.client.guid, r.server.guid, 0) for r in first}
    assert all(
        "Did not detect devices" in c and "Did not detect devices" in sv
        for c, sv in done.outcome.raw_outputs.values()
    )
    assert done.outcome.suspects == ()
    assert s.jobs(done.job_id) == []


class SleepySteps:
    """Step commands that never end by themselves (a hung tool)."""

    name = "slurm"
    server_grace = 0.0

    def begin_round(self, probes: object, attempt: int) -> None:
        pass

    def server(self, probe: Probe, port: int, seconds: float) -> list[str]:
        return ["sleep", "300"]

    def client(self, probe: Probe, port: int, server_address: str) -> list[str]:
        return ["sleep", "300"]

    def judge(self, probe: Probe, run: PairRun, attempt: int, line_rate: float | None) -> PairResult:
        err = run.client.message if run.client.failure else None
        return PairResult(probe.client, probe.server, probe.round, None, None, False, err, self.name, attempt)


@pytest.mark.slurm
def test_a_step_that_times_out_is_a_record_and_the_allocation_is_released(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    ctx = _plan(tmp_path, "rail-pairs")
    s = client(slurm)
    probes = ctx.plan.round_probes(0)
    plan = type(ctx.plan)(**{**ctx.plan.__dict__, "probes": tuple(probes), "rounds": 1})
    start = time.monotonic()
    done = run_slurm_sweep(plan, s, SleepySteps(), node_of=NODE_OF, timeout=2, retest=False)
    assert time.monotonic() - start < 40
    assert done.outcome.results and all(r.error == "step timed out after 2 s" for r in done.outcome.results)
    assert s.jobs(done.job_id) == []  # and the fixture checks no sleep is left on any node


SIGTERM_SCRIPT = """
import sys
from probes.slurm import AllocationRequest, Slurm
s = Slurm({"SLURM_CONF": sys.argv[1]})
with s.allocation(AllocationRequest(hosts=("node1", "node2"), time_limit_minutes=5, immediate=5)) as alloc:
    print(alloc.job_id, flush=True)
    s.run_step(alloc, "node1", ["sleep", "300"], "ibfab-test/sleep", 300)
"""


@pytest.mark.slurm
def test_sigterm_of_the_sweeping_process_releases_its_allocation(slurm: SlurmCluster) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SIGTERM_SCRIPT), str(slurm.conf)],
        stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        job = proc.stdout.readline().strip()
        assert job.isdigit()
        deadline = time.monotonic() + 20
        while not any(
            line.startswith(f"{job}.")
            for line in slurm.client("squeue", "-h", "-s", "-o", "%i").stdout.split()
        ):
            assert time.monotonic() < deadline, "the step never started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert Slurm(slurm.env).jobs(job) == []


# -- the lab's simulated traffic as the step command ----------------------------------------------
def _lab_sweep(
    cluster: SlurmCluster, lab_name: str, tmp_path: Path, **kw: Any
) -> tuple[SweepContext, SlurmSweep]:
    from fabric.lab import simulator as lab
    from probes.labtraffic import parse_error_rates
    from probes.plan import endpoints
    from probes.slurm_sweep import LabSteps

    ctx = sweeps.prepare(Session(Source.lab(lab_name)), "pairwise")
    d = ctx.discovery
    rates = parse_error_rates(lab.console(lab_name, "Dump"))
    done = run_slurm_sweep(
        ctx.plan, Slurm(cluster.env), LabSteps(ctx.plan.paths, rates, tmp_path / "rounds"),
        node_of=NODE_OF, fabric=d.fabric, tables=ctx.tables, candidates=endpoints(d.fabric, d.classification),
        names=sweeps.names_of(d), timeout=30, **kw,
    )  # fmt: skip
    return ctx, done


def _suspects(outcome: SweepOutcome, names: dict[Guid, str]) -> list[tuple[Any, ...]]:
    return [
        (
            frozenset({f"{names[s.link.a.guid]}/{s.link.a.port}", f"{names[s.link.b.guid]}/{s.link.b.port}"}),
            s.score,
            sorted(r.key for r in s.slow_pairs),
            sorted(r.key for r in s.fast_pairs),
        )
        for s in outcome.suspects
    ]


@pytest.fixture
def cable_lab() -> Iterator[str]:
    from fabric.lab import simulator as lab

    # cn0001's own cable trains at 1x: every pair it takes part in is slow.
    lab.up(FOUR_HOSTS, ["degraded-width:leaf-01:1"], name="slurmcable")
    try:
        yield "slurmcable"
    finally:
        lab.down("slurmcable")


@pytest.fixture
def clean_lab() -> Iterator[str]:
    from fabric.lab import simulator as lab

    lab.up(FOUR_HOSTS, (), name="slurmclean")
    try:
        yield "slurmclean"
    finally:
        lab.down("slurmclean")


@pytest.mark.slurm
@pytest.mark.lab
def test_a_lab_sweep_through_slurm_finds_the_planted_cable_as_the_lab_path_does(
    slurm: SlurmCluster, cable_lab: str, tmp_path: Path
) -> None:
    from probes.fanout import HostLocks

    locks = HostLocks()
    held: list[tuple[frozenset[str], bool]] = []

    def watch(step: object) -> None:  # another sweep of this process may not take a host meanwhile
        held.append((locks.busy(), locks.try_acquire(["cn0002"])))

    ctx, done = _lab_sweep(slurm, cable_lab, tmp_path, locks=locks, progress=watch)
    names = sweeps.names_of(ctx.discovery)
    on_lab = Session(Source.lab(cable_lab))
    direct = sweeps.run_lab(sweeps.prepare(on_lab, "pairwise"), on_lab)
    # Same measurements, re-tests, follow-ups and suspects as the lab backend run in this process.
    assert [(r.key, r.attempt, r.gbps, r.ok) for r in done.outcome.results] == [
        (r.key, r.attempt, r.gbps, r.ok) for r in direct.results
    ]
    assert _suspects(done.outcome, names) == _suspects(direct, names)
    top = _suspects(done.outcome, names)[0]
    assert top[0] == {"leaf-01/1", "cn0001 mlx5_0/1"} and top[1] == 1.0
    assert len(done.outcome.suspects) == 1  # healthy cables its slow pairs crossed are not suspects
    assert all(r.backend == "slurm:lab-simulated" for r in done.outcome.results)
    # Each side ran as a step on its own node, and said so.
    for (c, s, _), (c_out, s_out) in done.outcome.raw_outputs.items():
        assert (
            f'"host": "{NODE_OF[_host(ctx, c)]}"' in c_out and f'"host": "{NODE_OF[_host(ctx, s)]}"' in s_out
        )
    # The plan's hosts were held in the shared locks for the whole sweep, and let go after it.
    assert held and all(h == (frozenset(NODE_OF), False) for h in held) and locks.busy() == frozenset()
    assert done.unmeasured == () and Slurm(slurm.env).jobs(done.job_id) == []


def _host(ctx: SweepContext, guid: Guid) -> str:
    return next(e.host for p in ctx.plan.probes for e in (p.client, p.server) if e.guid == guid)


@pytest.mark.slurm
@pytest.mark.lab
def test_a_node_that_dies_mid_sweep_is_recorded_and_the_sweep_completes(
    clean_lab: str, tmp_path: Path
) -> None:
    with start_slurm(tmp_path / "slurm", nodes=4) as cluster:
        killed: list[int] = []

        def kill_after_first_round(step: object) -> None:
            if not killed:
                killed.append(cluster.kill_node("node4"))

        ctx, done = _lab_sweep(cluster, clean_lab, tmp_path, progress=kill_after_first_round)
        assert killed == [cluster.node_pids["node4"]]
        assert set(done.lost) == {"node4"} and "Communication connection failure" in done.lost["node4"]
        # Every pair Slurm could not run involves the dead node, and none counts as a measurement.
        assert done.unmeasured and all(
            "cn0004" in (u.probe.client.host, u.probe.server.host) for u in done.unmeasured
        )
        measured = {r.key for r in done.outcome.results}
        assert not measured & {
            (u.probe.client.guid, u.probe.server.guid) for u in done.unmeasured if u.attempt == 0
        }
        # Round 1 ran whole; the other pairs without node4 ran too, all at full speed.
        first_round = {(p.client.guid, p.server.guid) for p in ctx.plan.round_probes(0)}
        assert first_round <= measured and all(r.ok for r in done.outcome.results)
        # A clean fabric stays quiet: the dead node makes no suspect of its cable.
        assert done.outcome.suspects == ()
        assert Slurm(cluster.env).jobs(done.job_id) == []
        check_clean(cluster)


@pytest.mark.slurm
def test_names_slurm_would_read_as_other_nodes_never_reach_it(slurm: SlurmCluster) -> None:
    # Fabric host names come from NodeDescriptions: 'node[1-4]' is four nodes to Slurm, 'node1,node2'
    # two, 'node#1' a comment in its files. None is put on a command line; each is said once.
    s = client(slurm)
    odd = ("node[1-4]", "node1,node2", "node#1", "$(hostname)")
    free, refused = s.check_hosts(("node1", *odd))
    assert free == ["node1"]
    assert sorted(u.host for u in refused) == sorted(odd)
    assert all(u.why.startswith("not a Slurm node name: ") for u in refused)
    assert s.nodes(["node[1-4]"]) == [] and len(s.nodes(["node1"])) == 1
    with s.allocation(
        AllocationRequest(hosts=("node2", "node[3-4]"), time_limit_minutes=5, immediate=5)
    ) as alloc:
        assert alloc.hosts == ("node2",) and [u.host for u in alloc.unavailable] == ["node[3-4]"]
    plan = plan_drains([DrainRequest("node[3-4]", "BER 1e-9"), DrainRequest("node3", "BER 1e-9")], s)
    bad, good = plan.drains
    assert (
        bad.argv == () and bad.skip is not None and "'node[3-4]' left out of Slurm's node names" in bad.skip
    )
    assert good.skip is None and good.argv[2] == "NodeName=node3"
    with pytest.raises(
        UsageError, match=r"^'node\[3-4\]' left out of Slurm's node names: '\[' is a hostlist range"
    ):
        s.drain("node[3-4]", "BER 1e-9")
    assert s.drains() == []
