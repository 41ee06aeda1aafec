"""Director chassis: switch ASICs (boards) that share one system image GUID.

A director (CS7500, MCS8500...) is many switch ASICs in one box: each reports its own node GUID
and the chassis's system image GUID (``sysimgguid`` in ``ibnetdiscover``, SystemImageGUID in
ibdiagnet's NODES table). Switches that share one, two or more of them cabled to each other, are
one chassis. A switch whose system image GUID is its own, missing, or shared with no other
switch is a switch of its own; HCAs that share one are the ports of one adapter card
(topology.unnamed), never a chassis.

**Line boards and fabric boards** are told from the cabling: a line board carries cables out of
the chassis (to leaves, hosts, other switches); a fabric board only to boards of its own
chassis. Inside a chassis the boards are cabled line to fabric, so a line board with nothing
plugged in yet is told by its side of that wiring: on the side of the boards with outside
cables. Only where the cabling cannot tell (no board has an outside cable, or the inside wiring
is not line-to-fabric) do the boards' names decide (``MF0;dir-1:MCS8500/L05/U1`` is a line board,
``.../S02/U1`` a fabric board); a board neither tells is left *unsure*. A SHARP aggregation node
or a switch's management port is part of the switch, not an outside cable.

The chassis's name is the system name its boards' descriptions share (``dir-1``,
topology.systemname), empty where they share none.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from topology.boards import chassis_boards
from topology.classify import Classification, Role
from topology.model import Fabric, Guid, NodeKind
from topology.naming import has_own_name
from topology.systemname import system_name

# An HCA on a board that is part of the switch itself: not a cable out of the chassis.
_PART_OF_SWITCH = (Role.AGGREGATION, Role.SWITCH_MGMT)


class BoardKind(StrEnum):
    LINE = "line"  # cables to outside the chassis (leaves, hosts, other switches)
    FABRIC = "fabric"  # cables only to boards of its own chassis
    UNSURE = "unsure"  # neither cabling nor name tells


@dataclass(frozen=True)
class Chassis:
    """One director: its system image GUID, name, and boards by kind (each sorted by name)."""

    guid: Guid  # the system image GUID its boards share
    name: str  # the system name its boards share ("" when none)
    line_boards: tuple[Guid, ...]
    fabric_boards: tuple[Guid, ...]
    unsure_boards: tuple[Guid, ...] = ()

    @property
    def boards(self) -> tuple[Guid, ...]:
        return self.line_boards + self.fabric_boards + self.unsure_boards

    def kind_of(self, board: Guid) -> BoardKind | None:
        if board in self.line_boards:
            return BoardKind.LINE
        if board in self.fabric_boards:
            return BoardKind.FABRIC
        if board in self.unsure_boards:
            return BoardKind.UNSURE
        return None


def find_chassis(fabric: Fabric, cls: Classification) -> tuple[Chassis, ...]:
    """Every chassis of ``fabric`` (see the module docstring), by name then GUID."""
    by_image: dict[Guid, list[Guid]] = defaultdict(list)
    for g, image in chassis_boards(fabric).items():
        by_image[image].append(g)
    out = []
    for image, boards in by_image.items():
        mine = set(boards)
        inside: dict[Guid, set[Guid]] = {g: set() for g in boards}
        outside: set[Guid] = set()
        for g in boards:
            for _, far, _ in fabric.neighbours(g):
                if far.guid in mine:
                    if far.guid != g:
                        inside[g].add(far.guid)
                elif _leaves_chassis(fabric, cls, far.guid):
                    outside.add(g)
        kinds = _board_kinds(fabric, inside, outside)
        out.append(
            Chassis(
                image,
                _shared_name(fabric.nodes[g].description for g in boards),
                _by_name(fabric, (g for g, k in kinds.items() if k is BoardKind.LINE)),
                _by_name(fabric, (g for g, k in kinds.items() if k is BoardKind.FABRIC)),
                _by_name(fabric, (g for g, k in kinds.items() if k is BoardKind.UNSURE)),
            )
        )
    return tuple(sorted(out, key=lambda c: (c.name.casefold(), c.guid)))


def board_chassis(chassis: Iterable[Chassis]) -> dict[Guid, Chassis]:
    """Board GUID -> its chassis."""
    return {b: c for c in chassis for b in c.boards}


def _leaves_chassis(fabric: Fabric, cls: Classification, far: Guid) -> bool:
    """Whether a cable to ``far`` (not a board of this chassis) goes out of the chassis."""
    node = fabric.nodes.get(far)
    if node is None or node.kind is NodeKind.SWITCH:
        return True
    c = cls.nodes.get(far)
    return c is None or c.role not in _PART_OF_SWITCH


def _board_kinds(
    fabric: Fabric, inside: Mapping[Guid, set[Guid]], outside: set[Guid]
) -> dict[Guid, BoardKind]:
    """Line, fabric or unsure per board: by the sides of the inside wiring where it is
    line-to-fabric (two-coloured) and the outside cables are all on one side; else outside
    cables make a line board, and names decide the rest."""
    kinds: dict[Guid, BoardKind] = {}
    seen: set[Guid] = set()
    for start in sorted(inside):
        if start in seen:
            continue
        side = {start: 0}
        queue, bipartite = [start], True
        while queue:
            g = queue.pop()
            for h in inside[g]:
                if h not in side:
                    side[h] = 1 - side[g]
                    queue.append(h)
                elif side[h] == side[g]:
                    bipartite = False
        seen.update(side)
        line_sides = {side[g] for g in side if g in outside}
        if bipartite and len(line_sides) == 1:
            line = line_sides.pop()
            kinds.update({g: BoardKind.LINE if s == line else BoardKind.FABRIC for g, s in side.items()})
            continue
        for g in side:
            kinds[g] = BoardKind.LINE if g in outside else _named_kind(fabric.nodes[g].description)
    return kinds


def _named_kind(description: str) -> BoardKind:
    _, board = system_name(description)
    if board is None:
        return BoardKind.UNSURE
    return BoardKind.LINE if board.kind == "L" else BoardKind.FABRIC


def _shared_name(descriptions: Iterable[str]) -> str:
    names = {system_name(d)[0] for d in descriptions}
    name = names.pop() if len(names) == 1 else ""
    return name if has_own_name(name) else ""


def _by_name(fabric: Fabric, guids: Iterable[Guid]) -> tuple[Guid, ...]:
    return tuple(sorted(guids, key=lambda g: (fabric.nodes[g].description, g)))
