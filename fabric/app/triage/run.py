"""``ibfab triage --hosts RANGE``: the slow node or cable behind a slow collective
(:mod:`fabric.app.triage.bisect`), on a lab (simulated), over SSH, or through Slurm. The hosts
are held for the triage's length as a sweep holds them (no other ibfab probe runs on them)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from fabric.app.hostlocks import host_locks, lock_keys, node_lock_keys
from fabric.app.triage.bisect import TriageBackend, TriageReport, triage
from fabric.app.triage.hosts import expand_range
from probes.nccl import NcclTestOptions
from probes.nccl_model import FabricFacts, fabric_facts
from topology.errors import UsageError
from topology.model import Guid, Link

if TYPE_CHECKING:
    from fabric.app.discovery.discover import Discovery
    from fabric.app.session import Session, StoreAccess
    from probes.slurm_parse import SlurmNode

PAIR_SIZE = 8388608
PAIR_ITERATIONS = 5000
PAIR_TIMEOUT = 120.0  # seconds for one ib_write_bw pair (8 MiB x 5000 takes seconds), or --timeout


def _hosts(hosts_range: str, facts: FabricFacts) -> list[str]:
    hosts = expand_range(hosts_range)
    if len(hosts) < 2:
        raise UsageError(f"--hosts {hosts_range!r}: a triage needs at least two hosts")
    unknown = [h for h in hosts if facts.of(h) is None]
    if unknown:
        from probes.inventory import fold_names

        raise UsageError(
            f"the fabric ({facts.source}) has no HCA of {fold_names(unknown)}: give the fabric these hosts are on"
        )
    return hosts


def _design(d: Discovery, facts: FabricFacts) -> dict[Guid, float]:
    """HCA GUID -> the design rate of its cable."""
    out: dict[Guid, float] = {}
    for guid, c in d.classification.nodes.items():
        if c.host is not None and c.tier == 0:
            for hca in facts.of(c.host) or ():
                if hca.name == (c.adapter or c.name):
                    out[guid] = hca.gbps
    return out


def fabric_of(session: Session) -> Discovery:
    """The fabric the hosts are on: the session's source, a saved ibnetdiscover output or a stored
    snapshot (the newest by default: a triage never runs discovery on its own)."""
    from fabric.app.discovery.discover import discover

    return discover(session)


def triage_lab(hosts_range: str, session: Session, *, gpus_per_node: int = 8) -> TriageReport:
    """Triage on the session's lab: its fabric discovered for real, OpenSM's routes, its injected
    error rates and planted slow nodes; the runs simulated (``lab-simulated``)."""
    from fabric.app.discovery.discover import discover
    from fabric.app.triage.simulated import SimulatedBackend
    from topology.route_pairs import PairRoutes, bind_tables
    from topology.routes import RouteError

    driver = session.driver
    driver.check_ready()
    d = discover(session)
    facts = fabric_facts(d.fabric, d.classification, session.source.label)
    hosts = _hosts(hosts_range, facts)
    tables = driver.forwarding_tables()
    routes = PairRoutes(bind_tables(d.fabric, tables)) if tables is not None else None

    def route(a: Guid, b: Guid) -> list[Link]:
        try:
            return list(routes.route(a, b)) if routes is not None else []
        except RouteError:
            return []

    backend = SimulatedBackend(
        d.fabric, d.classification, facts, driver.planted_nodes(), route_of=route,
        error_rates=driver.error_rates(), gpus_per_node=gpus_per_node,
    )  # fmt: skip
    return _held(hosts, facts, backend, lock_keys(hosts, driver), session.store)


def _held(
    hosts: Sequence[str], facts: FabricFacts, backend: TriageBackend, keys: Sequence[str], stored: StoreAccess
) -> TriageReport:
    with host_locks(stored).hold(keys, 0, "triage"):
        return triage(hosts, facts, backend)


def triage_ssh(
    hosts_range: str,
    discovery: Discovery,
    opts: NcclTestOptions,
    session: Session,
    *,
    gpus_per_node: int = 8,
    mpirun: str = "mpirun",
    allow_run_as_root: bool = False,
    timeout: float = 1800.0,
) -> TriageReport:
    """Triage over SSH: nccl-tests by mpirun on each test's first host, ib_write_bw pairs between
    the inventory's hosts (the session's ``ssh.inventory``)."""
    from fabric.app.drivers import run_on_host
    from fabric.app.source import with_identity
    from fabric.app.triage.lost import mpirun_launch, ssh_pairs_lost
    from fabric.app.triage.remote import LaunchedBackend, PairsOnFabric
    from probes.inventory import read_inventory
    from probes.perftest import PerftestOptions
    from probes.ssh import ssh_transport_factory
    from probes.sweep import SshPerftestBackend
    from probes.transport import CommandResult, HostError

    ssh = session.ssh
    if not ssh.inventory:
        raise UsageError("triage over SSH needs --inventory FILE (the hosts, how to reach them)")
    facts = fabric_facts(discovery.fabric, discovery.classification, discovery.source)
    hosts = _hosts(hosts_range, facts)
    inventory = read_inventory(ssh.inventory)
    known = {h.name: with_identity(h, ssh.identity) for h in inventory.hosts}
    missing = [h for h in hosts if h not in known]
    if missing:
        raise UsageError(f"not in {inventory.source}: {', '.join(missing)}")
    design = _design(discovery, facts)
    pairs = SshPerftestBackend(
        {h: known[h] for h in hosts},
        ssh_transport_factory(known_hosts=ssh.known_hosts, accept_new=ssh.accept_new_host_key),
        PerftestOptions("ib_write_bw", size=PAIR_SIZE, iterations=PAIR_ITERATIONS),
        line_rates=design,
    )

    def on_head(head: str, argv: Sequence[str], t: float) -> object:
        try:
            return run_on_host(head, argv, t, ssh, ok_codes=range(256))
        except HostError as exc:  # a record, so the triage can tell a head that stopped answering
            return CommandResult(head, tuple(argv), None, "", "", 0.0, exc.kind, exc.message)

    backend = LaunchedBackend(
        "ssh", on_head, opts, pairs, PairsOnFabric(discovery.fabric, discovery.classification, design),
        gpus_per_node=gpus_per_node, timeout=timeout,
        plan_extra={"mpirun": mpirun, "allow_run_as_root": allow_run_as_root},
        lost_of=lambda hosts, res: mpirun_launch(hosts, res, hosts[0]), pairs_lost=ssh_pairs_lost(pairs),
    )  # fmt: skip
    return _held(hosts, facts, backend, lock_keys(hosts, session.driver), session.store)


def triage_slurm(
    nodes_range: str,
    discovery: Discovery,
    opts: NcclTestOptions,
    session: Session,
    *,
    partition: str | None = None,
    reservation: str | None = None,
    gpus_per_node: int = 8,
    mpi: str | None = "pmix",
    request_gpus: bool = True,
    timeout: float = 1800.0,
    env: Mapping[str, str] | None = None,
) -> TriageReport:
    """Triage through Slurm: one allocation of every node, each test a job step in it (nccl-tests
    by srun, ib_write_bw pairs as a sweep's steps); released on every way out."""
    from fabric.app.slurm import connect
    from fabric.app.sweeps.nccl_slurm import run_in_allocation
    from fabric.app.triage.lost import slurm_pairs_lost, slurm_step
    from fabric.app.triage.remote import LaunchedBackend, PairsOnFabric
    from probes.perftest import PerftestOptions
    from probes.slurm import AllocationRequest, SlurmUnavailable, describe
    from probes.slurm_sweep import PerftestSteps, SlurmSweepBackend

    facts = fabric_facts(discovery.fabric, discovery.classification, discovery.source)
    hosts = _hosts(nodes_range, facts)
    slurm = connect(env)
    node_map = session.node_map
    node_of = {h: (node_map.node(h) if node_map is not None else h) for h in hosts}
    request = AllocationRequest(
        hosts=tuple(node_of[h] for h in hosts), partition=partition, reservation=reservation,
        time_limit_minutes=max(30, int(timeout * 8 / 60)), job_name="ibfab-triage", immediate=30,
        gpus_per_node=gpus_per_node if request_gpus else None,
    )  # fmt: skip
    design = _design(discovery, facts)
    keys = node_lock_keys(list(node_of.values()), node_map)
    # Every node at once or nothing: a node Slurm will not give stops the triage before it allocates.
    _, refused = slurm.check_hosts(request.hosts, partition, reservation)
    if refused:
        raise SlurmUnavailable(f"triage needs every node; Slurm will not give {describe(refused)}", refused)
    steps = itertools.count(1)
    with host_locks(session.store).hold(keys, 0, "triage"), slurm.allocation(request) as alloc:
        if alloc.unavailable:
            raise SlurmUnavailable(
                f"triage needs every node; Slurm did not give {describe(alloc.unavailable)}",
                alloc.unavailable,
            )
        pairs = SlurmSweepBackend(
            slurm, alloc, PerftestSteps(PerftestOptions("ib_write_bw", size=PAIR_SIZE, iterations=PAIR_ITERATIONS)),
            node_of=node_of, line_rates=design, timeout=min(timeout, PAIR_TIMEOUT),
        )  # fmt: skip

        def on_slurm(head: str, argv: Sequence[str], t: float) -> object:
            del head
            # A step name of its own: a test that overruns is cancelled by name, and the others
            # of its round, still running, must not be cancelled with it.
            return run_in_allocation(slurm, alloc, argv, f"triage-{next(steps)}", t)

        def states(nodes: Sequence[str]) -> list[SlurmNode]:
            return slurm.nodes(nodes)

        backend = LaunchedBackend(
            "slurm", on_slurm, opts, pairs, PairsOnFabric(discovery.fabric, discovery.classification, design),
            launcher="srun", gpus_per_node=gpus_per_node, timeout=timeout,
            plan_extra={"mpi": mpi, "request_gpus": request_gpus}, node_of=node_of,
            lost_of=lambda hosts, res: slurm_step(hosts, res, node_of, states),
            pairs_lost=slurm_pairs_lost(pairs, node_of, states),
        )  # fmt: skip
        # The job whose steps ran every test: an operator finds their logs with sacct -j.
        return replace(triage(hosts, facts, backend), slurm_jobs=(alloc.job_id,))


__all__ = ["fabric_of", "triage_lab", "triage_slurm", "triage_ssh"]
