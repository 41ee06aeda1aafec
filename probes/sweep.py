"""The sweep runner: run a plan round by round on a backend, judge every pair against what its
route should give (:mod:`probes.expect`), re-test slow pairs, localize.

Backends (both yield :class:`~probes.pairs.PairResult` records):

* :class:`LabTrafficBackend`: the lab's simulated traffic (:mod:`probes.labtraffic`);
* :class:`SshPerftestBackend`: real ``ib_write_bw``, server on one host and client on the other
  over SSH. Every pair gets its own TCP port (``base_port`` + its place in the round). The server
  is started as ``sh -c 'echo $$ > PIDFILE; exec timeout ... ib_write_bw ...'`` and is killed by
  that PID after the client returns, whatever happened (client error, unreachable host, timeout);
  ``timeout`` bounds it even if the cleanup cannot reach the host. Both sides' output is parsed
  with :func:`probes.perftest.parse_perftest`; a failed pair is a record, never an exception.
"""

from __future__ import annotations

import secrets
import shlex
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from probes.expect import RouteRate, efficiency, judge, route_rates, with_route
from probes.inventory import HostEntry
from probes.labtraffic import Paths, PortKey, simulate_round
from probes.localize import Suspect, final_results, followup_probes, rank, tied, tied_groups, unexplained
from probes.pairs import Endpoint, PairResult, Probe
from probes.perftest import PerftestOptions, client_argv, parse_perftest, server_argv
from probes.plan import SweepPlan, retest_plan
from probes.transport import CommandResult, Transport
from topology.errors import IbfabError
from topology.model import Fabric, Guid, Link

if TYPE_CHECKING:
    from topology.route_pairs import RouteTables


@dataclass(frozen=True, slots=True)
class SweepStep:
    """Progress of a running sweep: cumulative pairs and failures after ``round`` of ``rounds``;
    ``note`` says what happened in words (re-tests and follow-ups carry only a note)."""

    round: int
    rounds: int
    pairs_done: int
    pairs: int
    slow_pairs: int
    note: str = ""

    def __str__(self) -> str:
        return self.note


Progress = Callable[[SweepStep], None]


class Backend(Protocol):
    name: str

    def run_round(self, probes: Sequence[Probe], attempt: int) -> list[PairResult]: ...


@runtime_checkable
class RoutedBackend(Protocol):
    """A backend that computes results from the probes' routes (the lab's, directly or in steps)."""

    paths: dict[tuple[Guid, Guid], Sequence[Link]]


class LabTrafficBackend:
    """Simulated ib_write_bw on a lab fabric: results from link rates, sharing and error rates."""

    name = "lab-simulated"

    def __init__(self, fabric: Fabric, paths: Paths, error_rates: Mapping[PortKey, int]) -> None:
        self.fabric = fabric
        self.paths: dict[tuple[Guid, Guid], Sequence[Link]] = dict(paths)
        self.error_rates = dict(error_rates)

    def run_round(self, probes: Sequence[Probe], attempt: int) -> list[PairResult]:
        return simulate_round(self.fabric, probes, self.paths, self.error_rates, attempt)


@dataclass(frozen=True, slots=True)
class PairRun:
    """Both sides of one ssh pair, as the hosts answered."""

    server: CommandResult
    client: CommandResult
    cleanup: CommandResult | None


_NO_PIDFILE = "ibfab: no server pid file"


