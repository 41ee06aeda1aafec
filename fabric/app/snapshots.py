"""``ibfab topology list``: the topology snapshots in the store (``discover --save``, collections)."""

from __future__ import annotations

from typing import Any

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
