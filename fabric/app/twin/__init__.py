"""The twin room: a lab copy of the operator's fabric, and every change checked on it first.

* :mod:`fabric.app.twin.build`: the twin built from a capture, an ibdiagnet run or a stored
  snapshot (``ibfab lab up --from``), proved equal to it by its own discovery, kept up between
  checks (one per fabric, rebuilt when the topology or the engine changes);
* :mod:`fabric.app.twin.engine`: the site's routing engine from evidence (the SM's log,
  opensm.conf, ibdiagnet's AR state) or the operator's ``--engine``; unknown is said;
* :mod:`fabric.app.twin.check`: a plan run on the twin through the lab transport, routes before
  and after, and the verdict (:mod:`fabric.advise.routing_check`);
* :mod:`fabric.app.twin.jobs`: the running Slurm jobs whose traffic crosses what a change takes
  out.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabric.advise.twin_engine import EngineChoice
from fabric.app.discover import Discovery
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
from topology.errors import UsageError
from topology.model import PortRef

__all__ = [
    "Twin",
    "TwinCheck",
    "check_drain",
    "check_plan",
    "engine_for_check",
    "build_twin",
    "read_from",
    "require_equal",
    "site_engine",
    "twin_lock",
    "twin_name",
    "up_from",
]


def up_from(
    ref: str,
    *,
    name: str | None = None,
    engine: str | None = None,
    sm_log: str | None = None,
    sm_conf: str | None = None,
    lfts_file: str | None = None,
    db: str | None = None,
) -> Twin:
    """``ibfab lab up --from REF``: the twin of the fabric ``REF`` names, with the site's engine
    (an ibdiagnet run given as ``REF`` adds its switches' AR state to the evidence)."""
    from pathlib import Path

    d = read_from(ref, db)
    choice = site_engine(
        engine, sm_log=sm_log, sm_conf=sm_conf, ibdiagnet=ref if Path(ref).is_dir() else None
    )
    target = name or twin_name(d.fabric)
    with twin_lock(target):
        return build_twin(d, choice, name=target, lfts_file=lfts_file)


def engine_for_check(
    d: Discovery,
    *,
    engine: str | None = None,
    sm_log: str | None = None,
    sm_conf: str | None = None,
    ibdiagnet: str | None = None,
    lab: str | None = None,
) -> EngineChoice:
    """The engine a routing check of a change to ``d`` runs: what the operator or the evidence
    given says; a lab's own OpenSM log for a lab; else what the fabric's running twin was built
    with (its evidence recorded then); else unknown, and the check says why it cannot be done."""
    if lab is not None and sm_log is None:
        from fabric.app.labs import opensm_log

        sm_log = opensm_log(lab)
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
