"""A sweep through Slurm: one allocation, each round as job steps, both sides gathered per pair.

:func:`run_slurm_sweep` holds the plan's hosts in the shared :class:`~probes.fanout.HostLocks`
(as an SSH sweep does), gets one exclusive allocation for them (:meth:`probes.slurm.Slurm.allocation`,
released on every way out) and runs :func:`probes.sweep.run_sweep` with a
:class:`SlurmSweepBackend`. Per round, for each group of at most ``concurrency`` pairs, the
backend starts every server step, waits until Slurm lists them (server before client), runs the
client steps, gives the servers a moment to end by themselves, cancels those still running, and
judges each pair from both sides' output with its :class:`StepKind`:

* :class:`PerftestSteps`: the real ``ib_write_bw`` (or another perftest tool) on each node;
* :class:`LabSteps`: the lab's simulated traffic run as the step command (:mod:`probes.labstep`).

A pair Slurm could not run (a host not in the allocation, a step that never started because its
node is gone) is not a measurement: it is kept in :attr:`SlurmSweepBackend.unmeasured` with Slurm's
words, never counted as a slow pair, so a dead node does not make its cable a suspect. After one
launch failure a node is *lost* for the rest of the sweep and its later pairs are not tried.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from probes.fanout import HostLocks
from probes.labstep import parse_step_output, round_document
from probes.labtraffic import PortKey
from probes.pairs import Endpoint, PairResult, Probe
from probes.perftest import PerftestOptions, client_argv, parse_perftest, server_argv
from probes.plan import SweepPlan
from probes.slurm import Allocation, AllocationRequest, Slurm, Unavailable
from probes.sweep import PairRun, Progress, SweepOutcome, perftest_side_error, run_sweep
from probes.transport import CommandResult, FailureKind
from topology.errors import IbfabError, UsageError
from topology.model import Fabric, Guid, Link

if TYPE_CHECKING:
    from topology.route_pairs import RouteTables

Paths = dict[tuple[Guid, Guid], Sequence[Link]]


class StepKind(Protocol):
    """What runs on each side of a pair, and how a pair is judged from both sides' output."""

    name: str
    server_grace: float  # seconds a server may take to end by itself after its client is done

    def begin_round(self, probes: Sequence[Probe], attempt: int) -> None: ...

    def server(self, probe: Probe, port: int, seconds: float) -> list[str]: ...

    def client(self, probe: Probe, port: int, server_address: str) -> list[str]: ...

    def judge(self, probe: Probe, run: PairRun, attempt: int, line_rate: float | None) -> PairResult: ...


class PerftestSteps:
    """Real perftest on each node: the server side, then the client naming the server's address."""

    name = "slurm"
    server_grace = 2.0  # an ib_write_bw server reports and exits once its client is done

    def __init__(self, opts: PerftestOptions) -> None:
        self.opts = opts

    def begin_round(self, probes: Sequence[Probe], attempt: int) -> None:
        """Nothing to prepare: the tool measures for itself."""

    def _opts(self, ep: Endpoint, port: int) -> PerftestOptions:
        return replace(self.opts, device=ep.device, tcp_port=port)

    def server(self, probe: Probe, port: int, seconds: float) -> list[str]:
        return server_argv(self._opts(probe.server, port))

    def client(self, probe: Probe, port: int, server_address: str) -> list[str]:
        return client_argv(self._opts(probe.client, port), server_address)

    def judge(self, probe: Probe, run: PairRun, attempt: int, line_rate: float | None) -> PairResult:
        tool = self.opts.tool
        sides = (
            perftest_side_error("client", run.client, tool),
            perftest_side_error("server", run.server, tool),
        )
        errors = [e for e in sides if e]
        if errors:
            return PairResult(
                probe.client,
                probe.server,
                probe.round,
                None,
                line_rate,
                False,
                "; ".join(errors),
                self.name,
                attempt,
            )
        try:
            parsed = parse_perftest(run.client.stdout, f"client {run.client.host}", tool)
        except IbfabError as exc:  # this host's garbage is this pair's failure; the sweep goes on
            return PairResult(
                probe.client,
                probe.server,
                probe.round,
                None,
                line_rate,
                False,
                exc.one_line(),
                self.name,
                attempt,
            )
        gbps = max((r.bw_average_gbps for r in parsed.bandwidth_rows), default=None)
        return PairResult(
            probe.client,
            probe.server,
            probe.round,
            gbps,
            line_rate,
            gbps is not None,
            None,
            self.name,
            attempt,
        )


