"""What a schedule runs: one counter collection or one probe sweep, through the same services as
``ibfab counters collect`` and ``ibfab sweep run``.

A job's arguments are the schedule's ``args`` (a JSON object written by ``ibfab schedule add``):
the source (``lab``, ``ssh`` + SSH options, or nothing for this machine) and, for sweeps,
``pattern``, ``pairs``, ``input``, ``routes``, ``inventory``, ``per_host``, ``retest``, ``timeout``,
and ``launcher: slurm`` with ``partition``, ``reservation``, ``nodes``, ``idle``, ``node_map``,
``time_limit``, ``shared_dir`` (the sweep as job steps of one allocation, as ``sweep run
--launcher slurm`` runs it).

Every sweep job shares one :class:`~probes.fanout.HostLocks` (the daemon's, with lock files next to
the store that CLI sweeps take too), so no host runs two probes at once: a lab sweep takes the hosts
of each round before running it, an SSH or Slurm sweep takes all the hosts of its plan for the whole
sweep; a job waits at most ``JobContext.host_wait`` for them, then fails naming the holder. Each hold is written to a :class:`HostActivity`
log (host, job, start, end) so that claim can be checked.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fabric.app.health.collect import SnapshotOutcome
from fabric.app.hostlocks import lock_keys
from fabric.app.session import Session, StoreAccess
from fabric.app.source import Source, SshOptions
from fabric.store import Schedule
from probes import slurm, transport
from probes.driver import FabricDriver
from probes.fanout import HostLocks
from probes.pairs import PairResult, Probe
from probes.sweep import LabTrafficBackend
from topology.errors import UsageError

SOURCE_KEYS = ("lab", "ssh", "inventory", "known_hosts", "accept_new_host_key", "identity")
SWEEP_KEYS = ("pattern", "pairs", "input", "routes", "per_host", "retest", "timeout")
# ``launcher: slurm`` and where in Slurm, as ``ibfab sweep run --launcher slurm`` takes them
SLURM_KEYS = ("launcher", "partition", "reservation", "nodes", "idle", "node_map", "time_limit", "shared_dir")


@dataclass(frozen=True, slots=True)
class HostHold:
    """One job held ``host`` from ``started`` to ``finished`` (seconds since the epoch)."""

    host: str
    job: str
    started: float
    finished: float


@dataclass
class HostActivity:
    """Thread-safe log of host holds, for checking that no host ran two probes at once."""

    holds: list[HostHold] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, hosts: Sequence[str], job: str, started: float, finished: float) -> None:
        with self._lock:
            self.holds.extend(HostHold(h, job, started, finished) for h in hosts)

    def overlaps(self) -> list[tuple[HostHold, HostHold]]:
        """Pairs of holds of the same host by different jobs whose times intersect."""
        with self._lock:
            by_host: dict[str, list[HostHold]] = {}
            for h in self.holds:
                by_host.setdefault(h.host, []).append(h)
        found = []
        for holds in by_host.values():
            holds.sort(key=lambda h: h.started)
            for i, a in enumerate(holds):
                found += [(a, b) for b in holds[i + 1 :] if b.started < a.finished and a.job != b.job]
        return found


@dataclass(frozen=True)
class JobContext:
    """What every job of one daemon shares."""

    store: StoreAccess
    locks: HostLocks
    activity: HostActivity
    host_wait: float = 3600.0  # seconds a job waits for hosts another sweep holds, then fails naming it


class HostLockedLabBackend(LabTrafficBackend):
    """The lab's simulated traffic, each round run only while its hosts are held."""

    def __init__(
        self,
        inner: LabTrafficBackend,
        locks: HostLocks,
        activity: HostActivity,
        job: str,
        driver: FabricDriver,
        wait: float | None = None,
    ) -> None:
        super().__init__(inner.fabric, inner.paths, inner.error_rates)
        self.locks = locks
        self.activity = activity
        self.job = job
        self.driver = driver
        self.wait = wait

    def run_round(self, probes: Sequence[Probe], attempt: int) -> list[PairResult]:
        hosts = sorted({e.host for p in probes for e in (p.client, p.server)})
        with self.locks.hold(lock_keys(hosts, self.driver), self.wait, f"schedule {self.job}"):
            start = time.time()
            try:
                return super().run_round(probes, attempt)
            finally:
                self.activity.add(hosts, self.job, start, time.time())


