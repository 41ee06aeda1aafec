"""Which switches are boards of a director chassis: the membership alone, for classification.

Switches that share one system image GUID (not zero), two or more of them, with at least one
cable between them, are the boards (ASICs) of one chassis. topology.chassis tells its line and
fabric boards apart and names it; classification needs only who belongs to which chassis (a
chassis that leaves hang off is above them, and its boards are judged against boards).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from topology.model import Fabric, Guid, NodeKind

_NO_IMAGE = Guid("0x0000000000000000")


def chassis_boards(fabric: Fabric) -> dict[Guid, Guid]:
    """Board GUID -> the system image GUID of its chassis, for every board of every chassis."""
    by_image: dict[Guid, list[Guid]] = defaultdict(list)
    switch = NodeKind.SWITCH  # read once: an enum member's lookup costs over 100 ns, per node here
    for g, n in fabric.nodes.items():
        if n.kind is switch and n.sysimgguid is not None and n.sysimgguid != _NO_IMAGE:
            by_image[n.sysimgguid].append(g)
    out: dict[Guid, Guid] = {}
    for image, boards in by_image.items():
        if len(boards) < 2:
            continue
        mine = set(boards)
        if any(far.guid in mine and far.guid != g for g in boards for _, far, _ in fabric.neighbours(g)):
            out.update(dict.fromkeys(boards, image))
    return out


def boards_over_leaves(
    switch_far: Mapping[Guid, list[Guid]], candidates: Iterable[Guid], boards: Mapping[Guid, Guid]
) -> set[Guid]:
    """The host-carrying boards (of ``candidates``: switches with hosts) of every chassis that
    leaves hang off, for classification to demote from leaves: a switch of its own with
    hosts whose switch cables go mostly to director boards is a leaf under those directors, so
    their boards are above it even where a line board carries hosts too (storage plugged into
    the director); a director whose boards only carry hosts stays the leaf tier."""
    candidates = set(candidates)
    above: set[Guid] = set()
    for g in candidates:
        if g in boards:
            continue
        fars = [f for f in switch_far[g] if f != g and f in switch_far]
        on_boards = [boards[f] for f in fars if f in boards]
        if 2 * len(on_boards) > len(fars):
            above.update(on_boards)
    return {g for g in candidates if boards.get(g) in above}
