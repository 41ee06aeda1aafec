"""`ibfab triage`: each planted slow node (GPU-bound, PCIe-bound) and slow cable found alone, a
clean set cleared, within ceil(log2 n)+2 rounds, on the simulated backend over generated fabrics;
and the launched backend (nccl-tests through a launcher, parsed and judged) with the head host
faked at its command boundary."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from click.testing import CliRunner

from fabric.app.discovery.discover import Discovery
from fabric.app.triage.bisect import PairOutcome, TriageReport, round_budget, triage
from fabric.app.triage.remote import LaunchedBackend, PairsOnFabric
from fabric.app.triage.simulated import SimulatedBackend
from fabric.cli.main import main
from probes.labnccl import PlantedNode
from probes.nccl import NcclTestOptions
from probes.nccl_model import fabric_facts
from probes.pairs import PairResult, Probe
from probes.transport import CommandResult
from tests import ncclforms as nf
from tests.advise_fabrics import fabric_of

SPECS = {8: "rail-small", 16: "rail:units=2,nodes=8,hcas=4,spines=4,radix=64,speed=NDR"}


def run_triage(
    spec: str, n: int, faults: tuple[str, ...] = (), planted: dict[str, PlantedNode] | None = None
) -> TriageReport:
    d = fabric_of(spec, faults)
    facts = fabric_facts(d.fabric, d.classification, spec)
    hosts = sorted(facts.hosts)[:n]
    return triage(hosts, facts, SimulatedBackend(d.fabric, d.classification, facts, planted or {}))


def host_cable(d: Discovery, host: str, rail: int) -> str:
    """The leaf port of ``host``'s HCA on ``rail``, as the generator's fault grammar names it."""
    [guid] = [
        g for g, c in d.classification.nodes.items() if c.host == host and c.rail == rail and c.tier == 0
    ]
    [lk] = d.fabric.links_of(guid)
    leaf = lk.other(guid)
    return f"{d.classification.nodes[leaf.guid].name}:{leaf.port}"


@pytest.mark.parametrize("n", [3, 4, 5, 8, 16])
def test_a_clean_set_is_cleared(n: int) -> None:
    report = run_triage(SPECS[16 if n > 8 else 8], n)
    assert report.culprit is None and len(report.rounds) <= round_budget(n)
    assert [r.cleared_kind for r in report.rounds[:2]] == ["gpus", "cables"]
    assert not any(run.slow for r in report.rounds for run in r.runs)


@pytest.mark.parametrize("n", [3, 4, 5, 8, 16])
@pytest.mark.parametrize("kind", ["gpu", "pcie"])
def test_each_slow_node_is_found_alone(n: int, kind: str) -> None:
    spec = SPECS[16 if n > 8 else 8]
    hosts = sorted(fabric_facts(fabric_of(spec).fabric, fabric_of(spec).classification, spec).hosts)[:n]
    for host in hosts:
        report = run_triage(spec, n, planted={host: PlantedNode(host, kind, 0.5)})
        c = report.culprit
        assert c is not None and (c.kind, c.hosts) == ("node", (host,)), (host, c)
        assert len(report.rounds) <= round_budget(n)
        assert c.reason in (
            ("single_node_slow",) if kind == "gpu" else ("alone_with_cleared", "by_elimination")
        )
        assert c.evidence and any(r.slow and host in r.hosts for _, r in c.evidence)
        if kind == "gpu":
            assert len(report.rounds) == 1
        else:  # GPUs and cables are fine alone: only the collective sees it
            assert [r.cleared_kind for r in report.rounds[:2]] == ["gpus", "cables"]


@pytest.mark.parametrize(
    ("n", "host", "rail"), [(8, "dgx-0003", 2), (8, "dgx-0008", 7), (3, "dgx-0001", 0), (16, "dgx-0012", 3)]
)
@pytest.mark.parametrize("how", ["degraded-width", "degraded-speed"])
def test_each_slow_cable_is_found_alone(n: int, host: str, rail: int, how: str) -> None:
    spec = SPECS[16 if n > 8 else 8]
    fault = f"{how}:{host_cable(fabric_of(spec), host, rail)}"
    report = run_triage(spec, n, (fault,))
    c = report.culprit
    assert c is not None and (c.kind, c.hosts, c.rail) == ("cable", (host,), rail), c
    assert c.hca == f"mlx5_{rail}" and c.trained_below is not None and c.trained_below[0] < c.trained_below[1]
    assert len(report.rounds) == 2 <= round_budget(n)
    assert len(c.evidence) == 2 and all(host in r.hosts and r.slow and r.rail == rail for _, r in c.evidence)


def test_two_hosts_cannot_tell_a_pcie_bound_one() -> None:
    report = run_triage("rail-small", 2, planted={"dgx-0002": PlantedNode("dgx-0002", "pcie", 0.5)})
    assert report.culprit is not None and report.culprit.kind == "pair" and len(report.rounds) == 3


# --- the launched backend: nccl-tests through a launcher, read and judged -----------------------

SLOW = "dgx-0006"


def _nccl_output(hosts: Sequence[str], per_node: int) -> str:
    """What nccl-tests prints for a run over ``hosts`` (built from its formats): slow where SLOW
    takes part (and its GPUs are fine alone)."""
    ranks = nf.ranks_of(list(hosts), per_node, [1000 + 100 * i for i in range(len(hosts))])
    n = len(ranks)
    alone = len(hosts) == 1
    factor = 2 * (n - 1) / n
    peak = 470.0 if alone else (188.0 if SLOW in hosts else 376.0)
    text = nf.header("all_reduce_perf", ranks, 1 << 20, 8 << 30, 20, None) + nf.result_header()
    for m in nf.measure(nf.SIZES_1M_8G, factor, peak, 50.0):
        text += nf.preamble(m, "float", "sum", -1) + nf.body(m.oop) + nf.body(m.ip) + "\n"
    return text + nf.footer("all_reduce_perf", peak / 2)


class FakeHeads:
    """The head hosts at their command boundary: the hostfile write and removal succeed, a launch
    prints nccl-tests' output for the hosts in its hostfile."""

    def __init__(self) -> None:
        self.hostfiles: dict[str, list[str]] = {}
        self.launches: list[tuple[str, ...]] = []

    def __call__(self, head: str, argv: Sequence[str], timeout: float) -> CommandResult:
        if argv[:2] == ["sh", "-c"]:
            self.hostfiles[argv[-1]] = [ln.split()[0] for ln in argv[-2].splitlines()]
            return CommandResult(head, tuple(argv), 0, "", "", 0.1)
        if argv[0] == "rm":
            return CommandResult(head, tuple(argv), 0, "", "", 0.1)
        hosts = self.hostfiles[argv[argv.index("--hostfile") + 1]]
        self.launches.append(tuple(hosts))
        return CommandResult(head, tuple(argv), 0, _nccl_output(hosts, 8), "", 1.0)


