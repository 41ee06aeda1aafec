"""Hosts of an inventory over SSH: run a command on each (``ibfab hosts run``), HCA preflight
(``ibfab hosts check``), and this machine's own HCAs (``ibfab hca``).

Every host answers with a record (a failure is a record, never an exception); the folding of
identical answers into host ranges is :func:`probes.fanout.fold`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from fabric.app.source import with_identity
from probes.fanout import FoldedResult, fan_out, fold
from probes.inventory import HostEntry, Inventory, fold_names, host_sort_key, read_inventory
from probes.preflight import HcaPort, HostHcas, local_hcas, preflight_hosts
from probes.ssh import SshTransport, ssh_transport_factory
from probes.transport import CommandResult
from topology.errors import TransportError

__all__ = [
    "FoldedResult",
    "HostsRequest",
    "check_hosts",
    "exit_code_of",
    "fold",
    "fold_names",
    "group_preflight",
    "local_ports",
    "run_on_hosts",
]


@dataclass(frozen=True, slots=True)
class HostsRequest:
    """Which hosts and how to reach them."""

    inventory: str
    pattern: str | None = None  # only these hosts, e.g. 'dgx-[0001-0008]'
    identity: str | None = None
    known_hosts: str | None = None
    accept_new_host_key: bool = False
    concurrency: int = 16
    workers: int | None = None  # processes for the fan-out; None: by host count and cores
    timeout: float = 60.0
    connect_timeout: float = 10.0
    retries: int = 2
    ssh_config: str | None = "~/.ssh/config"


def _inventory(req: HostsRequest) -> Inventory:
    inventory = read_inventory(req.inventory)
    if req.pattern:
        inventory = inventory.select(req.pattern)
    if req.identity:
        inventory = replace(inventory, hosts=tuple(with_identity(h, req.identity) for h in inventory.hosts))
    return inventory


def _factory(req: HostsRequest) -> Callable[[HostEntry], SshTransport]:
    return ssh_transport_factory(
        known_hosts=req.known_hosts,
        accept_new=req.accept_new_host_key,
        connect_timeout=req.connect_timeout,
        retries=req.retries,
        ssh_config=req.ssh_config or None,
    )


def run_on_hosts(req: HostsRequest, argv: Sequence[str]) -> list[CommandResult]:
    """``argv`` on every host, at most ``concurrency`` at once; sorted by host name."""
    return fan_out(
        _inventory(req).hosts, list(argv), _factory(req), req.concurrency, req.timeout, workers=req.workers
    )


def check_hosts(req: HostsRequest) -> list[HostHcas]:
    return preflight_hosts(
        _inventory(req).hosts, _factory(req), req.concurrency, req.timeout, workers=req.workers
    )


def group_preflight(reports: Sequence[HostHcas]) -> list[tuple[str, int, bool, str]]:
    """Identical preflight answers folded: (host range, host count, fine, summary), by first host."""
    groups: dict[tuple[bool, str], list[str]] = {}
    for r in reports:
        groups.setdefault((r.problem is None, r.summary()), []).append(r.host)
    rows = sorted(groups.items(), key=lambda kv: min(host_sort_key(h) for h in kv[1]))
    return [(fold_names(names), len(names), fine, summary) for (fine, summary), names in rows]


def exit_code_of(failed: Sequence[CommandResult]) -> int:
    """0 when nothing failed; the transport code (7) when a host could not be reached, else 1."""
    if not failed:
        return 0
    unreachable = any(r.failure is not None and r.failure.value != "command_timeout" for r in failed)
    return TransportError.exit_code if unreachable else 1


def local_ports(host: str, sysfs_root: str) -> list[HcaPort]:
    return local_hcas(host, sysfs_root)
