"""The use case: gather the evidence, ask recommend with all of it, merge into ranked entries."""

from __future__ import annotations

from collections.abc import Sequence

from fabric.advise.safety import SafetyPolicy
from fabric.app.advice.recommend import MoreEvidence, recommend_fabric
from fabric.app.discovery.discover import Discovery
from fabric.app.session import Session
from fabric.app.status.evidence import (
    Elements,
    health_evidence,
    plan_evidence,
    reading_evidence,
    route_evidence,
    sweep_evidence,
    wiring_evidence,
)
from fabric.app.status.gather import GivenHealth, gather
from fabric.app.status.merge import merge
from fabric.app.status.records import StatusReport
from probes.driver import FabricDriver


def fabric_status(
    d: Discovery,
    session: Session,
    *,
    live: FabricDriver | None = None,
    since_s: float | None = 86400.0,
    plans: Sequence[str] = (),
    now: float | None = None,
    given: GivenHealth | None = None,
    judge_routes: bool = True,
) -> StatusReport:
    """What is wrong with the fabric ``d`` by every source the session's store (and ``plans``)
    hold, judged by its thresholds, worst first, each with the action ``ibfab recommend`` gives it
    (``live``: the driver the subnet manager is asked through, as recommend takes it, None: it is
    not asked; ``given``, ``judge_routes``: see :func:`~fabric.app.status.gather.gather`)."""
    thresholds = session.thresholds
    g = gather(
        d,
        session,
        since_s=since_s,
        plans=plans,
        now=now,
        given=given,
        judge_routes=judge_routes,
    )
    recs = recommend_fabric(
        d,
        live,
        g.findings,
        SafetyPolicy(),
        session.store,
        thresholds=thresholds,
        evidence=MoreEvidence(g.suspects, g.readings, g.plan),
    )
    el = Elements(d.fabric, d.classification)
    found = [
        *(health_evidence(el, g.health.links, thresholds) if g.health is not None else ()),
        *reading_evidence(el, g.readings),
        *sweep_evidence(el, g.suspects),
        *wiring_evidence(el, d.anomalies),
        *plan_evidence(el, g.plan),
        *(route_evidence(el, g.routes.findings) if g.routes is not None else ()),
    ]
    entries = merge(el, found, recs.actions, recs.notes)
    counts: dict[str, int] = {}
    for e in entries:
        for src in e.sources:
            counts[src.value] = counts.get(src.value, 0) + 1
    states = tuple(
        s if not s.read else type(s)(s.source, s.read, s.missing, counts.get(s.source.value, 0))
        for s in g.states
    )
    names = {str(guid): c.name for guid, c in d.classification.nodes.items()}
    where = f"topology snapshot {d.stored.id} ({d.stored.source})" if d.stored is not None else d.source
    return StatusReport(tuple(entries), states, where, names)