class FinePairs:
    name = "fake"

    def run_round(self, probes: Sequence[Probe], attempt: int) -> list[PairResult]:
        return [PairResult(p.client, p.server, 0, 388.0, 400.0, True, None, "fake", attempt) for p in probes]


def test_the_launched_backend_reads_and_judges_real_output() -> None:
    d = fabric_of("rail-small")
    facts = fabric_facts(d.fabric, d.classification, "rail-small")
    design = {g: 400.0 for g, c in d.classification.nodes.items() if c.tier == 0}
    heads = FakeHeads()
    backend = LaunchedBackend(
        "ssh", heads, NcclTestOptions("all_reduce_perf", min_bytes="1M", max_bytes="8G"), FinePairs(),
        PairsOnFabric(d.fabric, d.classification, design),
    )  # fmt: skip
    hosts = sorted(facts.hosts)
    report = triage(hosts, facts, backend)
    assert report.culprit is not None and report.culprit.hosts == (SLOW,) and len(report.rounds) == 5
    assert [len(x) for x in heads.launches[:8]] == [1] * 8  # the single-node round
    [(_, proof)] = report.culprit.evidence
    assert (
        proof.verdict is not None
        and proof.verdict.verdict == "low"
        and proof.measured == pytest.approx(188.0, rel=0.01)
    )


def test_pairs_that_report_nothing_are_a_failure_of_that_pair() -> None:
    d = fabric_of("rail-small")
    on = PairsOnFabric(d.fabric, d.classification, {})
    probes, keep = on.probes([("dgx-0001", "dgx-0002", 0), ("dgx-0001", "dgx-0002", 99)])
    assert len(probes) == 1 and keep[1] is None
    [ok, missing] = on.outcomes(
        [("dgx-0001", "dgx-0002", 0), ("dgx-0001", "dgx-0002", 99)], keep,
        [PairResult(probes[0].client, probes[0].server, 0, None, 400.0, False, "Couldn't connect", "ssh")],
    )  # fmt: skip
    assert ok == PairOutcome("dgx-0001", "dgx-0002", 0, None, 400.0, "Couldn't connect")
    assert missing.error == "no HCA on that rail"


def test_pair_results_stay_with_their_own_pairs() -> None:
    """A backend gives back only the pairs it ran (a Slurm sweep leaves out a pair whose node was
    lost), in its own order: each result is its pair's, and a pair without one is a failure of it."""
    d = fabric_of("rail-small")
    on = PairsOnFabric(d.fabric, d.classification, {})
    asked = [("dgx-0001", "dgx-0002", 0), ("dgx-0002", "dgx-0003", 0), ("dgx-0003", "dgx-0001", 1)]
    probes, keep = on.probes(asked)
    first, _, third = probes
    ran = [
        PairResult(third.client, third.server, 0, 150.0, 400.0, True, None, "slurm"),
        PairResult(first.client, first.server, 0, 390.0, 400.0, True, None, "slurm"),
    ]
    a, b, c = on.outcomes(asked, keep, ran)
    assert (a.client, a.server, a.rail, a.gbps, a.error) == ("dgx-0001", "dgx-0002", 0, 390.0, None)
    assert (b.client, b.server, b.gbps, b.error) == (
        "dgx-0002",
        "dgx-0003",
        None,
        "not run: no result came back",
    )
    assert (c.client, c.server, c.rail, c.gbps) == ("dgx-0003", "dgx-0001", 1, 150.0)


def test_the_command_refuses_what_it_cannot_run() -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["triage", "--lab", "x"])
    assert res.exit_code == 2 and "give --hosts" in res.stderr
    res = runner.invoke(main, ["triage", "--hosts", "dgx-[0001-0002]", "--lab", "x", "--slurm"])
    assert res.exit_code == 2 and "choose one of" in res.stderr
