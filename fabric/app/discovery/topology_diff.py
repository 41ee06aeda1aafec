"""``ibfab topology diff``: what changed between two fabrics, each a saved file or a stored snapshot."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from topology.classify import classify
from topology.diff import FabricDiff, diff_fabrics
from topology.ibnetdiscover import read_ibnetdiscover
from topology.model import Fabric, Guid, Link, PortRef

if TYPE_CHECKING:
    from fabric.app.session import StoreAccess


@dataclass(frozen=True, slots=True)
class TopologyDiff:
    before: str  # where each side came from: a path or "snapshot N"
    after: str
    diff: FabricDiff
    names: Mapping[Guid, str]  # display names of the nodes of both sides

    def name(self, guid: Guid) -> str:
        return self.names.get(guid, guid)


def load_fabric(ref: str, stored: StoreAccess) -> tuple[str, Fabric]:
    """A saved ibnetdiscover file, else a store reference (snapshot id, ``latest`` or a label)."""
    path = Path(ref)
    if path.exists():
        return str(path), read_ibnetdiscover(path)
    with stored.require() as store:
        topology = store.load_topology(ref)
    return f"snapshot {topology.id}", topology.fabric


def diff_topologies(before: str, after: str, stored: StoreAccess) -> TopologyDiff:
    name_a, fabric_a = load_fabric(before, stored)
    name_b, fabric_b = load_fabric(after, stored)
    names = {
        **{g: c.name for g, c in classify(fabric_a).nodes.items()},
        **{g: c.name for g, c in classify(fabric_b).nodes.items()},
    }
    return TopologyDiff(name_a, name_b, diff_fabrics(fabric_a, fabric_b), names)


def topology_diff_to_dict(td: TopologyDiff) -> dict[str, Any]:
    def end(p: PortRef) -> dict[str, Any]:
        return {"guid": p.guid, "port": p.port, "name": td.name(p.guid)}

    def link(lk: Link) -> dict[str, Any]:
        return {"a": end(lk.a), "b": end(lk.b), "width": lk.width, "speed": lk.speed, "gbps": lk.gbps}

    d = td.diff
    return {
        "before": td.before,
        "after": td.after,
        "nodes_added": [{"guid": n.guid, "name": td.names.get(n.guid)} for n in d.nodes_added],
        "nodes_removed": [{"guid": n.guid, "name": td.names.get(n.guid)} for n in d.nodes_removed],
        "links_added": [link(lk) for lk in d.links_added],
        "links_removed": [link(lk) for lk in d.links_removed],
        "links_changed": [{"before": link(c.before), "after": link(c.after)} for c in d.links_changed],
    }
