"""Simulated slow nodes planted in a lab (``ibfab triage plant``): kept as JSON in the lab's
directory (``simulated-nodes.json``), read by the lab's simulated nccl-tests. A lab host has no
GPU; these are the simulation's, and say so (:mod:`probes.labnccl`)."""

from __future__ import annotations

from pathlib import Path

from probes.labnccl import FAULT_KINDS, PlantedNode, format_planted, parse_planted
from topology.errors import UsageError
from topology.textfile import read_input_text

FILE = "simulated-nodes.json"


def _path(lab_name: str) -> Path:
    from fabric import lab

    lab.status(lab_name)  # a LabError naming the lab when it does not exist
    return lab.lab_dir(lab_name) / FILE


def planted_nodes(lab_name: str) -> dict[str, PlantedNode]:
    """The slow nodes planted in lab ``lab_name`` (none when nothing was planted)."""
    path = _path(lab_name)
    if not path.exists():
        return {}
    return parse_planted(read_input_text(path, "planted nodes"), str(path))


def plant_node(lab_name: str, host: str, kind: str, factor: float = 0.5) -> PlantedNode:
    """Make ``host`` of the lab a slow node: its GPUs (``gpu``) or its GPU-to-HCA path (``pcie``)
    reach ``factor`` of their healthy rate in the simulation."""
    if kind not in FAULT_KINDS:
        raise UsageError(f"slow node kind must be one of {', '.join(FAULT_KINDS)}, not {kind!r}")
    if not 0.0 < factor < 1.0:
        raise UsageError(f"factor must be between 0 and 1 (the share of its healthy rate), not {factor}")
    nodes = planted_nodes(lab_name)
    node = PlantedNode(host, kind, factor)
    nodes[host] = node
    _path(lab_name).write_text(format_planted(nodes), encoding="utf-8")
    return node


def clear_nodes(lab_name: str) -> int:
    """Remove every planted slow node; how many there were."""
    nodes = planted_nodes(lab_name)
    _path(lab_name).unlink(missing_ok=True)
    return len(nodes)


__all__ = ["FILE", "clear_nodes", "plant_node", "planted_nodes"]
