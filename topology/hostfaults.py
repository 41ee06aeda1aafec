"""Hosts with fewer working HCAs than the peers of their shape, on every fabric shape.

A host's *shape* is its adapter layout (the set of its HCA indexes: mlx5_0..mlx5_7), where those
sit (all on one leaf, or spread over several), its HCA model and its section. A layout that at
least :data:`MIN_PEERS` hosts of one shape share is a shape of the fabric. A host is missing
HCAs (``missing_hca``, one anomaly per adapter) when all of these hold:

* its layout is a strict subset of such a shape's layout and holds at least three quarters of it
  (a login node with mlx5_0,1 among 8-HCA GPU nodes is another shape, not a fault: the same
  bar as the rail check's);
* the shape has at least twice as many hosts as its own layout (ten hosts built alike are a
  design when they are as many as the others);
* its leaves are of the shape's kind: each carries a host of the shape, or else is a switch model
  the shape's leaves are and carries only hosts short of the shape, no two alike (hosts alike on
  a leaf of their own are a kind of their own).

The missing adapter is named as the peers name it (``mlx5_5``, ``HCA-6``, ``ibp11s0f1``). Its leaf
is where the host's other HCAs of the same block sit (the peers' HCAs group on leaves the same
way), or where the peers cabled to the host's other leaves put it; its port follows the pattern
of ports the peers share (consecutive ports in adapter order, or any other), anchored on the
host's other HCAs. Where the peers do not tell, the message says the port is not known. A port
that holds an unnamed HCA is that HCA (``unnamed_hca`` covers it); a host whose adapter is a
second record of a duplicated GUID is covered by ``duplicate_guid``.

On rail-optimized fabrics the hosts spread over rail leaves are the rail check's
(``topology.wiring``: one ``missing_link`` per missing rail), so they are not judged here twice.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from topology.anomaly import Anomaly, Severity
from topology.classify import Classification, NodeClass, Role
from topology.model import Fabric, Guid, PortRef
from topology.naming import parse_hca_description

MIN_PEERS = 3  # hosts that make a layout a shape of the fabric (fewer: a fault is not told from a design)

_ShapeKey = tuple[int, bool, frozenset[int | None]]  # section, spread, HCA models


@dataclass(frozen=True, slots=True)
class _Host:
    name: str
    members: dict[int, NodeClass]  # HCA index -> the HCA
    placed: dict[int, PortRef]  # HCA index -> the leaf port it is cabled to
    layout: frozenset[int]
    key: _ShapeKey

    @property
    def leaves(self) -> set[Guid]:
        return {p.guid for p in self.placed.values()}


def missing_hcas(fabric: Fabric, cls: Classification) -> list[Anomaly]:
    """One ``missing_hca`` anomaly per adapter a host lacks against the peers of its shape."""
    hosts = _hosts(fabric, cls)
    by_key: dict[_ShapeKey, list[_Host]] = defaultdict(list)
    on_leaf: dict[Guid, list[_Host]] = defaultdict(list)
    for h in hosts:
        by_key[h.key].append(h)
        for leaf in h.leaves:
            on_leaf[leaf].append(h)
    covered = _second_records(fabric)
    out: list[Anomaly] = []
    for members in by_key.values():
        counts = Counter(h.layout for h in members)
        shapes = {layout: n for layout, n in counts.items() if n >= MIN_PEERS}
        if not shapes:
            continue
        for h in members:
            shape = _shape_of(h, counts, shapes)
            if shape is None:
                continue
            peers = [p for p in members if p.layout == shape]
            if not _leaves_of_kind(fabric, h, peers, on_leaf):
                continue
            for index in sorted(shape - h.layout):
                if (h.name, index) not in covered:
                    found = _missing(fabric, cls, h, shape, peers, index)
                    if found is not None:
                        out.append(found)
    return out


def _hosts(fabric: Fabric, cls: Classification) -> list[_Host]:
    """Every host that can be judged: each HCA has an index and a leaf port; on a rail-optimized
    fabric, only hosts on one leaf (the spread ones are the rail check's)."""
    out = []
    nodes = cls.nodes
    rail = cls.rail_optimized
    for name, guids in cls.hosts.items():
        members = [nodes[g] for g in guids]
        if rail and len({c.leaf for c in members}) > 1:
            continue  # (looked at first: on a rail fabric that is nearly every host)
        placed: dict[int, PortRef] = {}
        for c in members:
            port = fabric.switch_port_of(c.guid)
            if c.hca_index is None or port is None or c.hca_index in placed:
                break
            placed[c.hca_index] = port
        else:
            if not placed:
                continue
            spread = len({p.guid for p in placed.values()}) > 1
            models = frozenset(fabric.nodes[c.guid].devid for c in members)
            out.append(
                _Host(
                    name,
                    {c.hca_index: c for c in members if c.hca_index is not None},
                    placed,
                    frozenset(placed),
                    (members[0].section, spread, models),
                )
            )
    return out


def _second_records(fabric: Fabric) -> set[tuple[str, int]]:
    """(host, HCA index) of the HCAs that are second records of a duplicated GUID: there, under
    another's GUID (``duplicate_guid``), not missing."""
    out = set()
    for d in fabric.duplicates:
        host, _, index = parse_hca_description(d.description)
        if host is not None and index is not None:
            out.add((host, index))
    return out


def _shape_of(
    h: _Host, counts: Counter[frozenset[int]], shapes: dict[frozenset[int], int]
) -> frozenset[int] | None:
    """The shape ``h`` is a short member of: the one with most hosts among those it qualifies for."""
    mine = counts[h.layout]
    fits = [
        layout
        for layout, n in shapes.items()
        if h.layout < layout and 4 * len(h.layout) >= 3 * len(layout) and n >= 2 * mine
    ]
    return max(fits, key=lambda layout: (shapes[layout], -len(layout)), default=None)


def _leaves_of_kind(
    fabric: Fabric, h: _Host, peers: Sequence[_Host], on_leaf: Mapping[Guid, list[_Host]]
) -> bool:
    """Each of ``h``'s leaves carries a host of the shape, or else is a switch model the shape's
    leaves are and carries only hosts short of the shape, no two alike (a leaf of one host, as on
    the shape's other leaves). Hosts alike on a leaf of their own are a kind of their own: the
    storage leaf's 3-HCA hosts beside the 4-HCA GPU hosts' leaves are a design, not faults."""
    shape_leaves = set().union(*(p.leaves for p in peers))
    models = {fabric.nodes[g].devid for g in shape_leaves}
    shape = peers[0].layout
    for leaf in h.leaves:
        if leaf in shape_leaves:
            continue
        there = on_leaf[leaf]
        layouts = [o.layout for o in there]
        if (
            fabric.nodes[leaf].devid not in models
            or any(o.key != h.key or not o.layout < shape for o in there)
            or len(set(layouts)) < len(layouts)
        ):
            return False
    return True


def _missing(
    fabric: Fabric, cls: Classification, h: _Host, shape: frozenset[int], peers: Sequence[_Host], index: int
) -> Anomaly | None:
    adapter = _adapter_name(peers, index)
    leaf = _leaf_for(h, shape, peers, index)
    port = _port_for(h, shape, peers, index, leaf) if leaf is not None else None
    where: str
    ports: tuple[PortRef, ...] = ()
    if leaf is None:
        where = "; which leaf port it belongs on is not known (its peers do not cable it in one pattern)"
    elif port is None:
        where = f", which belongs on {_label(cls, leaf)} (which port is not known: its peers' ports show no one pattern)"
    else:
        ref = PortRef(leaf, port)
        occupant = _occupant(fabric, ref)
        if occupant is not None:
            oc = cls.nodes.get(occupant)
            if oc is not None and oc.role is Role.UNNAMED:
                return None  # the HCA is there without a host name: unnamed_hca says so
            where = (
                f", which belongs on {_label(cls, leaf)} (which port is not known: port {port}, where its "
                f"peers' pattern puts it, holds {_label(cls, occupant)})"
            )
        else:
            down = any(u.ref == ref for u in fabric.unconnected)
            state = "which is listed down" if down else "where nothing answers"
            where = (
                f", which belongs on {_label(cls, leaf)} port {port} ({_pattern_note(shape, peers)}), {state}"
            )
            ports = (ref,)
    layout = _fold_adapters(shape, peers)
    spread = f"over {len({p.guid for p in peers[0].placed.values()})} leaves" if h.key[1] else "on one leaf"
    nodes = {c.guid for c in h.members.values()} | ({leaf} if leaf is not None else set())
    return Anomaly(
        "missing_hca",
        Severity.ERROR,
        tuple(sorted(nodes)),
        ports,
        f"{h.name} has {len(h.layout)} of the {len(shape)} HCAs its {len(peers)} peers have ({layout} {spread}): "
        f"no {adapter}{where}; a dead HCA, a missing cable or a link that is down "
        f"(`ibstat` on {h.name} lists its cards and their port state)",
    )


def _adapter_name(peers: Sequence[_Host], index: int) -> str:
    """The adapter as most peers name it (``mlx5_5``, ``HCA-6``, ``ibp11s0f1``)."""
    names = Counter(p.members[index].adapter for p in peers)
    name, n = names.most_common(1)[0]
    return name if name and 2 * n > len(peers) else f"the HCA of index {index}"


def _fold_adapters(shape: frozenset[int], peers: Sequence[_Host]) -> str:
    """``mlx5_[0-7]`` when the peers' adapters are one prefix and a run of numbers, else each."""
    names = [_adapter_name(peers, i) for i in sorted(shape)]
    prefix = names[0].rstrip("0123456789")
    numbers = [n[len(prefix) :] for n in names]
    if prefix and all(n.startswith(prefix) and n[len(prefix) :].isdigit() for n in names):
        values = [int(x) for x in numbers]
        if values == list(range(values[0], values[0] + len(values))):
            return f"{prefix}[{values[0]}-{values[-1]}]"
    return ", ".join(names)


def _leaf_for(h: _Host, shape: frozenset[int], peers: Sequence[_Host], index: int) -> Guid | None:
    """The leaf the missing HCA belongs on: where the host's other HCAs of its block sit (the
    peers group their HCAs on leaves in one way), else where the peers cabled to the host's own
    leaves put it."""
    blocks = Counter(_blocks(p) for p in peers)
    partition, n = blocks.most_common(1)[0]
    if 4 * n >= 3 * len(peers):
        block = next(b for b in partition if index in b)
        mates = {h.placed[i].guid for i in block if i in h.placed}
        if len(mates) == 1:
            return mates.pop()
    alike = [p for p in peers if all(p.placed[i].guid == port.guid for i, port in h.placed.items())]
    leaves = {p.placed[index].guid for p in alike}
    return leaves.pop() if len(leaves) == 1 else None


def _blocks(h: _Host) -> frozenset[frozenset[int]]:
    by_leaf: dict[Guid, set[int]] = defaultdict(set)
    for i, port in h.placed.items():
        by_leaf[port.guid].add(i)
    return frozenset(frozenset(s) for s in by_leaf.values())


def _port_for(h: _Host, shape: frozenset[int], peers: Sequence[_Host], index: int, leaf: Guid) -> int | None:
    """The port the peers' pattern gives: the offsets of their ports (over the whole layout, else
    within the leaf's block) anchored on the host's HCAs of the same pattern."""
    order = sorted(shape)
    for indexes in (
        order,
        [i for i in order if i == index or h.placed.get(i, PortRef(leaf, 0)).guid == leaf],
    ):
        pattern = _common_offsets(peers, indexes)
        if pattern is None:
            continue
        bases = {h.placed[i].port - pattern[indexes.index(i)] for i in indexes if i in h.placed}
        if len(bases) == 1:
            port = bases.pop() + pattern[indexes.index(index)]
            return port if port >= 1 else None
    return None


def _common_offsets(peers: Sequence[_Host], indexes: Sequence[int]) -> tuple[int, ...] | None:
    """Each index's port minus the first index's, as at least three quarters of the peers have it."""
    if len(indexes) < 2:
        return None
    patterns = Counter(tuple(p.placed[i].port - p.placed[indexes[0]].port for i in indexes) for p in peers)
    pattern, n = patterns.most_common(1)[0]
    return pattern if 4 * n >= 3 * len(peers) else None


def _pattern_note(shape: frozenset[int], peers: Sequence[_Host]) -> str:
    order = sorted(shape)
    if _common_offsets(peers, order) == tuple(range(len(order))):
        return "its peers' HCAs take consecutive ports in adapter order"
    return "where its peers' pattern of ports puts it"


def _occupant(fabric: Fabric, ref: PortRef) -> Guid | None:
    for port, far, _ in fabric.neighbours(ref.guid):
        if port == ref.port:
            return far.guid
    return None


def _label(cls: Classification, guid: Guid) -> str:
    c = cls.nodes.get(guid)
    return c.name if c is not None else str(guid)
