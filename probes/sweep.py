"""The sweep runner: run a plan round by round on a backend, re-test outliers, localize.

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
from typing import Protocol, runtime_checkable

from probes.inventory import HostEntry
from probes.labtraffic import Paths, PortKey, simulate_round
from probes.localize import Suspect, followup_probes, rank, tied
from probes.pairs import Endpoint, PairResult, Probe
from probes.perftest import PerftestOptions, client_argv, parse_perftest, server_argv
from probes.plan import SweepPlan, outliers, retest_plan
from probes.transport import CommandResult, Transport
from topology.errors import IbfabError
from topology.model import Fabric, Guid, Link
from topology.routes import ForwardingTables


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
        parsed = parse_perftest(run.client.stdout, f"client {run.client.host}", tool)
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


def run_sweep(
    plan: SweepPlan,
    backend: Backend,
    *,
    retest: bool = True,
    max_retest_passes: int = 4,
    progress: Progress | None = None,
    fabric: Fabric | None = None,
    tables: ForwardingTables | None = None,
    candidates: Sequence[Endpoint] = (),
    names: Mapping[Guid, str] | None = None,
) -> SweepOutcome:
    """Run every round, re-test outliers with halving concurrency, then rank suspect links.

    With ``fabric`` and ``tables`` (routes known), tied suspects get follow-up probes among
    ``candidates`` that cross one of them at a time, and are ranked again.
    """
    start = time.monotonic()
    paths: dict[tuple[Guid, Guid], Sequence[Link]] = dict(plan.paths)
    results: list[PairResult] = []
    total, failed = len(plan.probes), 0
    for r in range(plan.rounds):
        probes = plan.round_probes(r)
        got = backend.run_round(probes, 0)
        results += got
        if progress:
            slow = sum(1 for x in got if not x.ok)
            failed += slow
            note = f"round {r + 1}/{plan.rounds}: {len(got)} pairs, {slow} failed"
            progress(SweepStep(r + 1, plan.rounds, len(results), total, failed, note))
    reference = max((x.gbps for x in results if x.ok and x.gbps is not None), default=None)
    passes = 0
    concurrency = max((len(plan.round_probes(r)) for r in range(plan.rounds)), default=1)
    latest = results
    while retest and passes < max_retest_passes and concurrency > 1:
        again = retest_plan(latest, concurrency, reference)
        if not again.probes:
            break
        passes += 1
        concurrency = again.concurrency
        rounds = max(p.round for p in again.probes) + 1
        latest = []
        for r in range(rounds):
            latest += backend.run_round([p for p in again.probes if p.round == r], passes)
        results += latest
        if progress:
            note = (
                f"re-test {passes}: {len(again.probes)} outliers, {concurrency} at a time, "
                f"{len(outliers(latest, reference))} still slow"
            )
            progress(SweepStep(plan.rounds, plan.rounds, total, total, failed, note))
    suspects = rank(results, paths, reference, names)
    extra = 0
    if fabric is not None and tables is not None and tied(suspects):
        probes, new_paths = followup_probes(suspects, candidates, paths, fabric=fabric, tables=tables)
        if probes:
            paths.update(new_paths)
            if isinstance(backend, RoutedBackend):  # it computes from routes: give it the new ones
                backend.paths.update(new_paths)
            attempt = passes + 1
            for r in range(max(p.round for p in probes) + 1):
                results += backend.run_round([p for p in probes if p.round == r], attempt)
            extra = len(probes)
            suspects = rank(results, paths, reference, names)
            if progress:
                note = f"follow-up: {extra} probes to separate tied links"
                progress(SweepStep(plan.rounds, plan.rounds, total, total, failed, note))
    return SweepOutcome(
        plan, backend.name, tuple(results), tuple(suspects), paths, passes, extra, time.monotonic() - start
    )