class LabSteps:
    """The lab's simulated traffic as the step command (see :mod:`probes.labstep`).

    ``workdir`` must be on a filesystem every node sees (the round files are read by the steps).
    """

    name = "slurm:lab-simulated"
    server_grace = 0.0  # the lab server only waits: cancel it at once

    def __init__(
        self, paths: Mapping[tuple[Guid, Guid], Sequence[Link]], error_rates: Mapping[PortKey, int], workdir: Path,
        python: str = sys.executable,
    ) -> None:  # fmt: skip
        self.paths: Paths = dict(paths)
        self.error_rates = dict(error_rates)
        self.workdir = workdir
        self.python = python
        self._count = itertools.count()
        self._file: Path | None = None

    def begin_round(self, probes: Sequence[Probe], attempt: int) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._file = self.workdir / f"round-{next(self._count):04d}.json"
        doc = round_document(probes, self.paths, self.error_rates, attempt)
        self._file.write_text(json.dumps(doc), encoding="utf-8")

    def server(self, probe: Probe, port: int, seconds: float) -> list[str]:
        return [self.python, "-m", "probes.labstep", "serve", f"{max(1.0, seconds):g}"]

    def client(self, probe: Probe, port: int, server_address: str) -> list[str]:
        if self._file is None:
            raise UsageError("lab steps: begin_round was not called")
        return [
            self.python,
            "-m",
            "probes.labstep",
            "client",
            str(self._file),
            probe.client.guid,
            probe.server.guid,
        ]

    def judge(self, probe: Probe, run: PairRun, attempt: int, line_rate: float | None) -> PairResult:
        def failed(error: str) -> PairResult:
            return PairResult(
                probe.client, probe.server, probe.round, None, line_rate, False, error, self.name, attempt
            )

        records = {}
        for side, r in (("server", run.server), ("client", run.client)):
            if r.failure is not None:
                return failed(f"{side} {r.host}: {r.message}")
            try:
                records[side] = parse_step_output(r.stdout, f"{side} {r.host}")
            except IbfabError as exc:
                return failed(f"{side} {r.host}: {exc.one_line()}")
            ran_on = str(records[side].get("host", "")).split(".")[0]
            if ran_on != r.host:
                return failed(f"{side} step for {r.host} ran on {ran_on or 'an unnamed host'}")
        rec = records["client"]
        gbps = rec.get("gbps")
        return PairResult(
            probe.client,
            probe.server,
            probe.round,
            float(gbps) if gbps is not None else None,
            rec.get("line_rate_gbps", line_rate),
            bool(rec.get("ok")),
            rec.get("error"),
            self.name,
            attempt,
        )


@dataclass(frozen=True, slots=True)
class Unmeasured:
    """A pair Slurm did not run, and why in Slurm's words; never a slow pair."""

    probe: Probe
    attempt: int
    why: str


