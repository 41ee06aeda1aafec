"""``ibfab topology list``: the topology snapshots in the store (``discover --save``, collections)."""

from __future__ import annotations

from typing import Any

from fabric.app.discovery.cables import keep_inventory
from fabric.app.discovery.discover import Discovery
from fabric.store import Store, TopologySummary


def list_snapshots(db: str | None) -> list[TopologySummary]:
    """Oldest first; a store that does not exist is an error (nothing is created by listing)."""
    with Store.open(db, create=False) as store:
        return store.list_topologies()


def snapshot_to_dict(s: TopologySummary) -> dict[str, Any]:
    return {
        "id": s.id,
        "label": s.label,
        "taken_at": s.taken_at,
        "source": s.source,
        "nodes": s.nodes,
        "switches": s.switches,
        "hcas": s.hcas,
        "links": s.links,
    }


def save_discovery(
    d: Discovery, db: str | None, label: str | None = None, from_ibdiagnet: bool = False
) -> int:
    """``ibfab discover --save``: the fabric and its raw text as a topology snapshot (an ibdiagnet
    run's cable inventory kept beside it, in the same store); returns the snapshot id."""
    with Store.open(db) as store:
        snapshot_id = store.save_topology(
            d.fabric,
            d.raw_text,
            tool="ibdiagnet" if from_ibdiagnet else "ibnetdiscover",
            source=d.source,
            label=label,
        )
        if from_ibdiagnet:
            keep_inventory(store, d.source)
    return snapshot_id
