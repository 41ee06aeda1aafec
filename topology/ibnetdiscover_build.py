"""What a capture's lines amount to, and the Fabric made of it: the one builder both
``ibnetdiscover`` readers fill (the line parser, topology.ibnetdiscover, for every variant; its
inner loop for well-formed records, topology.ibnetdiscover_fast, in bulk), and the one rule that
pairs port lines into cables (:func:`cables`).

A cable is normally listed twice, once from each end. Its first listing names it; its second
listing (from either end) completes it, and the two views are combined (the narrower width, the
slower known speed); later listings of it add nothing. A cable listed once between two nodes
that both have a record is a cut or inconsistent file (an error naming the record that lacks it);
listed once towards a node with no record, it is a partial file's edge. A port listed with two
different peers is an error, or, in ``-p`` excerpts pasted from several runs, the first listing
is kept and the later one named in a warning.
"""

from __future__ import annotations

import functools
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import itemgetter
from typing import Any, cast

from topology.errors import ParseError
from topology.ibnetdiscover_common import narrower_view, with_origin
from topology.ibnetdiscover_seconds import SecondInProgress, Side, settle
from topology.model import (
    Fabric,
    Guid,
    Lid,
    Link,
    Node,
    NodeKind,
    PortRef,
    UnconnectedPort,
    links_from_columns,
    normalise_guid,
)

TOOL = "ibnetdiscover"
_HEX_LOWER = "0123456789abcdef"
_SKIPPED_SHOWN = 5
PortKey = tuple[Guid, int]
_new_ref = functools.partial(tuple.__new__, PortRef)  # PortRef((guid, port)) without its __new__


class Unnumbered(ParseError):
    """A fault in a capture read without line numbers: read it again, line by line, to name it."""


@dataclass(slots=True)
class FarNode:
    """A node seen as the far end of port lines (it may have no record of its own)."""

    kind: NodeKind
    description: str
    lid: int | None
    ports: int  # the highest port number seen