def run_pair(
    server: Transport,
    client: Transport,
    cleanup: Transport,
    server_cmd: Sequence[str],
    client_cmd: Sequence[str],
    *,
    timeout: float,
    start_delay: float = 1.0,
) -> PairRun:
    """Start ``server_cmd`` on ``server``, run ``client_cmd`` on ``client``, then kill the server by PID.

    The server always gets killed (a no-op when it already exited); its PID file is removed.
    """
    token = secrets.token_hex(6)
    pidfile = f"/tmp/ibfab-sweep-{token}.pid"
    bounded = ["timeout", "-k", "2", f"{max(1, int(timeout))}", *server_cmd]
    script = f"echo $$ > {pidfile}; exec {shlex.join(bounded)}"
    box: dict[str, CommandResult] = {}

    def serve() -> None:
        box["server"] = server.run(["sh", "-c", script], timeout + 5)

    thread = threading.Thread(target=serve, name=f"server-{server.host}", daemon=True)
    thread.start()
    cleanup_result: CommandResult | None = None
    try:
        thread.join(start_delay)  # returns at once if the server already died
        client_result = client.run(list(client_cmd), timeout)
    finally:
        kill = (
            f"if [ -f {pidfile} ]; then kill -TERM $(cat {pidfile}) 2>/dev/null; sleep 0.2;"
            f" kill -KILL $(cat {pidfile}) 2>/dev/null; rm -f {pidfile}; else echo {_NO_PIDFILE}; fi; true"
        )
        cleanup_result = cleanup.run(["sh", "-c", kill], 15.0)
        thread.join(timeout + 10)
        if _NO_PIDFILE in cleanup_result.stdout:
            # The server had not started when the client was done (a slow connection): it ran late,
            # bounded by its timeout, and left its PID file; the thread is back, so remove it now.
            cleanup.run(["rm", "-f", pidfile], 15.0)
    return PairRun(box.get("server") or _missing(server.host), client_result, cleanup_result)


def _missing(host: str) -> CommandResult:
    from probes.transport import FailureKind

    return CommandResult(host, (), None, "", "", 0.0, FailureKind.ERROR, "server did not report back")


def perftest_side_error(side: str, r: CommandResult, tool: str) -> str | None:
    """What went wrong on one side of a perftest pair, in words naming the side and host (None: ok)."""
    if r.failure is not None:
        return f"{side} {r.host}: {r.message}"
    try:
        parsed = parse_perftest(r.stdout + "\n" + r.stderr, f"{side} {r.host}", tool)
    except IbfabError as exc:
        return f"{side} {r.host}: {exc.one_line()}"
    if not parsed.ok:
        return f"{side} {r.host}: {parsed.error}"
    if r.exit_code not in (0, None):
        return f"{side} {r.host}: exit {r.exit_code}"
    return None


class SshPerftestBackend:
    """Real ib_write_bw between the hosts of an inventory (see the module docstring)."""

    name = "ssh"

    def __init__(
        self,
        hosts: Mapping[str, HostEntry],
        transport_factory: Callable[[HostEntry], Transport],
        opts: PerftestOptions,
        *,
        base_port: int = 18515,
        timeout: float = 120.0,
        concurrency: int = 16,
        start_delay: float = 1.0,
        line_rates: Mapping[Guid, float] | None = None,
    ) -> None:
        self.hosts = hosts
        self.factory = transport_factory
        self.opts = opts
        self.base_port = base_port
        self.timeout = timeout
        self.concurrency = concurrency
        self.start_delay = start_delay
        self.line_rates = dict(line_rates or {})
        self.outputs: dict[tuple[Guid, Guid, int], PairRun] = {}

    def _argv(self, ep: Endpoint, port: int) -> PerftestOptions:
        from dataclasses import replace

        return replace(self.opts, device=ep.device, tcp_port=port)

    def _one(self, probe: Probe, port: int, attempt: int) -> PairResult:
        s_entry, c_entry = self.hosts[probe.server.host], self.hosts[probe.client.host]
        transports = [self.factory(s_entry), self.factory(c_entry), self.factory(s_entry)]
        try:
            run = run_pair(
                transports[0],
                transports[1],
                transports[2],
                server_argv(self._argv(probe.server, port)),
                client_argv(self._argv(probe.client, port), s_entry.connect_address),
                timeout=self.timeout,
                start_delay=self.start_delay,
            )
        finally:
            for t in transports:
                t.close()
        self.outputs[(probe.client.guid, probe.server.guid, attempt)] = run
        tool = self.opts.tool
        errors = [
            e
            for e in (
                perftest_side_error("client", run.client, tool),
                perftest_side_error("server", run.server, tool),
            )
            if e
        ]
        line = self.line_rates.get(probe.client.guid)
        if errors:
            return PairResult(
                probe.client, probe.server, probe.round, None, line, False, "; ".join(errors), "ssh", attempt
            )
        try:
            parsed = parse_perftest(run.client.stdout, f"client {run.client.host}", tool)
        except IbfabError as exc:  # this host's garbage is this pair's failure; the sweep goes on
            return PairResult(
                probe.client, probe.server, probe.round, None, line, False, exc.one_line(), "ssh", attempt
            )
        gbps = max((r.bw_average_gbps for r in parsed.bandwidth_rows), default=None)
        return PairResult(
            probe.client, probe.server, probe.round, gbps, line, gbps is not None, None, "ssh", attempt
        )

    def run_round(self, probes: Sequence[Probe], attempt: int) -> list[PairResult]:
        if not probes:
            return []
        with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(probes)))) as pool:
            futures = [pool.submit(self._one, p, self.base_port + i, attempt) for i, p in enumerate(probes)]
            return [f.result() for f in futures]


