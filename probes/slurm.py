"""Slurm as the engine of probes: allocations, job steps, node states, drains and resumes.

Every command goes through :func:`probes.runner.run` (never a shell) with :attr:`Slurm.env` added
(``SLURM_CONF`` for a private cluster; nothing on a cluster's own login node); the text it prints
is read by :mod:`probes.slurm_parse`.

A sweep holds one allocation (``salloc --no-shell --exclusive --no-kill``, a time limit, a job
name operators recognise: ``ibfab-sweep``) and runs each probe side as a job step inside it
(``srun --jobid J -w HOST -N1 -n1 --overlap``). :meth:`Slurm.allocation` releases it
(``scancel``) on every way out: the sweep ends, fails, Ctrl-C, or SIGTERM/SIGHUP of the sweeping
process (see :func:`exit_on_signals`); the time limit ends it even if the process is killed
outright. Each salloc carries a request token in its ``--comment`` (``ibfab-request:<hex>``): a
job granted (or left pending) while the process is being stopped, before its id was ever seen,
is found by that token and cancelled too. Hosts Slurm will not give (drained, down, reserved, busy, not Slurm nodes) are reported
with their state and reason instead of being waited for: salloc asks with ``--immediate``.
"""

from __future__ import annotations

import math
import secrets
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from probes import runner
from probes.inventory import expand_hosts, fold_names, host_sort_key
from probes.slurm_parse import (
    SINFO_REASONS,
    SQUEUE_COMMENT,
    SQUEUE_JOB,
    SQUEUE_RUNNING,
    SQUEUE_STEPS,
    Drain,
    JobInfo,
    Reservation,
    RunningJob,
    SlurmNode,
    StepInfo,
    parse_comments,
    parse_granted,
    parse_jobs,
    parse_nodes,
    parse_reasons,
    parse_reservations,
    parse_running_jobs,
    parse_steps,
    salloc_refusal,
    step_failure,
)
from probes.transport import CommandResult, FailureKind
from topology.errors import CommandFailed, UnavailableError, UsageError
from topology.nameformats import SLURM_NODE, unfit

JOB_NAME = "ibfab-sweep"
DRAIN_PREFIX = "ibfab: "
REQUEST_PREFIX = "ibfab-request:"
Run = Callable[..., CommandResult]


