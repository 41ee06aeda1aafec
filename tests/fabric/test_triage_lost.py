"""`ibfab triage` with a node lost mid-triage: a node finding with its evidence, never a cable
suspect; the bisection goes on without it. On the lab's simulated backend (a node planted lost
from a round on, alone and beside a planted slow node or cable), through the launched backend
(mpirun whose ssh cannot reach a node; the head hosts faked at their command boundary), and the
Slurm classifier on srun's and scontrol's words as a real Slurm 22.05 printed them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import pytest

from fabric.app.triage.bisect import PairOutcome, RunOutcome, TriageReport, round_budget, triage
from fabric.app.triage.lost import NodeLost, Unjudged, mpirun_launch, slurm_pair, slurm_step, ssh_pairs_lost
from fabric.app.triage.records import triage_to_dict
from fabric.app.triage.remote import LaunchedBackend, PairsOnFabric
from fabric.app.triage.simulated import SimulatedBackend
from fabric.present.triage_rounds import render_triage
from probes.inventory import HostEntry
from probes.labnccl import PlantedNode, format_planted, parse_planted
from probes.nccl import NcclTestOptions
from probes.nccl_model import fabric_facts
from probes.perftest import PerftestOptions
from probes.slurm_parse import SlurmNode, parse_nodes
from probes.sweep import SshPerftestBackend
from probes.transport import CommandResult, FailureKind
from tests.advise_fabrics import fabric_of
from tests.conftest import REALDATA
from tests.fabric.test_triage import SPECS, FakeHeads, FinePairs, host_cable, run_triage
from topology.errors import ParseError

LOST = "dgx-0003"


def lost_at(host: str, from_round: int) -> dict[str, PlantedNode]:
    return {host: PlantedNode(host, "lost", 1.0, from_round)}


def no_cable_blamed(report: TriageReport) -> None:
    c = report.culprit
    assert c is None or c.kind == "node"
    assert not any(r.slow for rnd in report.rounds for r in rnd.runs if r.unjudged is not None)


@pytest.mark.parametrize("n", [3, 4, 8, 16])
@pytest.mark.parametrize("from_round", [1, 2, 3, 4])
def test_a_lost_node_alone_is_named_lost_and_the_rest_cleared(n: int, from_round: int) -> None:
    report = run_triage(SPECS[16 if n > 8 else 8], n, planted=lost_at(LOST, from_round))
    no_cable_blamed(report)
    assert report.culprit is None and report.undecided is None and not report.fabric_fine
    if not report.lost:  # the triage ended (the rest found clean) before the node was lost
        assert len(report.rounds) < from_round and report.not_judged == ()
        return
    [lost] = report.lost
    assert lost.host == LOST and lost.round >= from_round and "planted lost" in lost.said
    assert LOST in report.rounds[lost.round - 1].runs[0].hosts or any(
        LOST in r.hosts for r in report.rounds[lost.round - 1].runs
    )
    # nothing ran with it after it was lost; every test not judged is one of its own
    later = [r for rnd in report.rounds[lost.round :] for r in rnd.runs]
    assert all(LOST not in r.hosts for r in later)
    assert all(LOST in r.hosts for _, r in report.not_judged)
    assert len(report.rounds) <= report.budget == round_budget(n) + 1


@pytest.mark.parametrize("n", [4, 8, 16])
@pytest.mark.parametrize("from_round", [1, 2, 3])
@pytest.mark.parametrize(("slow", "kind"), [("dgx-0002", "pcie"), ("dgx-0004", "pcie"), ("dgx-0004", "gpu")])
def test_a_slow_node_is_still_found_exactly_beside_a_lost_one(
    n: int, from_round: int, slow: str, kind: str
) -> None:
    planted = {**lost_at("dgx-0001", from_round), slow: PlantedNode(slow, kind, 0.5)}
    report = run_triage(SPECS[16 if n > 8 else 8], n, planted=planted)
    c = report.culprit
    assert c is not None and (c.kind, c.hosts) == ("node", (slow,)), c
    assert [x.host for x in report.lost] in ([], ["dgx-0001"])
    assert any(r.slow and slow in r.hosts for _, r in c.evidence)
    assert len(report.rounds) <= report.budget


@pytest.mark.parametrize("n", [4, 8, 16])
@pytest.mark.parametrize("from_round", [1, 2])
def test_a_slow_cable_is_still_found_exactly_beside_a_lost_node(n: int, from_round: int) -> None:
    spec = SPECS[16 if n > 8 else 8]
    fault = f"degraded-width:{host_cable(fabric_of(spec), 'dgx-0003', 2)}"
    report = run_triage(spec, n, (fault,), planted=lost_at("dgx-0001", from_round))
    c = report.culprit
    assert c is not None and (c.kind, c.hosts, c.rail) == ("cable", ("dgx-0003",), 2), c
    assert [x.host for x in report.lost] == ["dgx-0001"]
    assert all("dgx-0001" not in r.hosts for _, r in c.evidence)


def test_a_clean_set_loses_nothing_and_blames_nothing() -> None:
    report = run_triage("rail-small", 8)
    assert report.fabric_fine and report.lost == () and report.undecided is None and report.not_judged == ()
    doc = triage_to_dict(report)
    assert doc["lost_nodes"] == [] and doc["undecided"] is None and doc["slurm_job_ids"] == []


def test_the_report_says_lost_drain_and_never_cable() -> None:
    report = run_triage("rail-small", 8, planted=lost_at(LOST, 2))
    text = render_triage(report)
    assert (
        f"node {LOST}: LOST in round 2 (it stopped answering): drain it and check the node, not its cables"
        in text
    )
    assert "culprit" not in text and "the fabric is fine" not in text
    assert f"without {LOST}, which could not be judged" in text
    doc = json.loads(json.dumps(triage_to_dict(report)))
    [lost] = doc["lost_nodes"]
    assert (lost["host"], lost["round"], lost["action"], lost["slurm_state"]) == (LOST, 2, "drain", None)
    assert doc["culprit"] is None and not doc["fabric_fine"]
    pairs = doc["rounds"][1]
    assert pairs["ruled_out"] is None
    mine = [t for t in pairs["tests"] if LOST in t["hosts"]]
    assert mine and all(t["not_judged"]["reason"] == "node_lost" and not t["slow"] for t in mine)


def test_the_whole_set_run_without_a_lost_node_names_the_gap() -> None:
    """After dgx-0006 is lost the whole set runs on 7 hosts: its label must not read as the 8
    (first .. last), but as the hosts that ran."""
    report = run_triage("rail-small", 8, planted=lost_at("dgx-0006", 2))
    [whole] = [r for rnd in report.rounds if rnd.kind == "whole set" for r in rnd.runs]
    assert "dgx-0006" not in whole.hosts and len(whole.hosts) == 7
    assert whole.label == "dgx-[0001-0005,0007-0008] (7 hosts)"
    assert "dgx-[0001-0005,0007-0008] (7 hosts): " in render_triage(report)


class UnknownFailure:
    """The lab backend, but from round 3 on every collective fails to start for a reason that names
    no node (srun's words as a real Slurm printed them)."""

    SAID = "srun: error: Unable to create step for job 7: Requested node configuration is not available"

    def __init__(self, inner: SimulatedBackend) -> None:
        self.inner = inner
        self.name = inner.name
        self.pairs = inner.pairs
        self.single_nodes = inner.single_nodes

    def collectives(self, sets: Sequence[Sequence[str]]) -> list[RunOutcome]:
        return [RunOutcome(tuple(s), None, self.SAID, unjudged=Unjudged((), self.SAID)) for s in sets]


def test_a_test_failed_for_a_reason_not_known_blames_nothing() -> None:
    d = fabric_of("rail-small")
    facts = fabric_facts(d.fabric, d.classification, "rail-small")
    hosts = sorted(facts.hosts)
    planted = {"dgx-0006": PlantedNode("dgx-0006", "pcie", 0.5)}
    report = triage(
        hosts, facts, UnknownFailure(SimulatedBackend(d.fabric, d.classification, facts, planted))
    )
    assert report.culprit is None and report.lost == () and report.undecided == "unknown_failure"
    assert not report.fabric_fine and len(report.rounds) == 3
    assert [r.unjudged for _, r in report.undecided_evidence] == [Unjudged((), UnknownFailure.SAID)] * 2
    text = render_triage(report)
    assert "undecided: a test did not run, for a reason that names no node: nothing is blamed" in text
    assert "not judged: did not run, for a reason not known (srun: error: Unable to create step" in text


# --- SSH: mpirun whose ssh cannot reach a node -------------------------------------------------


class LosingHeads(FakeHeads):
    """mpirun on the head: after its first launches, any launch over ``lost`` fails as Open MPI
    does when ssh cannot reach a node (its banner, then ssh's own line)."""

    def __init__(self, lost: str, after: int) -> None:
        super().__init__()
        self.lost, self.after = lost, after

    def __call__(self, head: str, argv: Sequence[str], timeout: float) -> CommandResult:
        if argv[0] == "mpirun" and len(self.launches) >= self.after:
            hosts = self.hostfiles[argv[argv.index("--hostfile") + 1]]
            if self.lost in hosts:
                self.launches.append(tuple(hosts))
                err = (
                    f"ssh: connect to host {self.lost} port 22: No route to host\n"
                    "--------------------------------------------------------------------------\n"
                    "ORTE was unable to reliably start one or more daemons.\n"
                )
                return CommandResult(head, tuple(argv), 1, "", err, 1.0)
        return super().__call__(head, argv, timeout)


def test_mpirun_that_cannot_reach_a_node_loses_it_and_goes_on() -> None:
    d = fabric_of("rail-small")
    facts = fabric_facts(d.fabric, d.classification, "rail-small")
    design = {g: 400.0 for g, c in d.classification.nodes.items() if c.tier == 0}
    heads = LosingHeads("dgx-0002", after=8)  # answers its run alone, lost in the collectives
    backend = LaunchedBackend(
        "ssh", heads, NcclTestOptions("all_reduce_perf", min_bytes="1M", max_bytes="8G"), FinePairs(),
        PairsOnFabric(d.fabric, d.classification, design),
        lost_of=lambda hosts, res: mpirun_launch(hosts, res, hosts[0]),
    )  # fmt: skip
    report = triage(sorted(facts.hosts), facts, backend)
    # the slow node of the fake heads (dgx-0006) is still found; dgx-0002 is lost, not blamed
    c = report.culprit
    assert c is not None and (c.kind, c.hosts) == ("node", ("dgx-0006",))
    [lost] = report.lost
    assert (lost.host, lost.round) == ("dgx-0002", 3)
    assert lost.said == "ssh: connect to host dgx-0002 port 22: No route to host"


class LostHead(FakeHeads):
    """After ``after`` launches, ``lost`` answers no ssh at all (the transport's failure record)."""

    def __init__(self, lost: str, after: int) -> None:
        super().__init__()
        self.lost, self.after = lost, after

    def __call__(self, head: str, argv: Sequence[str], timeout: float) -> CommandResult:
        if head == self.lost and len(self.launches) >= self.after:
            return CommandResult(
                head, tuple(argv), None, "", "", 0.0, FailureKind.UNREACHABLE, "No route to host"
            )
        return super().__call__(head, argv, timeout)


def test_a_head_that_stops_answering_is_lost_not_a_crash() -> None:
    d = fabric_of("rail-small")
    facts = fabric_facts(d.fabric, d.classification, "rail-small")
    design = {g: 400.0 for g, c in d.classification.nodes.items() if c.tier == 0}
    heads = LostHead("dgx-0001", after=8)  # the first host: the head of the first half
    backend = LaunchedBackend(
        "ssh", heads, NcclTestOptions("all_reduce_perf", min_bytes="1M", max_bytes="8G"), FinePairs(),
        PairsOnFabric(d.fabric, d.classification, design),
        lost_of=lambda hosts, res: mpirun_launch(hosts, res, hosts[0]),
    )  # fmt: skip
    report = triage(sorted(facts.hosts), facts, backend)
    c = report.culprit
    assert c is not None and (c.kind, c.hosts) == ("node", ("dgx-0006",))
    assert [(x.host, x.round, x.said) for x in report.lost] == [
        ("dgx-0001", 3, "ssh dgx-0001: No route to host")
    ]


def test_mpirun_classifier() -> None:
    hosts = ["dgx-0001", "dgx-0002"]
    ok = CommandResult("dgx-0001", ("mpirun",), 0, "", "", 1.0)
    assert mpirun_launch(hosts, ok, "dgx-0001") is None
    head = CommandResult(
        "dgx-0001", ("mpirun",), None, "", "", 0.0, FailureKind.UNREACHABLE, "No route to host"
    )
    assert mpirun_launch(hosts, head, "dgx-0001") == Unjudged(
        (NodeLost("dgx-0001", "ssh dgx-0001: No route to host"),), "No route to host"
    )
    cuda = CommandResult("dgx-0001", ("mpirun",), 1, "", "dgx-0002: Test CUDA failure common.cu:1304\n", 1.0)
    assert mpirun_launch(hosts, cuda, "dgx-0001") is None  # the tool's own failure: judged as such
    other = CommandResult(
        "dgx-0001", ("mpirun",), 1, "", "ssh: connect to host dgx-0099 port 22: refused\n", 1.0
    )
    assert mpirun_launch(hosts, other, "dgx-0001") is None  # no host of this test


# --- Slurm: srun's words and the node's state (Slurm 22.05, node3's slurmd killed mid-job) ------

LAUNCH_FAILED = (
    "srun: error: Task launch for StepId=1.1 failed on node node3: Communication connection failure\n"
    "srun: error: Application launch failed: Communication connection failure\n"
    "srun: Job step aborted\n"
)
NO_STEP = "srun: error: Unable to create step for job 1: Requested node configuration is not available\n"
NODE = (
    "NodeName={name} Arch=x86_64 CoresPerSocket=1  CPUAlloc=8 CPUEfctv=8 CPUTot=8 NodeAddr=127.0.0.1{k} "
    "NodeHostName=localhost Port=33463 Version=22.05.8 State={state} ThreadsPerCore=1 Partitions=ibfab  "
    "BootTime=2026-11-28T07:37:49 SlurmdStartTime=2026-11-28T14:09:07 CfgTRES=cpu=8,mem=1M,billing=8{reason}"
)
NODE_MAP = {"cn0002": "node2", "cn0003": "node3"}


def states(**state: str) -> list[SlurmNode]:
    text = "\n".join(
        NODE.format(
            name=n, k=n[-1], state=s,
            reason=" Reason=Not responding [root@2026-11-28T14:09:25]" if s.startswith("DOWN") else "",
        )
        for n, s in state.items()
    )  # fmt: skip
    return parse_nodes(text)


def step(stderr: str, exit_code: int | None = 233) -> CommandResult:
    return CommandResult("slurm", ("srun",), exit_code, "", stderr, 6.0)


def test_srun_naming_the_node_loses_it_with_its_state() -> None:
    read = states(node2="ALLOCATED", node3="ALLOCATED+NOT_RESPONDING")
    u = slurm_step(["cn0002", "cn0003"], step(LAUNCH_FAILED), NODE_MAP, lambda nodes: read)
    said = "srun: error: Task launch for StepId=1.1 failed on node node3: Communication connection failure"
    assert u == Unjudged(
        (NodeLost("cn0003", said, "allocated+not_responding"),),
        "srun: error: Application launch failed: Communication connection failure",
    )


def test_a_node_slurm_set_down_is_lost_though_srun_names_none() -> None:
    read = states(node2="ALLOCATED", node3="DOWN+NOT_RESPONDING")
    u = slurm_step(["cn0002", "cn0003"], step(NO_STEP, 1), NODE_MAP, lambda nodes: read)
    assert u is not None and [(x.host, x.state) for x in u.lost] == [
        ("cn0003", "down+not_responding: Not responding")
    ]
    assert u.said == NO_STEP.strip()


def test_a_step_that_did_not_start_naming_no_node_blames_nothing() -> None:
    read = states(node2="ALLOCATED", node3="ALLOCATED")
    u = slurm_step(["cn0002", "cn0003"], step(NO_STEP, 1), NODE_MAP, lambda nodes: read)
    assert u is not None and u.lost == () and u.reason == "unknown"
    assert u.said.startswith(NO_STEP.strip()) and "Slurm shows none of node2, node3 down" in u.said


def test_a_step_that_ran_and_failed_is_the_tools_failure() -> None:
    read = states(node2="ALLOCATED", node3="ALLOCATED")
    cuda = "srun: error: node3: task 0: Exited with exit code 1\n"
    assert slurm_step(["cn0002", "cn0003"], step(cuda, 1), NODE_MAP, lambda nodes: read) is None
    assert slurm_step(["cn0002"], step("", 0), NODE_MAP, lambda nodes: read) is None
    timed_out = CommandResult(
        "slurm", ("srun",), None, "", "", 5.0, FailureKind.COMMAND_TIMEOUT, "step timed out after 5 s"
    )
    assert slurm_step(["cn0002"], timed_out, NODE_MAP, lambda nodes: read) is None


def test_a_pair_slurm_did_not_run() -> None:
    said = {"node3": "Task launch for StepId=4.2 failed on node node3: Communication connection failure"}
    host_of = {v: k for k, v in NODE_MAP.items()}
    u = slurm_pair(
        ["node2", "node3"], said, host_of, lambda nodes: states(node2="ALLOCATED", node3="ALLOCATED"), "why"
    )
    assert [(x.host, x.said) for x in u.lost] == [("cn0003", f"node3: {said['node3']}")]
    # srun's step-creation line names no node and Slurm shows none down: not known, nothing lost
    vague = {"node3": "Job step creation temporarily disabled, retrying"}
    u = slurm_pair(
        ["node2", "node3"], vague, host_of, lambda nodes: states(node2="ALLOCATED", node3="ALLOCATED"), "why"
    )
    assert u == Unjudged((), "why")


def test_a_lost_plant_round_trips() -> None:
    nodes = {
        "dgx-0003": PlantedNode("dgx-0003", "lost", 1.0, 2),
        "dgx-0006": PlantedNode("dgx-0006", "pcie", 0.5),
    }
    assert parse_planted(format_planted(nodes)) == nodes
    bad = format_planted({"dgx-0003": PlantedNode("dgx-0003", "lost", 1.0, 0)})
    with pytest.raises(ParseError, match="round 0"):
        parse_planted(bad, "nodes.json")


def test_a_slow_node_then_lost_is_not_blamed_by_elimination() -> None:
    """dgx-0004 makes its half slow (PCIe-bound), then stops answering: the half's hosts still
    answering run at rate without it. Its slowness is not placed on them, nor guessed on it."""
    # one node both slow and (later) lost: two plants of it, keyed apart
    backend_planted = {
        "dgx-0004": PlantedNode("dgx-0004", "pcie", 0.5),
        "dgx-0004-lost": PlantedNode("dgx-0004", "lost", 1.0, 4),
    }
    d = fabric_of("rail-small")
    facts = fabric_facts(d.fabric, d.classification, "rail-small")
    sim = SimulatedBackend(d.fabric, d.classification, facts, backend_planted)
    report = triage(sorted(facts.hosts), facts, sim)
    assert report.culprit is None and [(x.host, x.round) for x in report.lost] == [("dgx-0004", 4)]
    assert report.undecided == "suspects_lost"
    [(n, slow_half)] = report.undecided_evidence[:1]
    assert n == 3 and slow_half.slow and "dgx-0004" in slow_half.hosts
    assert "the slow set's hosts still answering ran at rate without the lost node" in render_triage(report)


def test_too_few_hosts_left_is_said() -> None:
    planted = {**lost_at("dgx-0001", 1), **lost_at("dgx-0002", 2)}
    report = run_triage("rail-small", 3, planted=planted)
    assert report.culprit is None and report.undecided == "too_few_hosts"
    assert [(x.host, x.round) for x in report.lost] == [("dgx-0001", 1), ("dgx-0002", 2)]


class UnknownPair:
    """The lab backend, but one pair of the ring does not run for a reason that names no node."""

    SAID = "srun: error: Job step creation temporarily disabled, retrying"

    def __init__(self, inner: SimulatedBackend) -> None:
        self.inner = inner
        self.name = inner.name
        self.single_nodes = inner.single_nodes
        self.collectives = inner.collectives

    def pairs(self, pairs: Sequence[tuple[str, str, int]]) -> list[PairOutcome]:
        out = self.inner.pairs(pairs)
        first = out[0]
        return [replace(first, gbps=None, error=self.SAID, unjudged=Unjudged((), self.SAID)), *out[1:]]


def test_a_pair_that_did_not_run_for_a_reason_not_known_clears_nothing_and_blames_nothing() -> None:
    d = fabric_of("rail-small")
    facts = fabric_facts(d.fabric, d.classification, "rail-small")
    report = triage(
        sorted(facts.hosts), facts, UnknownPair(SimulatedBackend(d.fabric, d.classification, facts, {}))
    )
    assert report.culprit is None and report.lost == () and report.undecided is None
    assert report.rounds[1].cleared_kind is None and len(report.not_judged) == 1
    assert not report.fabric_fine  # a test not judged: the fabric is not cleared
    text = render_triage(report)
    assert "1 test(s) did not run, for a reason not known (above): nothing is blamed" in text
    assert (
        f"dgx-0001 -> dgx-0002 rail 0: not judged: did not run, for a reason not known ({UnknownPair.SAID})"
        in text
    )


class Hosts:
    """Hosts at their SSH boundary for ib_write_bw: each prints the real HDR capture, except
    ``lost``, which ssh cannot reach (the transport's failure record)."""

    GOOD = (REALDATA / "ib_write_bw" / "superbench-loopback-8M-hdr-server-client-concat.txt").read_text()

    def __init__(self, host: str, lost: str) -> None:
        self._host, self.lost = host, lost

    @property
    def host(self) -> str:
        return self._host

    def run(self, argv: Sequence[str], timeout: float) -> CommandResult:
        if self._host == self.lost:
            return CommandResult(
                self._host, tuple(argv), None, "", "", 0.0, FailureKind.UNREACHABLE, "No route to host"
            )
        out = self.GOOD if argv[0] != "sh" or "exec" in argv[-1] else ""
        return CommandResult(self._host, tuple(argv), 0, out, "", 0.1)

    def require(self, result: CommandResult, ok_codes: Sequence[int] = (0,)) -> CommandResult:
        return result

    def close(self) -> None:
        pass


def test_ssh_pairs_of_a_host_ssh_cannot_reach_lose_it_not_its_cables() -> None:
    """Before, each pair of the host was a failed (slow) pair both ways: its cable on rail 0 was
    named. Now the host is lost in the pairs round and the rest is triaged without it."""
    d = fabric_of("rail-small")
    facts = fabric_facts(d.fabric, d.classification, "rail-small")
    hosts = sorted(facts.hosts)
    design = {g: 200.0 for g, c in d.classification.nodes.items() if c.tier == 0}
    pairs = SshPerftestBackend(
        {h: HostEntry(h) for h in hosts}, lambda e: Hosts(e.name, "dgx-0002"), PerftestOptions("ib_write_bw"),
        start_delay=0.0, line_rates=design,
    )  # fmt: skip
    backend = LaunchedBackend(
        "ssh", LosingHeads("dgx-0002", after=8), NcclTestOptions("all_reduce_perf", min_bytes="1M", max_bytes="8G"),
        pairs, PairsOnFabric(d.fabric, d.classification, design),
        lost_of=lambda hosts, res: mpirun_launch(hosts, res, hosts[0]), pairs_lost=ssh_pairs_lost(pairs),
    )  # fmt: skip
    report = triage(hosts, facts, backend)
    assert [(x.host, x.round, x.said) for x in report.lost] == [
        ("dgx-0002", 2, "ssh dgx-0002: No route to host")
    ]
    mine = [r for r in report.rounds[1].runs if "dgx-0002" in r.hosts]
    assert len(mine) == 2 * 8 and all(not r.slow and r.unjudged is not None for r in mine)
    assert not any(r.slow for r in report.rounds[1].runs)  # the other pairs ran at the HDR rate
    # the slow node of the fake heads (dgx-0006) is still found, without dgx-0002
    c = report.culprit
    assert c is not None and (c.kind, c.hosts) == ("node", ("dgx-0006",))