def _text(args: Mapping[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"schedule argument {key} must be text, not {value!r}")
    return value


def _ssh_options(args: Mapping[str, Any]) -> SshOptions:
    return SshOptions(
        _text(args, "inventory"),
        _text(args, "known_hosts"),
        bool(args.get("accept_new_host_key", False)),
        _text(args, "identity"),
    )


def job_session(schedule: Schedule, ctx: JobContext, source: Source) -> Session:
    """The session of one run of ``schedule``: its fabric, the daemon's store, the schedule's SSH
    options (each job has its own: the daemon builds one per job)."""
    return Session(source, ctx.store, ssh=_ssh_options(schedule.args))


def run_counters(schedule: Schedule, ctx: JobContext) -> SnapshotOutcome:
    """One counter collection from the schedule's source into the daemon's store."""
    from fabric.app.health.collect import Collector
    from fabric.app.storecare.retention import compact_after_collection

    args = schedule.args
    lab, ssh = _text(args, "lab"), _text(args, "ssh")
    if lab and ssh:
        raise UsageError(f"schedule {schedule.name}: give one of lab or ssh, not both")
    src = Source.lab(lab) if lab else Source.ssh(ssh) if ssh else Source.local()
    session = job_session(schedule, ctx, src)
    session.driver.check_ready()
    with ctx.store.write() as store:
        outcome = Collector(store, session).collect_once()
        compact_after_collection(store)
        return outcome


def run_sweep_job(schedule: Schedule, ctx: JobContext) -> SweepJobResult:
    """Plan and run one sweep (lab-simulated or ib_write_bw over SSH) and store it."""
    from fabric.app.sweeps import sweep as sweeps

    args = schedule.args
    lab, input_path, inventory = _text(args, "lab"), _text(args, "input"), _text(args, "inventory")
    pattern = _text(args, "pattern") or "rail-pairs"
    retest = bool(args.get("retest", True))
    slurm = slurm_choice_of(args)
    if slurm is not None and inventory is not None:
        raise UsageError(
            f"schedule {schedule.name}: a Slurm sweep reaches its hosts through Slurm, not an inventory"
        )
    if lab is None and inventory is None and (slurm is None or input_path is None):
        raise UsageError(
            f"schedule {schedule.name}: a sweep needs a lab, an inventory, or Slurm and an input"
        )
    session = job_session(schedule, ctx, sweeps.sweep_source(lab, input_path))
    session.driver.check_ready()
    sweep_ctx = sweeps.prepare(
        session,
        pattern,
        routes_path=_text(args, "routes"),
        pairs_path=_text(args, "pairs"),
        per_host=bool(args.get("per_host", False)),
        include_service=bool(args.get("include_service", False)),
    )
    names = sweeps.names_of(sweep_ctx.discovery)
    source = sweep_ctx.source
    hosts = sorted({e.host for p in sweep_ctx.plan.probes for e in (p.client, p.server)})
    if slurm is not None:
        from fabric.app.sweeps.sweep_slurm import run_slurm, stored_source

        # The plan's hosts are held here for the whole sweep, as for an SSH sweep (so run_slurm
        # is not given the locks: it would take them a second time).
        with ctx.locks.hold(
            lock_keys(hosts, session.driver, slurm.node_map), ctx.host_wait, f"schedule {schedule.name}"
        ):
            start = time.time()
            try:
                report = run_slurm(
                    sweep_ctx, slurm, session, retest=retest, timeout=float(args.get("timeout", 120.0))
                )
            finally:
                ctx.activity.add(hosts, schedule.name, start, time.time())
        outcome, source = report.outcome, stored_source(sweep_ctx.source, report)
    elif session.driver.simulated:
        outcome = _lab_sweep(sweep_ctx, session.driver, retest, ctx, schedule.name)
    else:
        assert inventory is not None
        with ctx.locks.hold(hosts, ctx.host_wait, f"schedule {schedule.name}"):
            start = time.time()
            try:
                outcome = sweeps.run_ssh(
                    sweep_ctx,
                    inventory,
                    known_hosts=_text(args, "known_hosts"),
                    accept_new=bool(args.get("accept_new_host_key", False)),
                    identity=_text(args, "identity"),
                    retest=retest,
                    timeout=float(args.get("timeout", 120.0)),
                )
            finally:
                ctx.activity.add(hosts, schedule.name, start, time.time())
    sweep_id = sweeps.save(outcome, source, names, ctx.store)
    top = None
    if outcome.suspects:
        s = outcome.suspects[0].link
        top = (f"{names.get(s.a.guid, s.a.guid)}/{s.a.port}", f"{names.get(s.b.guid, s.b.guid)}/{s.b.port}")
    return SweepJobResult(
        sweep_id, outcome.backend, len(outcome.results), sum(1 for r in outcome.results if not r.ok), top
    )


def slurm_choice_of(args: Mapping[str, Any]) -> Any:
    """The schedule's :class:`~fabric.app.sweeps.sweep_slurm.SlurmChoice`, or None unless ``launcher`` is
    ``slurm`` (the Slurm keys without it are refused, as on the command line)."""
    launcher = _text(args, "launcher") or "ssh"
    if launcher not in ("ssh", "slurm"):
        raise UsageError(f"schedule argument launcher must be ssh or slurm, not {launcher!r}")
    given = [k for k in SLURM_KEYS[1:] if args.get(k) not in (None, False)]
    if launcher != "slurm":
        if given:
            raise UsageError(f"schedule arguments {', '.join(given)} only apply with launcher slurm")
        return None
    from fabric.app.slurm import read_node_map
    from fabric.app.sweeps.sweep_slurm import SlurmChoice

    limit = args.get("time_limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise UsageError(f"schedule argument time_limit must be whole minutes, not {limit!r}")
    return SlurmChoice(
        _text(args, "partition"),
        _text(args, "reservation"),
        _text(args, "nodes"),
        bool(args.get("idle", False)),
        read_node_map(_text(args, "node_map")),
        limit,
        shared_dir=_text(args, "shared_dir"),
    )


def _lab_sweep(sweep_ctx: Any, driver: FabricDriver, retest: bool, ctx: JobContext, job: str) -> Any:
    # sweeps.run_lab, with a backend that takes each round's hosts from the shared locks.
    from fabric.app.sweeps.sweep import names_of
    from probes.sweep import run_sweep

    rates = driver.error_rates()
    plain = LabTrafficBackend(sweep_ctx.discovery.fabric, sweep_ctx.plan.paths, rates)
    backend = HostLockedLabBackend(plain, ctx.locks, ctx.activity, job, driver, ctx.host_wait)
    d = sweep_ctx.discovery
    return run_sweep(
        sweep_ctx.plan,
        backend,
        retest=retest,
        fabric=d.fabric,
        tables=sweep_ctx.tables,
        candidates=sweep_ctx.candidates(),
        names=names_of(d),
    )


@dataclass(frozen=True, slots=True)
class SweepJobResult:
    """What one scheduled sweep stored: its id, backend, pair results, failures, top suspect."""

    sweep_id: int
    backend: str
    results: int
    failed: int
    top_suspect: tuple[str, str] | None  # both ends, named


JobResult = SnapshotOutcome | SweepJobResult


def run_job(schedule: Schedule, ctx: JobContext) -> JobResult:
    """Run the schedule's job once; returns what it stored, raises IbfabError on failure."""
    if schedule.kind == "counters":
        return run_counters(schedule, ctx)
    if schedule.kind == "sweep":
        return run_sweep_job(schedule, ctx)
    raise UsageError(f"schedule {schedule.name}: unknown job kind {schedule.kind!r}")


__all__ = [
    "SLURM_KEYS",
    "SOURCE_KEYS",
    "SWEEP_KEYS",
    "HostActivity",
    "HostHold",
    "HostLockedLabBackend",
    "JobContext",
    "JobResult",
    "SweepJobResult",
    "job_session",
    "run_counters",
    "run_job",
    "run_sweep_job",
    "slurm_choice_of",
]


def end_running_work(jobs: Sequence[threading.Thread] = ()) -> tuple[int, tuple[str, ...]]:
    """End every tool this process still runs (local process groups, remote SSH sessions) and
    cancel the Slurm allocations it holds or has asked for: how many tools, which Slurm jobs. The
    ``jobs`` threads start no new command from then on (probes.transport.refuse)."""
    ended = transport.stop_all(refusing=jobs)
    released = slurm.release_all()
    return ended, tuple(released)
