"""The hosts a sweep holds while it probes them, and the lock files every ibfab process sees.

Locks are per host and live next to the store (``<store's directory>/hostlocks``), so the daemon
and CLI sweeps on that store never probe one host at once (:class:`probes.hostlocks.HostLocks`:
``flock`` files, free again when their holder exits or dies). A host a node map names as another Slurm node is
locked under both names (:func:`lock_keys`). A lab's hosts are simulated: they
are locked as ``lab NAME/HOST``, so two sweeps of one lab take turns while a lab never blocks a
real host of the same name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fabric.app.slurm import NodeMap
from probes.hostlocks import HostBusy, HostLocks
from probes.plan import SweepPlan

if TYPE_CHECKING:
    from fabric.app.session import StoreAccess
    from probes.driver import FabricDriver


def lock_dir(stored: StoreAccess) -> Path:
    return stored.path.parent / "hostlocks"


def host_locks(stored: StoreAccess) -> HostLocks:
    """Locks shared with every ibfab process using that store."""
    return HostLocks(lock_dir(stored))


def plan_hosts(plan: SweepPlan) -> list[str]:
    return sorted({e.host for p in plan.probes for e in (p.client, p.server)})


def lock_keys(hosts: Sequence[str], driver: FabricDriver, node_map: NodeMap | None = None) -> list[str]:
    """The lock names of ``hosts`` (fabric host names) on the driver's fabric. Where a node map
    says a host is another Slurm node, both names are held: ``probe nccl --launcher srun`` knows the
    node's name only, an SSH sweep the host's, and one machine must not be probed under two names
    at once. A simulation's hosts are its own (the driver's name space)."""
    prefix = driver.host_lock_prefix()
    if prefix is not None:
        return [f"{prefix}/{h}" for h in hosts]
    names = set(hosts) | ({node_map.node(h) for h in hosts} if node_map is not None else set())
    return sorted(names)


def node_lock_keys(nodes: Sequence[str], node_map: NodeMap | None) -> list[str]:
    """The lock names of Slurm ``nodes``: each node's, and its fabric host's where the node map
    says it differs (the other direction of :func:`lock_keys`)."""
    return sorted(set(nodes) | ({node_map.host(n) for n in nodes} if node_map is not None else set()))


__all__ = ["HostBusy", "host_locks", "lock_dir", "lock_keys", "node_lock_keys", "plan_hosts"]
