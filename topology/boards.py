"""Which switches are boards of a director chassis: the membership alone, for classification.

Switches that share one system image GUID (not zero), two or more of them, with at least one
cable between them, are the boards (ASICs) of one chassis. topology.chassis tells its line and
fabric boards apart and names it; classification needs only who belongs to which chassis (a
chassis that leaves hang off is above them, and its boards are judged against boards).
"""

from __future__ import annotations

from collections import defaultdict

from topology.model import Fabric, Guid, NodeKind

_NO_IMAGE = Guid("0x0000000000000000")


def chassis_boards(fabric: Fabric) -> dict[Guid, Guid]:
    """Board GUID -> the system image GUID of its chassis, for every board of every chassis."""
    by_image: dict[Guid, list[Guid]] = defaultdict(list)
    for g, n in fabric.nodes.items():
        if n.kind is NodeKind.SWITCH and n.sysimgguid is not None and n.sysimgguid != _NO_IMAGE:
            by_image[n.sysimgguid].append(g)
    out: dict[Guid, Guid] = {}
    for image, boards in by_image.items():
        if len(boards) < 2:
            continue
        mine = set(boards)
        if any(far.guid in mine and far.guid != g for g in boards for _, far, _ in fabric.neighbours(g)):
            out.update(dict.fromkeys(boards, image))
    return out