class SlurmUnavailable(UnavailableError):
    """Slurm would not give the nodes asked for; names them with their state and reason."""

    def __init__(self, message: str, unavailable: Sequence[Unavailable] = ()) -> None:
        self.unavailable = tuple(unavailable)
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A host asked for that Slurm will not give now, and why (``idle+drain: ibfab: BER ...``)."""

    host: str
    why: str

    def __str__(self) -> str:
        return f"{self.host} ({self.why})"


@dataclass(frozen=True, slots=True)
class AllocationRequest:
    """What to ask salloc for: these ``hosts`` (``-w``), or ``count`` idle nodes (``-N``)."""

    hosts: tuple[str, ...] = ()
    count: int | None = None
    partition: str | None = None
    reservation: str | None = None
    time_limit_minutes: int = 60
    job_name: str = JOB_NAME
    immediate: int = 30  # seconds salloc may wait for the nodes before giving up
    gpus_per_node: int | None = None  # GPUs are a generic resource: --exclusive alone gives none

    def __post_init__(self) -> None:
        if bool(self.hosts) == (self.count is not None):
            raise UsageError("ask Slurm for named hosts or for a number of idle nodes, not both or neither")
        if self.count is not None and self.count < 1:
            raise UsageError(f"cannot allocate {self.count} nodes")
        if not 1 <= self.time_limit_minutes <= 7 * 24 * 60:
            raise UsageError(f"allocation time limit {self.time_limit_minutes} min is out of 1..10080")


@dataclass(frozen=True, slots=True)
class Allocation:
    """One granted job: its hosts, their addresses, and the asked-for hosts it does not hold."""

    job_id: str
    job_name: str
    hosts: tuple[str, ...]
    addresses: Mapping[str, str] = field(default_factory=dict)
    unavailable: tuple[Unavailable, ...] = ()


def why_unavailable(
    node: SlurmNode | None, partition: str | None, reserved_by: str | None, reservation: str | None
) -> str | None:
    """Why an exclusive allocation cannot take ``node`` now (None: it can). Pure."""
    if node is None:
        return "not a Slurm node"
    if partition is not None and partition not in node.partitions:
        return f"not in partition {partition}"
    if not node.usable:
        return node.state_text + (f": {node.reason}" if node.reason else "")
    if reserved_by is not None and reserved_by != reservation:
        return f"reserved ({reserved_by})"
    if node.state != "IDLE":
        return f"{node.state_text} (running another job)"
    return None


class Slurm:
    """A Slurm cluster seen from a client host."""

    def __init__(self, env: Mapping[str, str] | None = None, *, timeout: float = 60.0, run: Run = runner.run):
        self.env = dict(env or {})
        self.timeout = timeout
        self._run = run

    def command(
        self, argv: Sequence[str], *, timeout: float | None = None, check: bool = True
    ) -> CommandResult:
        return self._run(
            list(argv), env=self.env, timeout=timeout or self.timeout, check=check, where="slurm"
        )

    # -- reading ---------------------------------------------------------------------------------
    def nodes(self, names: Sequence[str] = ()) -> list[SlurmNode]:
        argv = ["scontrol", "-o", "show", "node"]
        if names:
            # A name Slurm would read as a hostlist ('dgx-[0001-0999]', 'a,b') is no node of its.
            names = [n for n in names if SLURM_NODE.fits(n)]
            if not names:
                return []
            argv.append(",".join(names))
        res = self.command(argv, check=False)
        if res.exit_code != 0 and not names:
            raise CommandFailed(argv, res.exit_code, res.stderr, "slurm")
        return parse_nodes(res.stdout)

    def drains(self) -> list[Drain]:
        """Nodes out of service with their reasons, as ``sinfo -R`` shows them."""
        return parse_reasons(self.command(["sinfo", "-R", "-h", "-N", "-o", SINFO_REASONS]).stdout)

    def reservations(self) -> list[Reservation]:
        return parse_reservations(self.command(["scontrol", "-o", "show", "reservation"]).stdout)

    def jobs(self, job_id: str | None = None, name: str | None = None) -> list[JobInfo]:
        argv = ["squeue", "-h", "-o", SQUEUE_JOB]
        if job_id is not None:
            argv += ["-j", job_id]
        if name is not None:
            argv += ["-n", name]
        res = self.command(argv, check=False)  # squeue -j of a job already gone exits 1
        return parse_jobs(res.stdout) if res.exit_code == 0 else []

    def running_jobs(self) -> list[RunningJob]:
        """Every running job with its user and nodes (``squeue -t RUNNING``)."""
        res = self.command(["squeue", "-h", "-t", "RUNNING", "-o", SQUEUE_RUNNING])
        return parse_running_jobs(res.stdout)

    def steps(self, job_id: str) -> list[StepInfo]:
        res = self.command(["squeue", "-h", "-s", "-j", job_id, "-o", SQUEUE_STEPS], check=False)
        return parse_steps(res.stdout) if res.exit_code == 0 else []

    def reserved_nodes(self) -> dict[str, str]:
        """node -> the active reservation that holds it."""
        out: dict[str, str] = {}
        for r in self.reservations():
            if r.state.upper() == "ACTIVE" and r.nodes:
                for n in expand_hosts(r.nodes, f"reservation {r.name}"):
                    out.setdefault(n, r.name)
        return out

    def idle_nodes(self, partition: str | None = None, reservation: str | None = None) -> list[str]:
        """Nodes an exclusive allocation could take now, in natural order."""
        reserved = self.reserved_nodes()
        free = [
            n.name
            for n in self.nodes()
            if why_unavailable(n, partition, reserved.get(n.name), reservation) is None
            and (reservation is None or reserved.get(n.name) == reservation)
        ]
        return sorted(free, key=host_sort_key)

    def check_hosts(
        self, hosts: Sequence[str], partition: str | None = None, reservation: str | None = None
    ) -> tuple[list[str], list[Unavailable]]:
        """(hosts Slurm can give now, the others with why)."""
        known = {n.name: n for n in self.nodes()}
        reserved = self.reserved_nodes()
        free, refused = [], []
        for h in sorted(set(hosts), key=host_sort_key):
            bad = unfit(h, SLURM_NODE)
            if bad is not None:  # never put on a --nodelist: Slurm would read it as other nodes
                refused.append(Unavailable(h, f"not a Slurm node name: {bad.why}"))
                continue
            why = why_unavailable(known.get(h), partition, reserved.get(h), reservation)
            if why is None and reservation is not None and reserved.get(h) != reservation:
                why = f"not in reservation {reservation}"
            if why is None:
                free.append(h)
            else:
                refused.append(Unavailable(h, why))
        return free, refused

    # -- drains ----------------------------------------------------------------------------------
    def drain(self, host: str, finding: str) -> None:
        """Take ``host`` out of service with ``Reason="ibfab: <finding>"`` (running jobs finish)."""
        self.command(drain_argv(host, finding))

    def resume(self, host: str) -> None:
        self.command(resume_argv(host))

    # -- allocations -----------------------------------------------------------------------------
    def allocate(self, req: AllocationRequest, token: str | None = None) -> Allocation:
        """Get the nodes or raise :class:`SlurmUnavailable` within ``req.immediate`` seconds.

        Whatever ends this call early (a signal while salloc waits, an error reading the job
        back) cancels the job salloc asked for under ``token``, granted or still pending.
        """
        token = token or new_token()
        try:
            return self._allocate(req, token)
        except BaseException:
            with ignoring_signals():
                self.release_requested(token, req.job_name)
            raise

    def _allocate(self, req: AllocationRequest, token: str) -> Allocation:
        refused: list[Unavailable] = []
        hosts: list[str] = list(req.hosts)
        if req.hosts:
            hosts, refused = self.check_hosts(req.hosts, req.partition, req.reservation)
            if not hosts:
                raise SlurmUnavailable(
                    f"Slurm will give none of the hosts: {'; '.join(map(str, refused))}", refused
                )
        argv = [
            "salloc",
            "--no-shell",
            "--exclusive",
            "--no-kill",  # a node that dies does not take the allocation (and the sweep) with it
            f"--job-name={req.job_name}",
            f"--time={req.time_limit_minutes}",
            f"--immediate={req.immediate}",
            f"--comment={REQUEST_PREFIX}{token}",
        ]
        if req.partition:
            argv.append(f"--partition={req.partition}")
        if req.reservation:
            argv.append(f"--reservation={req.reservation}")
        if req.gpus_per_node:
            argv.append(f"--gpus-per-node={req.gpus_per_node}")
        if hosts:
            argv += [f"--nodes={len(hosts)}", f"--nodelist={','.join(hosts)}"]
        else:
            argv.append(f"--nodes={req.count}")
        res = self.command(argv, timeout=req.immediate + 30.0, check=False)
        job = parse_granted(res.stderr)
        if job is None:
            said = salloc_refusal(res.stderr)
            if hosts:  # what changed since we looked, in Slurm's words
                _, now = self.check_hosts(hosts, req.partition, req.reservation)
                refused += now
            named = f": {'; '.join(map(str, refused))}" if refused else ""
            raise SlurmUnavailable(f"Slurm gave no allocation ({said}){named}", refused)
        info = self.jobs(job)
        nodes = expand_hosts(info[0].nodes, f"job {job}") if info and info[0].nodes else hosts
        addresses = {n.name: n.address for n in self.nodes(nodes)}
        return Allocation(job, req.job_name, tuple(nodes), addresses, tuple(refused))

    def release(self, job_id: str, wait: float = 30.0) -> bool:
        """``scancel`` the job and wait until it has left the queue; True when it has."""
        self.command(["scancel", job_id], check=False)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not [j for j in self.jobs(job_id) if j.state not in ("CANCELLED", "COMPLETED")]:
                return True
            time.sleep(0.2)
        return False

    def release_requested(self, token: str, job_name: str = JOB_NAME, wait: float = 30.0) -> list[str]:
        """Cancel every job asked for under ``token`` (pending or granted); returns their ids."""
        res = self.command(["squeue", "-h", "-n", job_name, "-o", SQUEUE_COMMENT], check=False)
        mine = f"{REQUEST_PREFIX}{token}"
        ids = [j for j, c in parse_comments(res.stdout).items() if c == mine] if res.exit_code == 0 else []
        for job in ids:
            self.release(job, wait)
        return ids

    @contextmanager
    def allocation(self, req: AllocationRequest) -> Iterator[Allocation]:
        """Hold an allocation for the ``with`` block; released however the block ends."""
        token = new_token()
        with exit_on_signals():
            alloc: Allocation | None = None
            with _held_lock:
                _held[token] = (self, req.job_name, None)
            try:
                alloc = self.allocate(req, token)
                with _held_lock:
                    _held[token] = (self, req.job_name, alloc.job_id)
                yield alloc
            finally:
                with ignoring_signals():
                    if alloc is not None:
                        self.release(alloc.job_id)
                    else:  # a signal between salloc's grant and this frame seeing it
                        self.release_requested(token, req.job_name)
                with _held_lock:
                    _held.pop(token, None)

    # -- steps -----------------------------------------------------------------------------------
    def step_argv(
        self, alloc: Allocation, host: str, argv: Sequence[str], name: str, timeout: float
    ) -> list[str]:
        seconds = max(1, math.ceil(timeout))
        return [
            "srun",
            f"--jobid={alloc.job_id}",
            f"--nodelist={slurm_node(host)}",
            "--nodes=1",
            "--ntasks=1",
            "--overlap",  # steps of one round share the nodes' CPUs instead of queueing for them
            "--immediate=10",
            f"--job-name={name}",
            f"--time={seconds // 60}:{seconds % 60:02d}",
            "--chdir=/tmp",
            *argv,
        ]

    def run_step(
        self, alloc: Allocation, host: str, argv: Sequence[str], name: str, timeout: float
    ) -> CommandResult:
        """Run ``argv`` as one step on ``host``; a step that never started or overran is a record."""
        full = self.step_argv(alloc, host, argv, name, timeout)
        start = time.monotonic()
        try:
            res = self.command(full, timeout=timeout + 10.0, check=False)
        except CommandFailed as exc:
            if exc.returncode is None:
                return CommandResult(
                    host, tuple(full), None, "", exc.stderr, 0.0, FailureKind.ERROR, exc.stderr
                )
            self.cancel_steps(alloc, [name])  # srun was killed; the step may still run on the node
            return CommandResult(
                host,
                tuple(full),
                None,
                "",
                exc.stderr,
                time.monotonic() - start,
                FailureKind.COMMAND_TIMEOUT,
                f"step timed out after {timeout:g} s",
            )
        failed = step_failure(res.stderr)
        if failed is not None:
            kind, message = failed
            return CommandResult(host, tuple(full), None, res.stdout, res.stderr, res.duration, kind, message)
        return CommandResult(host, tuple(full), res.exit_code, res.stdout, res.stderr, res.duration)

    def cancel_steps(self, alloc: Allocation, names: Sequence[str]) -> list[str]:
        """Cancel the job's running steps with these names; returns their step ids."""
        wanted = set(names)
        ids = [s.step_id for s in self.steps(alloc.job_id) if s.name in wanted]
        if ids:
            self.command(["scancel", *ids], check=False)
        return ids