class SlurmSweepBackend:
    """Runs rounds as job steps of one allocation (see the module docstring)."""

    def __init__(
        self,
        slurm: Slurm,
        allocation: Allocation,
        steps: StepKind,
        *,
        node_of: Mapping[str, str] | None = None,
        base_port: int = 18515,
        timeout: float = 120.0,
        concurrency: int = 64,
        start_wait: float = 30.0,
        start_delay: float = 0.5,
        line_rates: Mapping[Guid, float] | None = None,
    ) -> None:
        self.slurm = slurm
        self.allocation = allocation
        self.steps = steps
        self.name = steps.name
        self.node_of = dict(node_of or {})
        self.base_port = base_port
        self.timeout = timeout
        self.concurrency = max(1, concurrency)
        self.start_wait = start_wait
        self.start_delay = start_delay
        self.line_rates = dict(line_rates or {})
        # run_sweep gives routed backends the follow-ups' routes; the lab steps compute from them.
        self.paths: Paths = steps.paths if isinstance(steps, LabSteps) else {}
        self.outputs: dict[tuple[Guid, Guid, int], PairRun] = {}
        self.unmeasured: list[Unmeasured] = []
        self.lost: dict[str, str] = {}
        self._rounds = itertools.count()

    def node(self, host: str) -> str:
        return self.node_of.get(host, host)

    def run_round(self, probes: Sequence[Probe], attempt: int) -> list[PairResult]:
        if not probes:
            return []
        tag = f"{self.allocation.job_name}/{next(self._rounds)}"
        self.steps.begin_round(probes, attempt)
        ready: list[tuple[int, Probe]] = []
        for i, p in enumerate(probes):
            why = self._cannot_run(p)
            if why is None:
                ready.append((i, p))
            else:
                self.unmeasured.append(Unmeasured(p, attempt, why))
        results: list[PairResult] = []
        for start in range(0, len(ready), self.concurrency):
            results += self._group(ready[start : start + self.concurrency], attempt, tag)
        return results

    def _cannot_run(self, p: Probe) -> str | None:
        for host in (p.client.host, p.server.host):
            node = self.node(host)
            if node not in self.allocation.hosts:
                refused = {u.host: u.why for u in self.allocation.unavailable}
                return f"{node} is not in Slurm job {self.allocation.job_id}" + (
                    f" ({refused[node]})" if node in refused else ""
                )
            if node in self.lost:
                return f"{node} was lost earlier in this sweep ({self.lost[node]})"
        return None

    def _group(self, group: Sequence[tuple[int, Probe]], attempt: int, tag: str) -> list[PairResult]:
        alloc, slurm = self.allocation, self.slurm
        server_seconds = self.timeout + self.start_wait + self.start_delay
        names = {i: f"{tag}/{i}/server" for i, _ in group}
        with (
            ThreadPoolExecutor(len(group), "slurm-server") as servers,
            ThreadPoolExecutor(len(group), "slurm-client") as clients,
        ):
            started: dict[int, Future[CommandResult]] = {
                i: servers.submit(
                    slurm.run_step,
                    alloc,
                    self.node(p.server.host),
                    self.steps.server(p, self.base_port + i, server_seconds),
                    names[i],
                    server_seconds,
                )
                for i, p in group
            }
            self._wait_listed(names, started)
            ran: dict[int, Future[CommandResult]] = {}
            for i, p in group:
                if started[i].done() and started[i].result().failure is not None:
                    continue  # the server never ran: nothing to connect to
                server_node = self.node(p.server.host)
                address = alloc.addresses.get(server_node, server_node)
                argv = self.steps.client(p, self.base_port + i, address)
                ran[i] = clients.submit(
                    slurm.run_step, alloc, self.node(p.client.host), argv, f"{tag}/{i}/client", self.timeout
                )
            done_clients = {i: f.result() for i, f in ran.items()}
            deadline = time.monotonic() + self.steps.server_grace
            while time.monotonic() < deadline and not all(f.done() for f in started.values()):
                time.sleep(0.05)
            running = [names[i] for i, f in started.items() if not f.done()]
            if running:
                slurm.cancel_steps(alloc, running)
            done_servers = {i: f.result() for i, f in started.items()}
        out = []
        for i, p in group:
            server = done_servers[i]
            client = done_clients.get(i) or _not_started(
                self.node(p.client.host), "client not started: the server step failed"
            )
            lost = [r for r in (server, client) if r.failure is FailureKind.UNREACHABLE]
            for r in lost:
                self.lost.setdefault(r.host, r.message)
            if lost:
                self.unmeasured.append(
                    Unmeasured(p, attempt, "; ".join(f"{r.host}: {r.message}" for r in lost))
                )
                continue
            run = PairRun(server, client, None)
            self.outputs[(p.client.guid, p.server.guid, attempt)] = run
            out.append(self.steps.judge(p, run, attempt, self.line_rates.get(p.client.guid)))
        return out

    def _wait_listed(self, names: Mapping[int, str], started: Mapping[int, Future[CommandResult]]) -> None:
        """Until Slurm lists every server step (or it already ended), then ``start_delay`` more."""
        deadline = time.monotonic() + self.start_wait
        while time.monotonic() < deadline:
            listed = {s.name for s in self.slurm.steps(self.allocation.job_id)}
            if all(names[i] in listed or f.done() for i, f in started.items()):
                break
            time.sleep(0.1)
        time.sleep(self.start_delay)


