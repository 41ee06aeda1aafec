"""The fabric model: nodes, ports, links. Knows no tool.

GUIDs are kept as normalised strings ``0x`` + 16 lower-case hex digits so that every source
(ibnetdiscover, perfquery, UFM) agrees on one spelling.

>>> normalise_guid("2c5eab0300b87b40")
'0x2c5eab0300b87b40'
>>> Link(PortRef(Guid("0x2"), 1), PortRef(Guid("0x1"), 3), 4, "HDR").key
(('0x0000000000000001', 3), ('0x0000000000000002', 1))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import repeat
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, NewType

from topology._speed import fast_init

if TYPE_CHECKING:
    import networkx as nx

Guid = NewType("Guid", str)
Lid = NewType("Lid", int)

# Per-lane signalling rate in Gb/s as operators quote it (4xHDR = 200 Gb/s, 4xNDR = 400 Gb/s).
LANE_GBPS: Mapping[str, float] = MappingProxyType(
    {
        "SDR": 2.5,
        "DDR": 5.0,
        "QDR": 10.0,
        "FDR10": 10.0,
        "FDR": 14.0,
        "EDR": 25.0,
        "HDR": 50.0,
        "NDR": 100.0,
        "XDR": 200.0,
    }
)
SPEED_ORDER: tuple[str, ...] = ("SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR")
# Position of a speed token in SPEED_ORDER (slower first); ``???`` and unknown tokens are absent.
SPEED_RANK: Mapping[str, int] = MappingProxyType({s: i for i, s in enumerate(SPEED_ORDER)})


def normalise_guid(text: str) -> Guid:
    """Return ``0x`` + 16 hex digits for any spelling of a GUID (with or without 0x, any case)."""
    value = int(text, 16)
    if value < 0 or value >= 1 << 64:
        raise ValueError(f"not a 64-bit GUID: {text!r}")
    return Guid(f"0x{value:016x}")


def link_gbps(width: int, speed: str) -> float:
    """Data rate of a link in Gb/s; 0.0 when the speed is unknown (``???``)."""
    return width * LANE_GBPS.get(speed, 0.0)


def order_ends(record: object) -> None:
    """Put the lower port of a frozen record with ``a`` and ``b`` PortRefs in ``a``, so one cable has
    one key whichever end a tool listed first (used by every record that names a cable)."""
    a, b = record.a, record.b  # type: ignore[attr-defined]
    if (b.guid, b.port) < (a.guid, a.port):
        object.__setattr__(record, "a", b)
        object.__setattr__(record, "b", a)


class NodeKind(StrEnum):
    SWITCH = "switch"
    HCA = "hca"
    ROUTER = "router"


@fast_init
@dataclass(frozen=True, slots=True)
class Node:
    """A switch, HCA or router as the subnet sees it."""

    guid: Guid
    kind: NodeKind
    description: str
    nports: int
    lid: Lid | None = None
    sysimgguid: Guid | None = None
    vendid: int | None = None
    devid: int | None = None


class PortRef(NamedTuple):
    """One port of one node. A named tuple: immutable, ordered by (guid, port), and cheap to
    build in bulk (``tuple.__new__`` over zipped columns, see :func:`links_from_columns`)."""

    guid: Guid
    port: int

    def __str__(self) -> str:
        return f"{self.guid}/{self.port}"


class _LinkFields(NamedTuple):
    a: PortRef
    b: PortRef
    width: int
    speed: str


# A cable as a key: its two ends as (GUID, port), the lower end first (Link.key).
LinkKey = tuple[tuple[str, int], tuple[str, int]]


class Link(_LinkFields):
    """One cable between two ports. ``a`` is the lower port reference so that a link has one key.

    ``width`` is the active lane count (1, 2, 4, 8, 12; 0 when the tool could not read it) and
    ``speed`` the active speed token (``HDR``, ``NDR``; ``???`` when the tool could not tell).

    A named tuple, so immutable and equal to any Link with the same ends and view; a parser of
    a 16k-HCA fabric builds its 49k links with :func:`links_from_columns`.
    """

    __slots__ = ()

    def __new__(cls, a: PortRef, b: PortRef, width: int, speed: str) -> Link:
        if b < a:
            a, b = b, a
        return tuple.__new__(cls, (a, b, width, speed))

    def _replace(self, **changes: Any) -> Link:
        """As the named tuple's, with the ends put in order again."""
        values = [changes.pop(name, old) for name, old in zip(self._fields, self, strict=True)]
        if changes:
            raise ValueError(f"Link has no field {', '.join(map(repr, changes))}")
        return Link(*values)

    @property
    def key(self) -> LinkKey:
        return ((self.a.guid, self.a.port), (self.b.guid, self.b.port))

    @property
    def gbps(self) -> float:
        return link_gbps(self.width, self.speed)

    def other(self, guid: Guid) -> PortRef:
        """The end that is not on ``guid`` (for a loopback cable, the b end)."""
        return self.b if self.a.guid == guid else self.a

    def end(self, guid: Guid) -> PortRef:
        return self.a if self.a.guid == guid else self.b


