"""Records of an ``ibnetdiscover`` capture whose GUID an earlier record has, for the line parser
(topology.ibnetdiscover; the fast path leaves such captures to it).

The model holds one node per GUID, so a second record is kept aside, never merged into the
first: its port lines are its own cables (:class:`SecondInProgress`), and the lines of other
records that name it as their far end, where the first record is cabled otherwise, are its
cables too, not the first's (:func:`settle`). A second record with the first's description and
cables is the same device listed twice (a capture pasted twice): it is only counted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from topology.model import Guid, Lid, Node, PortRef, SecondRecord

# One port line as the line parser keeps it (this runs ~100k times for a 16k-HCA fabric):
# (local guid, local port, remote guid, remote port, width, speed, line number)
Side = tuple[Guid, int, Guid, int, int, str, int]


@dataclass(slots=True)
class SecondInProgress:
    """A second record as its lines are read: its node, where it starts, its port lines."""

    node: Node
    line: int
    cables: list[tuple[int, PortRef]] = field(default_factory=list)

    def port_line(self, port: int, far: PortRef, own_lid: str | None) -> None:
        self.cables.append((port, far))
        if own_lid is not None and self.node.lid is None:
            self.node = dataclasses.replace(self.node, lid=Lid(int(own_lid)))

    def record(self) -> SecondRecord:
        n = self.node
        return SecondRecord(n.guid, n.kind, n.description, n.lid, tuple(sorted(self.cables)), self.line)


def settle(
    seconds: Sequence[SecondInProgress], sides: list[Side], nodes: Mapping[Guid, Node]
) -> tuple[list[SecondRecord], list[Side], str | None]:
    """(the second devices, the port lines left as cables, a note on records repeated alike)."""
    if not seconds:
        return [], sides, None
    # The first record's cables of each GUID that has a second record, port -> far end.
    firsts: dict[Guid, dict[int, PortRef]] = {s.node.guid: {} for s in seconds}
    for lg, lp, rg, rp, *_ in sides:
        first = firsts.get(lg)
        if first is not None:
            first.setdefault(lp, PortRef(rg, rp))
    records: list[SecondRecord] = []
    repeated = 0
    theirs: set[tuple[Guid, int, Guid, int]] = set()
    for second in seconds:
        rec = second.record()
        first = firsts[rec.guid]
        if rec.description == nodes[rec.guid].description and rec.cables == tuple(sorted(first.items())):
            repeated += 1
            continue
        records.append(rec)
        theirs.update((far.guid, far.port, rec.guid, p) for p, far in rec.cables if first.get(p) != far)
    if theirs:
        sides = [s for s in sides if s[:4] not in theirs]
    note = None
    if repeated:
        note = (
            f"{repeated} record{'s' * (repeated > 1)} listed twice with the same content "
            "(a capture pasted twice?): read once"
        )
    return records, sides, note