def slurm_node(name: str) -> str:
    """``name``, checked as a Slurm node name before it goes on a command line (UsageError, one
    line, when Slurm would read it as something else: ``dgx-[0001-0999]`` is 999 nodes)."""
    bad = unfit(name, SLURM_NODE)
    if bad is not None:
        raise UsageError(str(bad))
    return name


def drain_argv(host: str, finding: str) -> list[str]:
    """``scontrol update NodeName=HOST State=DRAIN Reason="ibfab: <finding>"`` (whitespace folded)."""
    reason = " ".join(finding.split())
    if not reason:
        raise UsageError("a drain needs a reason")
    return [
        "scontrol",
        "update",
        f"NodeName={slurm_node(host)}",
        "State=DRAIN",
        f"Reason={DRAIN_PREFIX}{reason}",
    ]


def resume_argv(host: str) -> list[str]:
    return ["scontrol", "update", f"NodeName={slurm_node(host)}", "State=RESUME"]


def new_token() -> str:
    """A request token no other salloc of this cluster carries."""
    return secrets.token_hex(8)


# -- allocations this process holds -------------------------------------------------------------
# request token -> (the client, the job name, the job id once granted). A process that must stop
# while another of its threads still holds an allocation (the daemon past its grace) releases
# them all with release_all: its threads may not get to their own release before it exits.
_held_lock = threading.Lock()
_held: dict[str, tuple[Slurm, str, str | None]] = {}


