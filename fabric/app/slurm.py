"""Slurm as the front end sees it: a client that is known to answer, and fabric hosts as Slurm nodes.

A fabric names a host by its HCAs' node descriptions (``dgx-0001 mlx5_0`` -> ``dgx-0001``);
Slurm by its ``NodeName``. Most clusters use the same name for both; where they differ a node
map says which is which, one pair a line, host ranges allowed when both sides have the same size::

    # fabric host   Slurm node
    cn[0001-0004]   node[1-4]
    login01         login01-ib

A host the map does not name is the Slurm node of the same name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from probes.inventory import expand_hosts, host_sort_key
from probes.slurm import Slurm, SlurmUnavailable, why_unavailable
from topology.errors import CommandFailed, UsageError
from topology.textfile import read_input_text


@dataclass(frozen=True)
class NodeMap:
    """Fabric host -> Slurm node (a host not named maps to itself)."""

    nodes: Mapping[str, str] = field(default_factory=dict)

    def node(self, host: str) -> str:
        return self.nodes.get(host, host)

    def host(self, node: str) -> str:
        """The fabric host of a Slurm node (the node's own name when the map does not name it)."""
        for h, n in self.nodes.items():
            if n == node:
                return h
        return node

    def nodes_of(self, hosts: Iterable[str]) -> list[str]:
        return sorted({self.node(h) for h in hosts}, key=host_sort_key)

    def label(self, node: str) -> str:
        """``node1 (cn0001)`` when the names differ, else the name."""
        host = self.host(node)
        return node if host == node else f"{node} ({host})"


def parse_node_map(text: str, source: str = "<node map>") -> NodeMap:
    out: dict[str, str] = {}
    nodes_seen: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise UsageError(f"{source}:{lineno}: expected 'FABRIC_HOST SLURM_NODE', got {raw.strip()!r}")
        hosts = expand_hosts(parts[0], f"{source}:{lineno}")
        nodes = expand_hosts(parts[1], f"{source}:{lineno}")
        if len(hosts) != len(nodes):
            raise UsageError(
                f"{source}:{lineno}: {parts[0]} names {len(hosts)} hosts but {parts[1]} {len(nodes)} nodes"
            )
        for h, n in zip(hosts, nodes, strict=True):
            if out.get(h, n) != n:
                raise UsageError(f"{source}:{lineno}: {h} is already mapped to {out[h]}")
            if nodes_seen.get(n, h) != h:
                raise UsageError(f"{source}:{lineno}: Slurm node {n} is already {nodes_seen[n]}'s")
            out[h], nodes_seen[n] = n, h
    return NodeMap(out)


def read_node_map(path: str | None) -> NodeMap:
    if path is None:
        return NodeMap()
    return parse_node_map(read_input_text(path, "node map", max_bytes=_MAX_NODE_MAP_BYTES, strict=True), path)


_MAX_NODE_MAP_BYTES = 64 << 20  # a line a host: millions of hosts


def connect(env: Mapping[str, str] | None = None, timeout: float = 60.0) -> Slurm:
    """A Slurm client whose controller has just answered (``scontrol show node``).

    Slurm not installed, or its controller not answering, is one :class:`SlurmUnavailable`
    naming which, before anything is asked of it.
    """
    slurm = Slurm(env, timeout=timeout)
    try:
        slurm.nodes()
    except CommandFailed as exc:
        tool = exc.argv[0] if exc.argv else "scontrol"
        if exc.returncode is None:
            raise SlurmUnavailable(
                f"Slurm is not installed here ({tool} not found; install slurm-client or sweep over SSH)"
            ) from exc
        last = next((ln.strip() for ln in reversed(exc.stderr.splitlines()) if ln.strip()), "no answer")
        raise SlurmUnavailable(f"Slurm does not answer: {last}") from exc
    return slurm


@dataclass(frozen=True)
class SlurmHosts:
    """The fabric hosts Slurm could give a job now, and every other Slurm node's host with why."""

    free: tuple[str, ...]
    busy: Mapping[str, str]  # fabric host -> "slurm: idle+drain: ibfab: BER ..." / "slurm: reserved (maint)"


def hosts_for_jobs(
    slurm: Slurm,
    partition: str | None = None,
    reservation: str | None = None,
    node_map: NodeMap | None = None,
) -> SlurmHosts:
    """Node states, drains and reservations as Slurm reports them (``scontrol show node`` and
    ``show reservation``), in fabric host names; nodes outside ``partition`` are neither."""
    node_map = node_map or NodeMap()
    reserved = slurm.reserved_nodes()
    free, busy = [], {}
    for n in slurm.nodes():
        if partition is not None and partition not in n.partitions:
            continue
        why = why_unavailable(n, partition, reserved.get(n.name), reservation)
        if why is None and reservation is not None and reserved.get(n.name) != reservation:
            why = f"not in reservation {reservation}"
        host = node_map.host(n.name)
        if why is None:
            free.append(host)
        else:
            busy[host] = f"slurm: {why}"
    if partition is not None and not free and not busy:
        raise UsageError(f"Slurm has no partition {partition!r} (or it has no nodes)")
    return SlurmHosts(tuple(sorted(free, key=host_sort_key)), busy)


__all__ = ["NodeMap", "SlurmHosts", "connect", "hosts_for_jobs", "parse_node_map", "read_node_map"]
