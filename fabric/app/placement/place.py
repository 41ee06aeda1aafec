"""``ibfab place``: N hosts for a job from the free ones (a file or Slurm), packed or spread; and
the health placement and the scheduler exports weigh (the hosts and links to avoid)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fabric.app.discovery.discover import Discovery
from fabric.app.health.assess import assess_store, counters_store
from fabric.app.session import StoreAccess
from fabric.app.slurm import NodeMap
from fabric.exports.hostfile import Slots, fabric_slots
from fabric.placement import (
    Placement,
    PlacementHealth,
    health_view_from_links,
    parse_host_list,
    place,
    unhealthy_hosts,
)
from probes.inventory import expand_hosts
from topology.textfile import read_input_text


def placement_health(d: Discovery, stored: StoreAccess, hours: float) -> PlacementHealth:
    """Health over the last ``hours`` from the store (one-line errors when it holds no samples),
    as placement and the exports weigh it: per host its worst cable, per link its status."""
    with counters_store(stored) as store:
        view = assess_store(store, since_s=hours * 3600.0, record=False)
    return health_view_from_links(
        d.fabric,
        d.classification,
        ((lk.key, lk.status.value, lk.reasons, lk.repeat_offender) for lk in view.report.links),
    )


@dataclass(frozen=True, slots=True)
class FreeHosts:
    """The hosts a job may get: ``hosts`` None means every compute host of the fabric; ``busy``
    are hosts the scheduler holds, kept as candidates so that each is left out with its reason."""

    hosts: tuple[str, ...] | None = None
    busy: Mapping[str, str] = field(default_factory=dict)


def free_from_file(path: str) -> FreeHosts:
    """One host or host range a line (``#`` comments), read bounded; one-line errors."""
    text = read_input_text(path, "free host list", max_bytes=16 << 20, strict=True)
    return FreeHosts(tuple(parse_host_list(text, path)))


def free_from_slurm(partition: str | None, reservation: str | None, node_map: NodeMap | None) -> FreeHosts:
    """What Slurm could give now in ``partition``/``reservation``; its busy nodes with Slurm's reason."""
    from fabric.app.slurm import connect, hosts_for_jobs

    found = hosts_for_jobs(connect(), partition, reservation, node_map or NodeMap())
    return FreeHosts((*found.free, *found.busy), dict(found.busy))


def place_hosts(
    d: Discovery,
    n: int,
    free: FreeHosts,
    *,
    policy: str = "pack",
    excluded: Sequence[str] = (),
    exclude_unhealthy: bool = False,
    health_hours: float = 24.0,
    stored: StoreAccess | None = None,
    include_service: bool = False,
) -> Placement:
    """``n`` hosts of ``free`` in ring order, packed or spread, leaving out the scheduler's busy
    hosts, the ``excluded`` host ranges, (``exclude_unhealthy``) hosts whose cable is warn or worse
    and, unless ``include_service``, service hosts (topology.hostroles)."""
    exclude: dict[str, str] = dict(free.busy)
    for pattern in excluded:
        exclude.update({h: "on the command line" for h in expand_hosts(pattern, "--exclude")})
    health = None
    if exclude_unhealthy:
        health = placement_health(d, stored or StoreAccess.at(), health_hours)
        exclude = {**unhealthy_hosts(health), **exclude}
    return place(
        d.fabric,
        d.classification,
        n,
        free=list(free.hosts) if free.hosts is not None else None,
        policy=policy,
        exclude=exclude,
        health=health,
        include_service=include_service,
    )


def host_slots(d: Discovery, given: int | None = None) -> Slots:
    """Ranks per host for a hostfile: ``given`` (--slots), else the HCAs a compute host has on a
    rail-optimized fabric (one GPU per rail HCA), else 1 (fabric.exports.hostfile)."""
    return fabric_slots(d.classification, given)
