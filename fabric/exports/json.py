"""One JSON document for scheduler plugins: per host its unit, leaf per rail, spines and health."""

from __future__ import annotations

import json
from typing import Any

from fabric.exports import Export
from fabric.exports.tree import SchedulerTree, switch_names
from fabric.placement import PlacementHealth
from topology.classify import Classification
from topology.model import Fabric, Guid

SCHEMA = "ibfab.scheduler/v1"


def scheduler_document(
    fabric: Fabric, cls: Classification, tree: SchedulerTree, health: PlacementHealth | None = None
) -> dict[str, Any]:
    names = switch_names(fabric, cls)
    sites = tree.sites
    hosts = []
    for host, s in sites.hosts.items():
        spines = sorted(
            {
                names[Guid(far.guid)]
                for leaf in s.leaves
                for _, far, _ in fabric.neighbours(leaf)
                if cls.nodes[Guid(far.guid)].tier == 2
            }
        )
        h = health.hosts.get(host) if health is not None else None
        hosts.append(
            {
                "host": host,
                "role": "service" if cls.is_service_host(host) else "compute",
                "unit": sites.unit_names[s.unit],
                "switch": tree.host_switch[host],
                "tiers": list(tree.host_tiers[host]),
                "leaves": {str(rail): names[leaf] for rail, leaf in s.rail_leaves},
                "spines": spines,
                "health": None
                if health is None
                else {
                    "status": h.status if h else "ok",
                    "reasons": list(h.reasons) if h else [],
                    "repeat_offender": bool(h and h.repeat_offender),
                },
            }
        )
    return {
        "schema": SCHEMA,
        "source": tree.source,
        "rail_optimized": cls.rail_optimized,
        "rails": len(cls.rail_indexes),
        "hosts": hosts,
        "switches": [
            {"name": sw.name, "level": sw.level, "nodes": list(sw.nodes), "children": list(sw.children)}
            for level in tree.levels
            for sw in level
        ],
        "left_out": [{"name": lo.name, "reason": lo.reason} for lo in sites.left_out],
    }


def scheduler_json(
    fabric: Fabric, cls: Classification, tree: SchedulerTree, health: PlacementHealth | None = None
) -> Export:
    doc = scheduler_document(fabric, cls, tree, health)
    return Export(json.dumps(doc, indent=1) + "\n", skipped=tree.sites.left_out)
