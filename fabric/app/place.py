"""Placement and scheduler exports read health from the store: the hosts and links to avoid."""

from __future__ import annotations

from fabric.app.discover import Discovery
from fabric.app.health import assess_store, open_store
from fabric.placement import PlacementHealth, health_view_from_links


def placement_health(d: Discovery, db: str | None, hours: float) -> PlacementHealth:
    """Health over the last ``hours`` from the store (one-line errors when it holds no samples),
    as placement and the exports weigh it: per host its worst cable, per link its status."""
    with open_store(db) as store:
        view = assess_store(store, since_s=hours * 3600.0, record=False)
    return health_view_from_links(
        d.fabric,
        d.classification,
        ((lk.key, lk.status.value, lk.reasons, lk.repeat_offender) for lk in view.report.links),
    )