@dataclass
class Builder:
    """What both readers of a capture make of it, in the one form the Fabric is built from: the
    records' nodes, the far ends seen on port lines, one :data:`Side` per port line, the LIDs
    stated, the tool's notes; :meth:`fabric` pairs the listings into cables (:func:`cables`)."""

    source: str
    lenient_conflicts: bool = False
    nodes: dict[Guid, Node] = field(default_factory=dict)
    node_line: dict[Guid, int] = field(default_factory=dict)
    # far ends seen on port lines
    referenced: dict[Guid, FarNode] = field(default_factory=dict)
    sides: list[Side] = field(default_factory=list)
    unconnected: list[UnconnectedPort] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)  # the tool's ibwarn lines in its stdout
    skipped: list[int] = field(default_factory=list)  # numbers of lines that are not the tool's
    guids: dict[str, Guid] = field(default_factory=dict)
    origin: tuple[str, str] | None = None  # (node GUID, port GUID) from the header
    # LIDs by (GUID, port) records state of their own ports, and port lines of far ends
    own_lids: dict[tuple[Guid, int], int] = field(default_factory=dict)
    far_lids: dict[tuple[Guid, int], int] = field(default_factory=dict)
    seconds: list[SecondInProgress] = field(default_factory=list)
    # False when filled in bulk without line numbers (topology.ibnetdiscover_fast): a fault found
    # then raises Unnumbered, and the line parser reads the text again to name the line
    numbered: bool = True
    listings: Listings | None = None  # the port lines as columns, when filled in bulk (no sides)

    def error(self, lineno: int, line: str, problem: str) -> ParseError:
        return ParseError(TOOL, self.source, lineno, line, problem)

    def guid(self, text: str) -> Guid:
        g = self.guids.get(text)
        if g is None:
            if len(text) == 16 and not text.strip(_HEX_LOWER):
                g = self.guids[text] = Guid("0x" + text)  # already normal: 16 lower-case hex digits
            else:
                g = self.guids[text] = normalise_guid(text)
        return g

    def add_node(self, node: Node, lineno: int) -> SecondInProgress | None:
        """Record ``node``; a record whose GUID an earlier one has is kept aside (returned)."""
        if node.guid in self.nodes:
            second = SecondInProgress(node, lineno)
            self.seconds.append(second)
            return second
        self.nodes[node.guid] = node
        self.node_line[node.guid] = lineno
        if node.kind is NodeKind.SWITCH and node.lid is not None:
            self.own_lids[(node.guid, 0)] = node.lid
        return None

    def far_lid(self, guid: Guid, kind: NodeKind, port: int, lid: int) -> None:
        """The LID a line states for a far end: a switch's is its port 0's."""
        self.far_lids.setdefault((guid, 0 if kind is NodeKind.SWITCH else port), lid)

    def reference(self, guid: Guid, kind: NodeKind, description: str, lid: int | None, port: int) -> None:
        """Remember a node seen as the far end of a cable (it may have no record: partial files)."""
        old = self.referenced.get(guid)
        if old is None:
            self.referenced[guid] = FarNode(kind, description, lid, port)
            return
        if description and not old.description:
            old.description = description
        if lid is not None and old.lid is None:
            old.lid = lid
        if port > old.ports:
            old.ports = port

    def fabric(self) -> Fabric:
        duplicates, sides, note = settle(self.seconds, self.sides, self.nodes)  # GUIDs two records have
        self.warnings += [note] if note else []
        links = cables(self.listings or Listings.of(sides), self._conflict, self._check_both_ends_listed)
        nodes = dict(self.nodes)
        for g, far in self.referenced.items():
            if g not in nodes:
                lid = Lid(far.lid) if far.lid is not None else None
                nodes[g] = Node(g, far.kind, far.description, far.ports, lid)
        fabric = Fabric.build(
            nodes.values(),
            links,
            self.unconnected,
            self.source,
            unique=True,
            warnings=self.notes(),
            lids=self.lids(),
            duplicates=duplicates,
        )
        return with_origin(fabric, self.origin)

    def lids(self) -> dict[PortRef, Lid]:
        """Every LID stated, by port: a record's of its own, else (no record) the far end's."""
        out = {PortRef(g, p): Lid(lid) for (g, p), lid in self.far_lids.items() if g not in self.nodes}
        out.update(
            zip(map(_new_ref, self.own_lids), cast("Iterable[Lid]", self.own_lids.values()), strict=True)
        )
        return out

    def notes(self) -> tuple[str, ...]:
        """What the operator should know about the reading: one line per kind of thing."""
        out = list(self.warnings)
        if self.diagnostics:
            n = len(self.diagnostics)
            out.append(
                f"ibnetdiscover printed {n} diagnostic line{'s' * (n > 1)} into its output "
                f"(nodes may be missing), first: {self.diagnostics[0]}"
            )
        if self.skipped:
            n, shown = len(self.skipped), self.skipped[:_SKIPPED_SHOWN]
            more = f" and {n - len(shown)} more" if n > len(shown) else ""
            out.append(
                f"skipped {n} line{'s' * (n > 1)} that {'are' if n > 1 else 'is'} not ibnetdiscover "
                f"output (a logger's banner, a shell prompt, a paste): line{'s' * (n > 1)} "
                + ", ".join(map(str, shown))
                + more
            )
        return tuple(out)

    def _conflict(self, port: PortKey, peer: PortKey, peer_line: int, other: PortKey, lineno: int) -> bool:
        """A port listed with two different peers: an error, or skipped in lenient -p excerpts."""
        here, was, now = PortRef(*port), PortRef(*peer), PortRef(*other)
        if not self.numbered:
            raise Unnumbered(TOOL, self.source, 0, "", f"port {here} cabled to {was} and to {now}")
        if self.lenient_conflicts:
            # -p reports are often excerpts pasted from several runs: keep the first.
            self.warnings.append(
                f"line {lineno}: port {here} also cabled to {now}; kept {was} (line {peer_line})"
            )
            return True
        raise ParseError(
            TOOL, self.source, lineno, "", f"port {here} is cabled to {was} (line {peer_line}) and to {now}"
        )

    def _check_both_ends_listed(self, a: PortKey, b: PortKey, lineno: int) -> None:
        # A cable between two nodes that both have a record must be listed by both: if one
        # record lacks it, the file was cut inside that record (or edited by hand).
        for (lg, lp), (rg, rp) in ((a, b), (b, a)):
            if rg in self.nodes and lg in self.nodes and rg != lg:
                if not self.numbered:
                    raise Unnumbered(TOOL, self.source, 0, "", "a cable listed from one end only")
                # The end that listed it is the record that starts last before the listing line.
                starts = {g: self.node_line[g] for g in (lg, rg) if self.node_line[g] <= lineno}
                lister = max(starts, key=starts.__getitem__) if starts else lg
                silent = rg if lister == lg else lg
                node = self.nodes[silent]
                raise ParseError(
                    TOOL,
                    self.source,
                    lineno,
                    "",
                    f"cable {PortRef(lg, lp)} -> {PortRef(rg, rp)} is missing from the record of "
                    f"{node.description!r} (line {self.node_line[silent]}): truncated or inconsistent output",
                )