def links_from_columns(
    a_guids: Iterable[Guid],
    a_ports: Iterable[int],
    b_guids: Iterable[Guid],
    b_ports: Iterable[int],
    widths: Iterable[int],
    speeds: Iterable[str],
) -> list[Link]:
    """Links from parallel columns whose ``a`` end is already the lower one (the caller's
    promise: ``Link(...)`` would put it there, this does not look). Built at C level, with no
    Python call per link; the ibnetdiscover fast path builds every cable with it."""
    # tuple.__new__(cls, fields) mapped over the class repeated: a fifth quicker than through a
    # functools.partial, which packs its arguments again for every call.
    new = tuple.__new__
    a_refs = map(new, repeat(PortRef), zip(a_guids, a_ports, strict=True))
    b_refs = map(new, repeat(PortRef), zip(b_guids, b_ports, strict=True))
    return list(map(new, repeat(Link), zip(a_refs, b_refs, widths, speeds, strict=True)))


@dataclass(frozen=True, slots=True)
class UnconnectedPort:
    """A port the tool listed without a peer (``ibnetdiscover -p``: down, polling or unused)."""

    ref: PortRef
    width: int
    speed: str


# LIDs a port shows before the subnet manager configures it (0 after reset; 65535, the permissive
# LID, on some firmware): neither addresses the port.
UNASSIGNED_LIDS: frozenset[int] = frozenset({0, 0xFFFF})


@dataclass(frozen=True, slots=True)
class SecondRecord:
    """A record of a capture whose GUID an earlier record already has, with what the capture says
    of it (the model holds one node per GUID, so it is kept aside, never merged into the first):
    its description, LID, the far end of each of its cabled ports, and where it starts."""

    guid: Guid
    kind: NodeKind
    description: str
    lid: Lid | None
    cables: tuple[tuple[int, PortRef], ...]  # (its port, the far end its port line names)
    line: int  # the record's line in the capture (0 where the source has no lines)


def _kept(mapping: Mapping[PortRef, Any] | None) -> Mapping[PortRef, Any]:
    """A read-only view of ``mapping``: a dict is taken over as it is (a parser hands over the
    17k LIDs of a large fabric without a copy), anything else is copied."""
    if isinstance(mapping, MappingProxyType):
        return mapping
    return MappingProxyType(mapping if isinstance(mapping, dict) else dict(mapping or {}))


