"""The hosts a sweep holds while it probes them, and the lock files every ibfab process sees.

Locks are per host and live next to the store (``<store's directory>/hostlocks``), so the daemon
and CLI sweeps on that store never probe one host at once (:class:`probes.hostlocks.HostLocks`:
``flock`` files, free again when their holder exits or dies). A lab's hosts are simulated: they
are locked as ``lab NAME/HOST``, so two sweeps of one lab take turns while a lab never blocks a
real host of the same name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fabric.store import store_path
from probes.hostlocks import HostBusy, HostLocks
from probes.plan import SweepPlan


def lock_dir(db: str | Path | None) -> Path:
    return store_path(db).parent / "hostlocks"


def host_locks(db: str | Path | None) -> HostLocks:
    """Locks shared with every ibfab process using the store ``db`` names."""
    return HostLocks(lock_dir(db))


def plan_hosts(plan: SweepPlan) -> list[str]:
    return sorted({e.host for p in plan.probes for e in (p.client, p.server)})


def lock_keys(hosts: Sequence[str], lab: str | None) -> list[str]:
    return [f"lab {lab}/{h}" for h in hosts] if lab else list(hosts)


__all__ = ["HostBusy", "host_locks", "lock_dir", "lock_keys", "plan_hosts"]