@dataclass(frozen=True)
class SweepOutcome:
    plan: SweepPlan
    backend: str
    results: tuple[PairResult, ...]
    suspects: tuple[Suspect, ...]
    paths: Mapping[tuple[Guid, Guid], Sequence[Link]] = field(default_factory=dict)
    retest_passes: int = 0
    followup_probes: int = 0
    seconds: float = 0.0
    # ssh only: (client GUID, server GUID, attempt) -> (client output, server output)
    raw_outputs: Mapping[tuple[Guid, Guid, int], tuple[str, str]] = field(default_factory=dict)
    efficiency: float | None = None  # what pairs reach of their route's rate (probes.expect)

    @property
    def tie(self) -> list[Suspect]:
        """The top suspects the follow-ups could not tell apart (empty: one leads, or none)."""
        return tied(self.suspects)

    @property
    def unexplained(self) -> list[PairResult]:
        """Slow or failed pairs that no suspect link explains."""
        return unexplained(self.results, self.paths, self.suspects)


class _Runner:
    """Runs probes round by round on a backend and judges each result against its route."""

    def __init__(
        self,
        plan: SweepPlan,
        backend: Backend,
        names: Mapping[Guid, str],
    ) -> None:
        self.backend = backend
        self.design = plan.design_gbps
        self.paths: dict[tuple[Guid, Guid], Sequence[Link]] = dict(plan.paths)
        self.names = names
        self.rates: dict[tuple[Guid, Guid, int], RouteRate] = {}
        self.efficiency: float | None = None

    def describe(self, lk: Link) -> str:
        n = self.names
        return f"{n.get(lk.a.guid, lk.a.guid)}/{lk.a.port}-{n.get(lk.b.guid, lk.b.guid)}/{lk.b.port}"

    def round(self, probes: Sequence[Probe], attempt: int) -> list[PairResult]:
        """One round, each result with its route rate under the round's sharing (not yet judged)."""
        rates = route_rates(probes, self.paths, self.design)
        out = []
        for r in self.backend.run_round(probes, attempt):
            rate = rates.get(r.key)
            if rate is not None:
                self.rates[(*r.key, attempt)] = rate
            out.append(with_route(r, rate))
        return out

    def judge(self, results: Sequence[PairResult]) -> list[PairResult]:
        return judge(results, self.efficiency, self.rates, self.describe)

    def run(self, probes: Sequence[Probe], attempt: int) -> list[PairResult]:
        """Every round of ``probes``, judged."""
        got: list[PairResult] = []
        for r in sorted({p.round for p in probes}):
            got += self.round([p for p in probes if p.round == r], attempt)
        return self.judge(got)

    def retest(
        self, results: list[PairResult], concurrency: int, attempt: int, max_passes: int | None
    ) -> tuple[list[PairResult], int]:
        """Re-test the slow pairs of ``results``, halving concurrency, until one probe at a time.

        Returns every re-test result and the passes run (attempts ``attempt``, ``attempt + 1``, ...).
        """
        latest, out, passes = results, [], 0
        while concurrency > 1 and (max_passes is None or passes < max_passes):
            again = retest_plan(latest, concurrency)
            if not again.probes:
                break
            latest = self.run(again.probes, attempt + passes)
            out += latest
            passes += 1
            per_round = max(
                sum(1 for p in again.probes if p.round == r) for r in {p.round for p in again.probes}
            )
            concurrency = min(again.concurrency, per_round)
        return out, passes


