"""Kubernetes node labels in topograph's keys.

* ``fabric.topograph.run/tier-N`` (topograph >= 1.0): tier-0 is the node's closest switch (its
  scalable unit in a rail-optimized fabric, else its leaf), tier-1 the spines above, tier-2 the
  cores. A tier's value names the set of switches of that tier the node reaches: one switch by its
  own name, several as ``spines-01`` etc.
* ``network.topology.nvidia.com/leaf|spine|core`` (topograph <= 0.5, read by KAI Scheduler,
  NVSentinel and Kueue setups of that time): the same three values.
* ``ibfab.io/health``: ``ok|watch|warn|critical`` when a health view is given.

``accelerator.topograph.run/domain`` (the NVLink domain) is not written: ``ibnetdiscover`` does not
show NVLink, so there is nothing true to put there. Values follow the label value rules (at most 63
characters of ``[A-Za-z0-9_.-]``, alphanumeric at both ends); a longer one becomes ``x`` + the
FNV-1a 64-bit hash in hex, as topograph does. Node names are lower-cased (Kubernetes node names are
RFC 1123 names).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping

from fabric.exports import Export
from fabric.exports.fitnames import fitting_tree
from fabric.exports.tree import SchedulerTree
from fabric.placement import PlacementHealth
from topology.nameformats import K8S_LABEL_VALUE, K8S_NODE

TIER_KEY = "fabric.topograph.run/tier-{}"
LEGACY_KEYS = (
    "network.topology.nvidia.com/leaf",
    "network.topology.nvidia.com/spine",
    "network.topology.nvidia.com/core",
)
HEALTH_KEY = "ibfab.io/health"
HOSTNAME_KEY = "kubernetes.io/hostname"
STYLES = ("tier-n", "legacy", "both")
_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


def fnv1a_64(text: str) -> int:
    h = 0xCBF29CE484222325
    for b in text.encode():
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def label_value(text: str) -> str:
    """A valid label value for ``text``: unsafe runs become ``-``; too long becomes ``x<hash>``."""
    value = _BAD.sub("-", text).strip("-_.")
    if len(value) > 63:
        value = f"x{fnv1a_64(text):x}"
    return value


def is_label_value(value: str) -> bool:
    return K8S_LABEL_VALUE.fits(value)


def label_keys(tree: SchedulerTree, style: str = "tier-n") -> list[str]:
    """The topology keys written, lowest tier first."""
    depth = max((len(v) for v in tree.host_tiers.values()), default=0)
    keys: list[str] = []
    if style in ("tier-n", "both"):
        keys += [TIER_KEY.format(k) for k in range(depth)]
    if style in ("legacy", "both"):
        keys += list(LEGACY_KEYS[: min(depth, len(LEGACY_KEYS))])
    return keys


def node_labels(
    tree: SchedulerTree, style: str = "tier-n", health: PlacementHealth | None = None
) -> dict[str, dict[str, str]]:
    """host -> {label key: value}, hosts in natural order."""
    if style not in STYLES:
        from topology.errors import UsageError

        raise UsageError(f"unknown label style {style!r} (use tier-n, legacy or both)")
    out: dict[str, dict[str, str]] = {}
    for host, tiers in tree.host_tiers.items():
        labels: dict[str, str] = {}
        if style in ("tier-n", "both"):
            labels.update({TIER_KEY.format(k): label_value(v) for k, v in enumerate(tiers)})
        if style in ("legacy", "both"):
            labels.update({key: label_value(v) for key, v in zip(LEGACY_KEYS, tiers, strict=False)})
        if health is not None:
            h = health.hosts.get(host)
            labels[HEALTH_KEY] = h.status if h is not None else "ok"
        out[host] = labels
    return out


def kubectl_lines(labels: Mapping[str, Mapping[str, str]]) -> str:
    lines = []
    for host, kv in labels.items():
        pairs = " ".join(shlex.quote(f"{k}={v}") for k, v in kv.items())
        lines.append(f"kubectl label node {shlex.quote(host.lower())} --overwrite {pairs}")
    return "\n".join(lines) + ("\n" if lines else "")


def k8s_labels(
    tree: SchedulerTree, style: str = "tier-n", fmt: str = "kubectl", health: PlacementHealth | None = None
) -> Export:
    tree, unfit = fitting_tree(tree, K8S_NODE)  # the node name kubectl is given
    labels = node_labels(tree, style, health)
    if fmt == "json":
        text = json.dumps({"nodes": {h.lower(): kv for h, kv in labels.items()}}, indent=1) + "\n"
    else:
        text = kubectl_lines(labels)
    return Export(text, skipped=tree.sites.left_out, unfit=unfit)