def _not_started(host: str, why: str) -> CommandResult:
    return CommandResult(host, (), None, "", "", 0.0, FailureKind.ERROR, why)


@dataclass(frozen=True)
class SlurmSweep:
    """A sweep through Slurm: the sweep itself, the job that ran it, and what Slurm did not run."""

    outcome: SweepOutcome
    job_id: str
    hosts: tuple[str, ...]
    unavailable: tuple[Unavailable, ...]
    lost: Mapping[str, str]
    unmeasured: tuple[Unmeasured, ...]


def time_limit_minutes(plan: SweepPlan, timeout: float) -> int:
    """The allocation's time limit: each round three times over (first pass, re-tests, follow-ups),
    each pair at most ``timeout``; Slurm ends the job by itself after that even if ibfab is killed."""
    return min(7 * 24 * 60, max(5, 3 * plan.rounds * max(1, int(timeout // 60) + 1)))


def run_slurm_sweep(
    plan: SweepPlan,
    slurm: Slurm,
    steps: StepKind,
    request: AllocationRequest | None = None,
    *,
    node_of: Mapping[str, str] | None = None,
    locks: HostLocks | None = None,
    retest: bool = True,
    progress: Progress | None = None,
    fabric: Fabric | None = None,
    tables: RouteTables | None = None,
    candidates: Sequence[Endpoint] = (),
    names: Mapping[Guid, str] | None = None,
    base_port: int = 18515,
    timeout: float = 120.0,
    concurrency: int = 64,
    line_rates: Mapping[Guid, float] | None = None,
    on_allocated: Callable[[Allocation], None] | None = None,
) -> SlurmSweep:
    """Allocate the plan's hosts, run the whole sweep as job steps, release the allocation.

    ``request`` defaults to the plan's hosts (mapped by ``node_of``) with a time limit from the
    plan's size; with ``locks`` the plan's hosts (by the fabric's names, as an SSH sweep holds
    them) are held for the whole sweep, so no other sweep of this process probes them meanwhile.
    """
    node_of = dict(node_of or {})
    plan_hosts = sorted({e.host for p in plan.probes for e in (p.client, p.server)})
    hosts = sorted({node_of.get(h, h) for h in plan_hosts})
    if not hosts:
        raise UsageError("sweep cannot start: the plan has no hosts")
    if request is None:
        request = AllocationRequest(hosts=tuple(hosts), time_limit_minutes=time_limit_minutes(plan, timeout))
    with locks.hold(plan_hosts) if locks is not None else nullcontext(), slurm.allocation(request) as alloc:
        if on_allocated is not None:
            on_allocated(alloc)
        backend = SlurmSweepBackend(
            slurm,
            alloc,
            steps,
            node_of=node_of,
            base_port=base_port,
            timeout=timeout,
            concurrency=concurrency,
            line_rates=line_rates,
        )
        outcome = run_sweep(
            plan,
            backend,
            retest=retest,
            progress=progress,
            fabric=fabric,
            tables=tables,
            candidates=candidates,
            names=names,
        )
    raw = {
        k: (v.client.stdout + v.client.stderr, v.server.stdout + v.server.stderr)
        for k, v in backend.outputs.items()
    }
    return SlurmSweep(
        replace(outcome, raw_outputs=raw),
        alloc.job_id,
        alloc.hosts,
        alloc.unavailable,
        dict(backend.lost),
        tuple(backend.unmeasured),
    )


__all__ = [
    "LabSteps",
    "PerftestSteps",
    "SlurmSweep",
    "SlurmSweepBackend",
    "StepKind",
    "Unmeasured",
    "run_slurm_sweep",
    "time_limit_minutes",
]