def run_sweep(
    plan: SweepPlan,
    backend: Backend,
    *,
    retest: bool = True,
    max_retest_passes: int | None = None,
    max_followups: int = 3,
    progress: Progress | None = None,
    fabric: Fabric | None = None,
    tables: RouteTables | None = None,
    candidates: Sequence[Endpoint] = (),
    names: Mapping[Guid, str] | None = None,
) -> SweepOutcome:
    """Run every round, judge each pair against its route, re-test slow pairs with halving
    concurrency down to one probe at a time, then rank suspect links.

    With ``fabric`` and ``tables`` (routes known), tied suspects get follow-up probes among
    ``candidates`` that cross one of them at a time (slow follow-ups re-tested the same way), and
    are ranked again; up to ``max_followups`` times while a tie remains and new probes exist.
    """
    start = time.monotonic()
    runner = _Runner(plan, backend, names or {})
    first: list[PairResult] = []
    total, failed = len(plan.probes), 0
    for r in range(plan.rounds):
        got = runner.round(plan.round_probes(r), 0)
        first += got
        if progress:
            bad = sum(1 for x in got if not x.ok)
            failed += bad
            note = f"round {r + 1}/{plan.rounds}: {len(got)} pairs, {bad} failed"
            progress(SweepStep(r + 1, plan.rounds, len(first), total, failed, note))
    runner.efficiency = efficiency(first)
    results = runner.judge(first)
    slow = sum(1 for x in results if not x.ok)
    if progress and slow:
        eff = f"{runner.efficiency:.0%}" if runner.efficiency is not None else "unknown"
        note = f"{slow} pair(s) slow or failed against their route (efficiency {eff})"
        progress(SweepStep(plan.rounds, plan.rounds, total, total, failed, note))
    concurrency = max((len(plan.round_probes(r)) for r in range(plan.rounds)), default=1)
    passes = 0
    if retest:
        again, passes = runner.retest(results, concurrency, 1, max_retest_passes)
        results += again
        if progress and passes:
            still = sum(1 for x in final_results(results) if not x.ok)
            note = f"re-test: {passes} pass(es) down to one probe at a time, {still} still slow or failed"
            progress(SweepStep(plan.rounds, plan.rounds, total, total, failed, note))
    attempt = passes + 1
    suspects = rank(results, runner.paths, names, design=plan.design_gbps, efficiency=runner.efficiency)
    extra = 0
    rounds_done = 0
    while fabric is not None and tables is not None and tied_groups(suspects) and rounds_done < max_followups:
        probes, new_paths = followup_probes(suspects, candidates, runner.paths, fabric=fabric, tables=tables)
        done = {r.key for r in results}
        probes = [p for p in probes if (p.client.guid, p.server.guid) not in done]
        if not probes:
            break
        runner.paths.update(new_paths)
        if isinstance(backend, RoutedBackend):  # it computes from routes: give it the new ones
            backend.paths.update(new_paths)
        got = runner.run(probes, attempt)
        more, n = runner.retest(got, len(probes), attempt + 1, None) if retest else ([], 0)
        results += got + more
        attempt += 1 + n
        extra += len(probes)
        rounds_done += 1
        suspects = rank(results, runner.paths, names, design=plan.design_gbps, efficiency=runner.efficiency)
        if progress:
            note = f"follow-up: {len(probes)} probes to separate tied links"
            progress(SweepStep(plan.rounds, plan.rounds, total, total, failed, note))
    return SweepOutcome(
        plan,
        backend.name,
        tuple(results),
        tuple(suspects),
        runner.paths,
        passes,
        extra,
        time.monotonic() - start,
        efficiency=runner.efficiency,
    )