@dataclass(frozen=True)
class Fabric:
    """A discovered fabric. Immutable; build one with :meth:`build`.

    ``lids`` holds every LID the capture states, by port: a switch's on its port 0, an HCA's on
    each of its ports, as stated (0 and 65535 included: the SM has not configured that port).
    ``inactive`` holds the ports the capture states are up but not Active (``Init``, ``Armed``:
    the SM has not brought them into service); only some sources say (ibdiagnet's PORTS).
    ``duplicates`` holds the records whose GUID an earlier record already has.
    """

    nodes: Mapping[Guid, Node]
    links: tuple[Link, ...]
    unconnected: tuple[UnconnectedPort, ...] = ()
    source: str = ""
    # The HCA port the discovery ran from ("# Initiated from node ... port ..."): where management
    # MADs start, so a directed route from it can avoid a cable that is about to be disabled.
    origin: PortRef | None = None
    # What the parser skipped or doubted on the way (lines that are not the tool's output, the
    # tool's own diagnostics): for the operator to read, not part of the fabric, so not compared.
    warnings: tuple[str, ...] = field(default=(), compare=False)
    lids: Mapping[PortRef, Lid] = field(default_factory=lambda: MappingProxyType({}))
    inactive: Mapping[PortRef, str] = field(default_factory=lambda: MappingProxyType({}))
    duplicates: tuple[SecondRecord, ...] = ()
    _by_node: Mapping[Guid, tuple[Link, ...]] = field(default_factory=dict, repr=False, compare=False)
    _adjacency: Mapping[Guid, tuple[tuple[int, PortRef, Link], ...]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def build(
        cls,
        nodes: Iterable[Node],
        links: Iterable[Link],
        unconnected: Iterable[UnconnectedPort] = (),
        source: str = "",
        unique: bool = False,
        origin: PortRef | None = None,
        warnings: tuple[str, ...] = (),
        lids: Mapping[PortRef, Lid] | None = None,
        inactive: Mapping[PortRef, str] | None = None,
        duplicates: Iterable[SecondRecord] = (),
    ) -> Fabric:
        """``unique=True`` promises the links are already distinct (skips hashing them all). A
        dict given for ``lids`` or ``inactive`` is kept as the fabric's, not copied."""
        node_map = {n.guid: n for n in nodes}
        # Links are tuples (a, b, width, speed) and a, b tuples (guid, port): tuple order sorts
        # them by ends, at C level. Two links on the same ends differ only by view.
        link_list = tuple(sorted(links if unique else set(links)))
        # links_of() is derived from the adjacency (one map, not two, for large fabrics).
        adjacency: dict[Guid, list[tuple[int, PortRef, Link]]] = {g: [] for g in node_map}
        get = adjacency.get
        for lk in link_list:
            a, b = lk.a, lk.b
            near = get(a.guid)
            if near is None:
                near = adjacency[a.guid] = []
            near.append((a.port, b, lk))
            far = get(b.guid)
            if far is None:
                far = adjacency[b.guid] = []
            far.append((b.port, a, lk))
        return cls(
            nodes=MappingProxyType(dict(sorted(node_map.items()))),
            links=link_list,
            unconnected=tuple(sorted(unconnected, key=lambda u: u.ref)),
            source=source,
            origin=origin,
            warnings=warnings,
            lids=_kept(lids),
            inactive=_kept(inactive),
            duplicates=tuple(duplicates),
            _adjacency=MappingProxyType({g: tuple(v) for g, v in adjacency.items()}),
        )

    # -- lookups ---------------------------------------------------------------------------
    def node(self, guid: Guid) -> Node:
        return self.nodes[guid]

    def links_of(self, guid: Guid) -> tuple[Link, ...]:
        if self._by_node:
            return self._by_node.get(guid, ())
        # From the adjacency: a loopback cable is listed there twice in a row, here once.
        out: list[Link] = []
        prev: Link | None = None
        for _, _, lk in self._adjacency.get(guid, ()):
            if lk is not prev:
                out.append(lk)
            prev = lk
        return tuple(out)

    def neighbours(self, guid: Guid) -> tuple[tuple[int, PortRef, Link], ...]:
        """(local port, remote end, link) for every cable of ``guid`` (a loopback cable twice)."""
        return self._adjacency.get(guid, ())

    def switch_port_of(self, guid: Guid) -> PortRef | None:
        """The switch port the first of ``guid``'s cables lands on (an HCA's leaf port); None when
        none of its cables reaches a switch."""
        for _, far, _ in self.neighbours(guid):
            node = self.nodes.get(far.guid)
            if node is not None and node.kind is NodeKind.SWITCH:
                return far
        return None

    def switches(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind is NodeKind.SWITCH]

    def hcas(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind is not NodeKind.SWITCH]

    def by_lid(self) -> dict[int, Node]:
        return {n.lid: n for n in self.nodes.values() if n.lid is not None}

    def find(self, text: str) -> Node:
        """A node by GUID, LID or exact description; raises KeyError if none or ambiguous."""
        try:
            g = normalise_guid(text)
            if g in self.nodes:
                return self.nodes[g]
        except ValueError:
            pass
        if text.isdigit():
            hit = self.by_lid().get(int(text))
            if hit is not None:
                return hit
        matches = [n for n in self.nodes.values() if n.description == text]
        if len(matches) == 1:
            return matches[0]
        raise KeyError(text)

    def graph(self) -> nx.MultiGraph:
        """A networkx view: one vertex per node GUID, one edge per cable (keyed by the link key)."""
        import networkx as nx

        g = nx.MultiGraph()
        for n in self.nodes.values():
            g.add_node(n.guid, kind=n.kind.value, description=n.description)
        for lk in self.links:
            g.add_edge(lk.a.guid, lk.b.guid, key=lk.key, link=lk)
        return g