def release_all(wait: float = 30.0) -> list[str]:
    """Cancel every allocation this process holds or has asked for; the job ids cancelled."""
    with _held_lock:
        held = list(_held.items())
    done: list[str] = []
    for token, (slurm, job_name, job_id) in held:
        if job_id is not None:
            slurm.release(job_id, wait)
            done.append(job_id)
        else:
            done += slurm.release_requested(token, job_name, wait)
    return done


# -- signals -------------------------------------------------------------------------------------
_CATCH = (signal.SIGTERM, signal.SIGHUP)


@contextmanager
def exit_on_signals() -> Iterator[None]:
    """SIGTERM/SIGHUP become ``SystemExit(128 + n)`` in the main thread, so ``finally`` blocks run.

    Ctrl-C is already a KeyboardInterrupt. Outside the main thread (a daemon's worker) nothing is
    installed: the daemon's own stop path and the allocation's time limit bound it there.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = {s: signal.signal(s, handler) for s in _CATCH}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


@contextmanager
def ignoring_signals() -> Iterator[None]:
    """Let a release finish even if a second SIGTERM arrives (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {s: signal.signal(s, signal.SIG_IGN) for s in _CATCH}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def describe(unavailable: Sequence[Unavailable]) -> str:
    """``node2 (idle+drain: ibfab: BER); node4 (down+not_responding)``, or the folded names when many."""
    if len(unavailable) <= 8:
        return "; ".join(map(str, unavailable))
    return f"{fold_names(u.host for u in unavailable)} ({len(unavailable)} hosts)"
