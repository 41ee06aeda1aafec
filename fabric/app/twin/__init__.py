"""The twin room: a lab copy of the operator's fabric, and every change checked on it first.

* :mod:`fabric.app.twin.build`: the twin built from a capture, an ibdiagnet run or a stored
  snapshot (``ibfab lab up --from``), proved equal to it by its own discovery, kept up between
  checks (one per fabric, rebuilt when the topology or the engine changes);
* :mod:`fabric.app.twin.engine`: the site's routing engine from evidence (the SM's log,
  opensm.conf, ibdiagnet's AR state) or the operator's ``--engine``; unknown is said;
* :mod:`fabric.app.twin.check`: a plan run on the twin through its lab driver, as a plan runs on
  the fabric through the fabric's, routes before and after, and the verdict
  (:mod:`fabric.advise.routing_check`);
* :mod:`fabric.app.twin.jobs`: the running Slurm jobs whose traffic crosses what a change takes
  out.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from fabric.advise.twin_engine import EngineChoice
from fabric.app.discovery.discover import Discovery
from fabric.app.session import Session
from fabric.app.twin.build import (
    Twin,
    build_twin,
    read_from,
    require_equal,
    running_twin,
    twin_lock,
    twin_name,
)
from fabric.app.twin.check import TwinCheck, check_isolation, check_unplug
from fabric.app.twin.engine import site_engine
from fabric.app.twin.jobs import JobsTouched, hold_for_jobs, jobs_touched, routes_for_jobs, taken_away
from topology.errors import UsageError
from topology.model import LinkKey, PortRef
from topology.route_walk import Walk

if TYPE_CHECKING:
    from fabric.app.isolation.isolate import AppliedChange, IsolationPlan
    from probes.driver import FabricDriver

__all__ = [
    "Twin",
    "TwinCheck",
    "apply_isolation_checked",
    "build_twin",
    "check_drain",
    "check_plan",
    "engine_for_check",
    "hold_for_jobs",
    "read_from",
    "require_equal",
    "routing_gate",
    "site_engine",
    "touched_jobs",
    "twin_lock",
    "twin_name",
    "up_from",
]


def up_from(
    ref: str,
    session: Session,
    *,
    name: str | None = None,
    engine: str | None = None,
    sm_log: str | None = None,
    sm_conf: str | None = None,
    lfts_file: str | None = None,
    qos: bool = False,
) -> Twin:
    """``ibfab lab up --from REF``: the twin of the fabric ``REF`` names (a stored snapshot in the
    session's store), with the site's engine (an ibdiagnet run given as ``REF`` adds its
    switches' AR state to the evidence); ``qos``: its OpenSM runs with QoS (``-Q``)."""
    from pathlib import Path

    d = read_from(ref, session)
    choice = site_engine(
        engine, sm_log=sm_log, sm_conf=sm_conf, ibdiagnet=ref if Path(ref).is_dir() else None
    )
    target = name or twin_name(d.fabric)
    with twin_lock(target):
        return build_twin(d, choice, name=target, lfts_file=lfts_file, qos=qos)


def engine_for_check(
    d: Discovery,
    *,
    engine: str | None = None,
    sm_log: str | None = None,
    sm_conf: str | None = None,
    ibdiagnet: str | None = None,
    driver: FabricDriver | None = None,
) -> EngineChoice:
    """The engine a routing check of a change to ``d`` runs: what the operator or the evidence
    given says; the SM's log the fabric's driver knows (a lab's own OpenSM's); else what the
    fabric's running twin was built with (its evidence recorded then); else unknown, and the
    check says why it cannot be done."""
    if driver is not None and sm_log is None:
        sm_log = driver.sm_log()
    if engine or sm_log or sm_conf or ibdiagnet:
        return site_engine(engine, sm_log=sm_log, sm_conf=sm_conf, ibdiagnet=ibdiagnet)
    have = running_twin(twin_name(d.fabric))
    if have is not None and have.engine.known:
        return have.engine
    return site_engine()


def check_plan(d: Discovery, ports: Sequence[PortRef], choice: EngineChoice) -> TwinCheck:
    """The isolation of ``ports`` checked on ``d``'s twin (built or kept up)."""
    return check_isolation(d, ports, choice)


def check_drain(d: Discovery, hosts: Sequence[str], choice: EngineChoice) -> TwinCheck:
    """The drained ``hosts`` taken away (their HCAs' cables unplugged) on ``d``'s twin."""
    hcas = [g for h in hosts for g in d.classification.hosts.get(h, ())]
    if not hcas:
        raise UsageError(f"no HCA of {', '.join(hosts)} in the fabric: nothing to check on the twin")
    return check_unplug(d, hcas, choice)


def touched_jobs(
    d: Discovery | None,
    session: Session,
    *,
    cables: Collection[LinkKey] = (),
    hosts: Collection[str] = (),
    check: TwinCheck | None = None,
) -> JobsTouched:
    """The running Slurm jobs taking ``cables`` out of ``d`` (or ``hosts`` away) touches: Slurm as
    this machine reaches it, the session's node map, routes from the twin's check, the session's
    fabric where its driver reads them unasked (a lab), or the fabric's running twin."""
    from fabric.app.slurm import NodeMap, connect

    nodes = session.node_map or NodeMap()
    slurm = connect()
    isl, _ = taken_away(d, cables) if d is not None else (set(), set())
    routes: tuple[Walk | None, str] = (None, "no switch-to-switch cable taken out")
    if isl and d is not None:
        twin_walk = (
            check.routes_before.walk if check is not None and check.routes_before is not None else None
        )
        routes = routes_for_jobs(d, session, twin_walk)
    return jobs_touched(d, slurm, nodes, cables=cables, hosts=hosts, routes=routes)


def routing_gate(d: Discovery, ports: Sequence[PortRef]) -> TwinCheck | None:
    """The check an isolation applied without an operator at the command line gets (the TUI's,
    an automatic one): where the fabric's twin is up with a known engine, the change runs there
    first and a STOP verdict refuses it (SafetyError, nothing changed). None when no such twin is
    up: nothing to check on, said by the caller."""
    from topology.errors import SafetyError
    from topology.twin_net import topology_key

    twin = running_twin(twin_name(d.fabric))
    if not ports or twin is None or twin.key != topology_key(d.fabric) or not twin.engine.known:
        return None
    check = check_isolation(d, ports, twin.engine)
    if check.verdict.value == "stop":
        kinds = ", ".join(sorted({i.kind for i in check.issues if i.verdict.value == "stop"}))
        raise SafetyError(
            f"the routing check on twin {twin.name} stops the change ({kinds}); nothing was changed"
        )
    return check


def apply_isolation_checked(session: Session, plan: IsolationPlan) -> list[AppliedChange]:
    """An isolation applied without an operator at a command line to read a check (the TUI's):
    applied as ``ibfab isolate --apply`` applies it, with :func:`routing_gate` under the change
    lock first (where the fabric's twin is up, a STOP refuses the change)."""
    from fabric.app.isolation.changes import apply_isolation

    return apply_isolation(session, plan, gate=routing_gate)
