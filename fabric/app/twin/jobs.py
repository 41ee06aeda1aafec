"""The running Slurm jobs a change touches, named before it is made.

A job is touched when it runs on a host the change takes away (a drained node, an HCA whose cable
is isolated) or when routes between its own nodes cross a switch-to-switch cable the change takes
out: each of its HCAs to each other (within a rail on a rail-optimized fabric), followed through
the forwarding tables (:mod:`topology.route_cross`) over ``squeue``'s allocation of the job. The
tables are the twin's when the change was checked there, else the fabric's own where its driver
reads them unasked (``dump_fts`` on a lab; a real fabric's takes minutes by directed route and is
read when asked for: ``--check-routing``), else a running twin's of the same topology; without
any, which jobs cross a cable is unknown and said so, never guessed.

``--avoid-running-jobs`` holds the change while any touched job runs: :class:`ChangeHeld` (exit 9)
names them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from fabric.app.discovery.discover import Discovery
from fabric.app.session import Session
from fabric.app.slurm import NodeMap
from probes.inventory import expand_hosts
from probes.slurm import Slurm
from topology.errors import UnavailableError
from topology.model import Guid, LinkKey, NodeKind
from topology.route_checks import tiers_of
from topology.route_cross import crossing, out_ports, routes_crossing
from topology.route_walk import Walk, bind, compute_traffic, walk


class ChangeHeld(UnavailableError):
    """``--avoid-running-jobs``: running jobs the change would touch (exit 9)."""


@dataclass(frozen=True)
class TouchedJob:
    job_id: str
    user: str
    node_count: int
    nodes: str  # Slurm's host list
    name: str
    on_hosts: tuple[str, ...]  # fabric hosts of the job that the change takes away
    routes: int | None  # routes between its nodes over the cables taken out (None: not known)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "user": self.user,
            "node_count": self.node_count,
            "nodes": self.nodes,
            "name": self.name,
            "on_hosts": list(self.on_hosts),
            "routes_crossing": self.routes,
        }


@dataclass(frozen=True)
class JobsTouched:
    jobs: tuple[TouchedJob, ...]
    running: int  # running jobs Slurm listed
    routes_from: str  # where the routes came from, or why they are not known
    routes_known: bool
    cables: int  # switch-to-switch cables the change takes out
    hosts: tuple[str, ...]  # fabric hosts the change takes away

    def to_dict(self) -> dict[str, Any]:
        return {
            "jobs": [j.to_dict() for j in self.jobs],
            "running": self.running,
            "routes_from": self.routes_from,
            "routes_known": self.routes_known,
            "cables": self.cables,
            "hosts": list(self.hosts),
        }


def walk_of(d: Discovery, lfts: Any) -> Walk:
    """Every route of ``lfts`` over ``d`` (the walk :func:`topology.route_checks.check_routes` makes)."""
    bound = bind(d.fabric, lfts)
    return walk(bound, compute_traffic(bound, d.classification), tiers_of(bound, d.classification))


def routes_for_jobs(
    d: Discovery, session: Session | None, twin_walk: Walk | None = None
) -> tuple[Walk | None, str]:
    """The routes to follow: the twin's (a check just read them), the session's fabric's own
    where its driver reads them unasked, else a running twin's of this very topology; (None,
    why) when there are none."""
    if twin_walk is not None:
        return twin_walk, "the twin's forwarding tables, read for the routing check"
    from fabric.app.routes.tables import read_tables

    if session is not None and session.driver.reads_tables_unasked:
        tables = read_tables(session, d)
        return walk_of(d, tables.lfts), tables.source
    from fabric.app.twin.build import running_twin, twin_discovery, twin_name, twin_session
    from topology.twin_net import topology_key

    twin = running_twin(twin_name(d.fabric))
    if twin is not None and twin.key == topology_key(d.fabric):
        from fabric.app.twin.tables import twin_tables

        td = twin_discovery(twin)
        lfts = twin_tables(twin_session(twin.name), td)
        return walk_of(td, lfts), f"{lfts.source} (the fabric's twin)"
    return None, (
        "no forwarding tables: which jobs' routes cross the cable is not known "
        "(run against the fabric, give --check-routing, or bring its twin up: ibfab lab up --from)"
    )


def taken_away(d: Discovery, cables: Collection[LinkKey]) -> tuple[set[LinkKey], set[str]]:
    """The switch-to-switch cables among ``cables``, and the hosts whose HCA another one cuts."""
    fabric, cls = d.fabric, d.classification
    isl: set[LinkKey] = set()
    hosts: set[str] = set()
    for key in cables:
        ends = [Guid(g) for g, _ in key]
        kinds = [fabric.nodes[g].kind if g in fabric.nodes else None for g in ends]
        if all(k is NodeKind.SWITCH for k in kinds):
            isl.add(key)
            continue
        for g, k in zip(ends, kinds, strict=True):
            host = cls.nodes[g].host if g in cls.nodes and k is not NodeKind.SWITCH else None
            if host:
                hosts.add(host)
    return isl, hosts


def jobs_touched(
    d: Discovery | None,
    slurm: Slurm,
    node_map: NodeMap,
    *,
    cables: Collection[LinkKey] = (),
    hosts: Collection[str] = (),
    routes: tuple[Walk | None, str] = (None, "no switch-to-switch cable taken out"),
) -> JobsTouched:
    """The running jobs the change (``cables`` taken out, ``hosts`` taken away) touches."""
    isl, cut = taken_away(d, cables) if d is not None else (set(), set())
    away = set(hosts) | cut
    w, where = routes
    marked = crossing(w, out_ports(isl)) if w is not None and isl else None
    running = slurm.running_jobs()
    found = []
    for job in running:
        job_hosts = (
            [node_map.host(n) for n in expand_hosts(job.nodes, f"squeue job {job.job_id}")]
            if job.nodes
            else []
        )
        on = tuple(h for h in job_hosts if h in away)
        n_routes: int | None = None
        if marked is not None and w is not None and d is not None:
            hcas = [g for h in job_hosts for g in d.classification.hosts.get(h, ())]
            n_routes = routes_crossing(w, marked, hcas)
        if on or n_routes:
            found.append(TouchedJob(job.job_id, job.user, job.node_count, job.nodes, job.name, on, n_routes))
    known = not isl or w is not None
    return JobsTouched(tuple(found), len(running), where, known, len(isl), tuple(sorted(away)))


def hold_for_jobs(touched: JobsTouched) -> None:
    """``--avoid-running-jobs``: a :class:`ChangeHeld` naming the running jobs the change touches,
    or the reason they cannot be known."""
    if not touched.routes_known:
        raise ChangeHeld(
            f"cannot tell which running jobs the change touches: {touched.routes_from}; nothing was changed"
        )
    if touched.jobs:
        listed = "; ".join(
            f"job {j.job_id} ({j.user}, {j.node_count} node(s): {j.nodes})" for j in touched.jobs[:10]
        )
        more = f" and {len(touched.jobs) - 10} more" if len(touched.jobs) > 10 else ""
        raise ChangeHeld(
            f"held: {len(touched.jobs)} running job(s) the change touches: {listed}{more}; nothing was changed "
            "(run again when they end)"
        )
