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

from fabric.app.twin.build import Twin, build_twin, read_from, require_equal, twin_lock, twin_name
from fabric.app.twin.engine import site_engine

__all__ = [
    "Twin",
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
