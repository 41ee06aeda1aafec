"""A Kueue ``Topology`` resource (topology-aware scheduling): the label levels, highest first,
ending with ``kubernetes.io/hostname``. Written as YAML text by hand (no YAML library needed)."""

from __future__ import annotations

from fabric.exports import Export
from fabric.exports.k8s import HOSTNAME_KEY, label_keys
from fabric.exports.tree import SchedulerTree

API_VERSION = "kueue.x-k8s.io/v1alpha1"


def kueue_topology(tree: SchedulerTree, name: str = "ibfab-fabric", legacy: bool = False) -> Export:
    keys = label_keys(tree, "legacy" if legacy else "tier-n")
    lines = [
        f"# Kueue Topology from {tree.source or 'a fabric'}: label nodes with `ibfab export k8s-labels`",
        f"apiVersion: {API_VERSION}",
        "kind: Topology",
        "metadata:",
        f"  name: {name}",
        "spec:",
        "  levels:",
    ]
    lines += [f'  - nodeLabel: "{key}"' for key in [*reversed(keys), HOSTNAME_KEY]]
    return Export("\n".join(lines) + "\n", skipped=tree.sites.left_out)
