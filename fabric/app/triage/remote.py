"""The triage's backends on real hosts: nccl-tests through a launcher and ib_write_bw pairs, over
SSH (an inventory; each collective launched by ``mpirun`` on its first host) or as job steps of
one Slurm allocation. The tests of one round start together (a thread each) and the round ends
when all are back; a test that fails is a record with its reason, never an exception. A test that
lost a node (:mod:`fabric.app.triage.lost`) is told apart by the hooks the SSH or Slurm triage
gives: ``lost_of`` for a launch, ``pairs_lost`` for a round's pairs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import Any

from fabric.app.triage.bisect import PairOutcome, RunOutcome
from fabric.app.triage.lost import PairsLost, Unjudged
from probes.nccl import NcclTestOptions
from probes.nccl_run import NcclRun, RunOnHead, plan_nccl, run_nccl
from probes.pairs import Endpoint, PairResult, Probe
from probes.plan import endpoints
from probes.sweep import Backend
from probes.transport import CommandResult
from topology.classify import Classification
from topology.errors import UsageError
from topology.model import Fabric, Guid


def _parallel(jobs: Sequence[Callable[[], Any]]) -> list[Any]:
    if not jobs:
        return []
    with ThreadPoolExecutor(max_workers=min(32, len(jobs))) as pool:
        return list(pool.map(lambda f: f(), jobs))


def _outcome(hosts: Sequence[str], runs: Sequence[NcclRun], ranks: int) -> RunOutcome:
    run = runs[0] if runs else None
    if run is None:
        return RunOutcome(tuple(hosts), None, "nothing ran", ranks)
    return RunOutcome(tuple(hosts), run.result, run.error, ranks)


class PairsOnFabric:
    """Host and rail -> the HCA endpoint of the fabric, and pair results back as outcomes."""

    def __init__(self, fabric: Fabric, cls: Classification, design: Mapping[Guid, float]) -> None:
        self.host_eps: dict[str, list[Endpoint]] = {}
        for ep in sorted(endpoints(fabric, cls), key=lambda e: (e.host, e.rail)):
            self.host_eps.setdefault(ep.host, []).append(ep)
        self.design = dict(design)  # HCA GUID -> its cable's design rate (Gb/s)

    def probes(
        self, pairs: Sequence[tuple[str, str, int]]
    ) -> tuple[list[Probe], list[tuple[str, str, int] | None]]:
        probes: list[Probe] = []
        keep: list[tuple[str, str, int] | None] = []
        for client, server, rail in pairs:
            a, b = self.host_eps.get(client, []), self.host_eps.get(server, [])
            if rail < len(a) and rail < len(b):
                probes.append(Probe(a[rail], b[rail], 0))
                keep.append((client, server, rail))
            else:
                keep.append(None)
        return probes, keep

    def outcomes(
        self,
        pairs: Sequence[tuple[str, str, int]],
        keep: Sequence[tuple[str, str, int] | None],
        results: Sequence[PairResult],
        unjudged: Mapping[tuple[Guid, Guid], Unjudged] | None = None,
    ) -> list[PairOutcome]:
        # By the pair's HCAs, not by order: a backend leaves out the pairs it could not run (a
        # Slurm node lost mid-round), and the rest must stay with their own pairs.
        got = {(r.client.guid, r.server.guid): r for r in results}
        out = []
        for want, asked in zip(keep, pairs, strict=True):
            if want is None:
                out.append(PairOutcome(asked[0], asked[1], asked[2], None, None, "no HCA on that rail"))
                continue
            client, server = self.host_eps[want[0]][want[2]], self.host_eps[want[1]][want[2]]
            rates = [x for x in (self.design.get(client.guid), self.design.get(server.guid)) if x]
            r = got.get((client.guid, server.guid))
            why = (unjudged or {}).get((client.guid, server.guid))
            if why is not None:  # a node lost (or no start for a reason not known): not judged
                out.append(PairOutcome(*want, None, min(rates) if rates else None, why.said, unjudged=why))
            elif r is None:
                out.append(
                    PairOutcome(*want, None, min(rates) if rates else None, "not run: no result came back")
                )
            else:
                expected = min(rates) if rates else r.line_rate_gbps
                out.append(PairOutcome(*want, r.gbps, expected, None if r.ok else r.error))
        return out


class LaunchedBackend:
    """nccl-tests launched per test (``run_on_head(head, argv, timeout)``), pairs by a sweep backend."""

    def __init__(
        self,
        name: str,
        run_on_head: Callable[[str, Sequence[str], float], Any],
        opts: NcclTestOptions,
        pairs_backend: Backend,
        on_fabric: PairsOnFabric,
        *,
        launcher: str = "mpirun",
        gpus_per_node: int = 8,
        timeout: float = 1800.0,
        plan_extra: Mapping[str, Any] | None = None,
        node_of: Mapping[str, str] | None = None,
        lost_of: Callable[[Sequence[str], CommandResult], Unjudged | None] | None = None,
        pairs_lost: PairsLost | None = None,
    ) -> None:
        self.name = name
        self.run_on_head = run_on_head
        self.opts = opts
        self.pairs_backend = pairs_backend
        self.on_fabric = on_fabric
        self.launcher = launcher
        self.gpus_per_node = gpus_per_node
        self.timeout = timeout
        self.plan_extra = dict(plan_extra or {})
        self.node_of = dict(node_of or {})  # fabric host -> the launcher's name for it (a Slurm node)
        self.lost_of = lost_of  # (hosts, the launch's result) -> the test lost a node, or did not start
        self.pairs_lost = pairs_lost  # (the probes asked, the results) -> the pairs that lost a node

    def _run(self, hosts: Sequence[str]) -> RunOutcome:
        plan = plan_nccl(
            [self.node_of.get(h, h) for h in hosts],
            self.opts,
            launcher=self.launcher,
            gpus_per_node=self.gpus_per_node,
            **self.plan_extra,
        )

        launches: list[CommandResult] = []
        seen: list[CommandResult] = []
        launch_argv = {job.argv for job in plan.jobs}

        def on_head(argv: Sequence[str], t: float) -> Any:
            res = self.run_on_head(hosts[0], argv, t)
            if isinstance(res, CommandResult):
                seen.append(res)
                if tuple(argv) in launch_argv:
                    launches.append(res)
            return res

        run: RunOnHead = on_head
        ranks = self.gpus_per_node * len(hosts)
        try:
            runs = run_nccl(run, plan, self.timeout)
        except UsageError:  # the hostfile could not be written: a head that no longer answers is lost
            head = (
                self.lost_of(hosts, seen[-1])
                if self.lost_of is not None and seen and seen[-1].failure
                else None
            )
            if head is None or not head.lost:
                raise
            return RunOutcome(tuple(hosts), None, head.said, ranks, unjudged=head)
        outcome = _outcome(hosts, runs, ranks)
        lost = self.lost_of(hosts, launches[0]) if self.lost_of is not None and launches else None
        return (
            outcome
            if lost is None
            else replace(outcome, result=None, error=outcome.error or lost.said, unjudged=lost)
        )

    def single_nodes(self, hosts: Sequence[str]) -> list[RunOutcome]:
        return _parallel([partial(self._run, [h]) for h in hosts])

    def collectives(self, sets: Sequence[Sequence[str]]) -> list[RunOutcome]:
        return _parallel([partial(self._run, list(s)) for s in sets])

    def pairs(self, pairs: Sequence[tuple[str, str, int]]) -> list[PairOutcome]:
        probes, keep = self.on_fabric.probes(pairs)
        results = self.pairs_backend.run_round(probes, 0) if probes else []
        lost = self.pairs_lost(probes, results) if self.pairs_lost is not None else {}
        return self.on_fabric.outcomes(pairs, keep, results, lost)


__all__ = ["LaunchedBackend", "PairsOnFabric"]