@dataclass(frozen=True, slots=True)
class Listings:
    """The port lines of a capture as columns, in line order: each line's own port and far port
    as keys (anything hashable that is equal for the same port and orders as (GUID, port) does,
    but for two ports of one GUID), its own GUID and port number, width, speed and line number
    (0: read in bulk, without line numbers). The far end's GUID and port number are given by the
    line parser; the bulk reader leaves them out (None): every line it gives is listed back by
    its far end, whose own columns say them."""

    near: list[Any]
    far: list[Any]
    guids: list[Guid]
    ports: list[int]
    widths: list[int]
    speeds: list[str]
    lines: list[int]
    far_guids: list[Guid] | None = None
    far_ports: list[int] | None = None

    @classmethod
    def of(cls, sides: Sequence[Side]) -> Listings:
        if not sides:
            return cls([], [], [], [], [], [], [], [], [])
        lg, lp, rg, rp, width, speed, line = (list(c) for c in zip(*sides, strict=True))
        near, far = list(zip(lg, lp, strict=True)), list(zip(rg, rp, strict=True))
        return cls(near, far, lg, lp, width, speed, line, rg, rp)


def cables(
    listed: Listings,
    conflict: Callable[[PortKey, PortKey, int, PortKey, int], bool],
    unmirrored: Callable[[PortKey, PortKey, int], None],
) -> list[Link]:
    """One Link per cable of the port lines ``listed`` (rules in the module doc).

    ``conflict(port, its peer, that listing's line, the other peer, line)`` is called for a port
    listed with a second peer (it raises, or returns True to skip the later listing);
    ``unmirrored(low end, high end, line)`` for a cable listed once (it raises when both ends'
    records should have listed it). Built from whole columns: this runs for every port line of a
    16k-HCA fabric."""
    if not listed.near:
        return []
    quick = _listed_twice(listed)
    if quick is not None:
        return quick
    if listed.far_guids is None or listed.far_ports is None:
        raise Unnumbered(TOOL, "", 0, "", "port lines not all listed back by their far ends")
    here = listed.near
    there = list(zip(listed.far_guids, listed.far_ports, strict=True))
    width, speed, line = listed.widths, listed.speeds, listed.lines
    # ports numbered once: the dicts below then hash integers, not (GUID, port) tuples
    keys = list(dict.fromkeys(here + there))
    number = dict(zip(keys, range(len(keys)), strict=True))
    near = list(map(number.__getitem__, here))
    far = list(map(number.__getitem__, there))
    partner = dict(zip(near + far, far + near, strict=True))
    if list(map(partner.__getitem__, near)) != far or list(map(partner.__getitem__, far)) != near:
        # some port has two peers: walk the listings in order, the first one of a port wins
        keep = _unconflicted(here, there, line, conflict)
        here, there = list(compress(here, keep)), list(compress(there, keep))
        near, far = list(compress(near, keep)), list(compress(far, keep))
        width, speed, line = (
            list(compress(width, keep)),
            list(compress(speed, keep)),
            list(compress(line, keep)),
        )
    size = len(keys)
    lower = list(map(operator.le, here, there))
    cable = [n * size + f if up else f * size + n for n, f, up in zip(near, far, lower, strict=True)]
    count = len(cable)
    first = dict(zip(reversed(cable), range(count - 1, -1, -1), strict=True))  # each cable's first listing
    last = dict(zip(cable, range(count), strict=True))
    times_of = Counter(cable)
    order = sorted(first.values())  # cables in the order of their first listings
    named = list(map(cable.__getitem__, order))
    times = list(map(times_of.__getitem__, named))
    # each cable's second listing, from either end: its last, unless listed more than twice (a
    # record pasted twice); a cable listed once is its own (nothing to combine)
    again = list(map(last.__getitem__, named))
    for k in (k for k, t in enumerate(times) if t != 2):
        i, key = order[k], named[k]
        if times[k] > 2:
            again[k] = next(j for j in range(i + 1, count) if cable[j] == key)
        elif keys[key // size] != keys[key % size]:  # listed once, not a port cabled to itself
            unmirrored(keys[key // size], keys[key % size], line[i])
    widths = list(map(width.__getitem__, order))
    speeds = list(map(speed.__getitem__, order))
    for k, j in enumerate(again):
        if width[j] != widths[k] or speed[j] != speeds[k]:
            widths[k], speeds[k] = narrower_view(widths[k], speeds[k], width[j], speed[j])
    low = list(map(keys.__getitem__, map(operator.floordiv, named, repeat(size))))
    high = list(map(keys.__getitem__, map(operator.mod, named, repeat(size))))
    return links_from_columns(
        map(itemgetter(0), low),
        map(itemgetter(1), low),
        map(itemgetter(0), high),
        map(itemgetter(1), high),
        widths,
        speeds,
    )


def _listed_twice(listed: Listings) -> list[Link] | None:
    """The cables when every port line has its mirror (the far end lists it back, on the port it
    names) and no port is listed twice: what the general reading in cables() makes of them, by a
    few passes over whole columns; None otherwise."""
    here, there, width, speed = listed.near, listed.far, listed.widths, listed.speeds
    index = dict(zip(here, range(len(here)), strict=True))
    if len(index) != len(here):
        return None  # a port listed twice
    mirror = list(map(index.get, there))
    if None in mirror:
        return None  # a cable listed once
    mirrors = cast(list[int], mirror)
    if list(map(there.__getitem__, mirrors)) != here:
        return None  # a port with two peers
    # each cable once, from its lower end's listing (a port cabled to itself: its one listing)
    first = list(compress(range(len(here)), map(operator.le, here, there)))
    mirror_of = list(map(mirrors.__getitem__, first))
    widths = list(map(width.__getitem__, first))
    speeds = list(map(speed.__getitem__, first))
    if list(map(width.__getitem__, mirror_of)) != widths or list(map(speed.__getitem__, mirror_of)) != speeds:
        for k, (i, j) in enumerate(zip(first, mirror_of, strict=True)):  # ends that disagree:
            if width[j] != widths[k] or speed[j] != speeds[k]:  # the first listing's view, then
                a, b = (i, j) if i < j else (j, i)  # the second's, as the general reading has them
                widths[k], speeds[k] = narrower_view(width[a], speed[a], width[b], speed[b])
    guids, ports = listed.guids, listed.ports
    a_guids = list(map(guids.__getitem__, first))
    a_ports = list(map(ports.__getitem__, first))
    b_guids = list(map(guids.__getitem__, mirror_of))  # the far end's own columns
    b_ports = list(map(ports.__getitem__, mirror_of))
    if any(map(operator.eq, a_guids, b_guids)):
        # two ports of one GUID: keys that are text order its port numbers as text, so each such
        # cable is put in (GUID, port) order here
        for k in (k for k, (g, h) in enumerate(zip(a_guids, b_guids, strict=True)) if g == h):
            if a_ports[k] > b_ports[k]:
                a_ports[k], b_ports[k] = b_ports[k], a_ports[k]
    return links_from_columns(a_guids, a_ports, b_guids, b_ports, widths, speeds)


def _unconflicted(
    here: list[PortKey],
    there: list[PortKey],
    line: list[int],
    conflict: Callable[[PortKey, PortKey, int, PortKey, int], bool],
) -> list[bool]:
    """Which listings to keep: each port's first peer holds; a listing that gives a port another
    peer goes to ``conflict`` (which raises, or says to skip it)."""
    claims: dict[PortKey, tuple[PortKey, int]] = {}
    keep: list[bool] = []
    for h, t, lineno in zip(here, there, line, strict=True):
        mine, theirs = claims.get(h), claims.get(t)
        if mine is not None and mine[0] != t:
            keep.append(not conflict(h, mine[0], mine[1], t, lineno))
            continue
        if theirs is not None and theirs[0] != h:
            keep.append(not conflict(t, theirs[0], theirs[1], h, lineno))
            continue
        if mine is None:
            claims[h] = (t, lineno)
            claims.setdefault(t, (h, lineno))
        keep.append(True)
    return keep
