"""``ibfab topology list``: the topology snapshots in the store (``discover --save``, collections)."""

from __future__ import annotations

from typing import Any

from fabric.app.discovery.cables import keep_inventory
from fabric.app.discovery.discover import Discovery
from fabric.app.session import StoreAccess
from fabric.store import TopologySummary


def list_snapshots(stored: StoreAccess) -> list[TopologySummary]:
    """Oldest first; a store that does not exist is an error (nothing is created by listing)."""
    with stored.require() as store:
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
    d: Discovery, stored: StoreAccess, label: str | None = None, from_ibdiagnet: bool = False
) -> int:
    """``ibfab discover --save``: the fabric and its raw text as a topology snapshot (an ibdiagnet
    run's cable inventory kept beside it, in the same store); returns the snapshot id."""
    with stored.write() as store:
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
