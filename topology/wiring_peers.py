"""What the wiring checks share: a node's name in their messages, the peers' usual value, and
the key of a switch's peer group (Classification.peer_key). The checks themselves are
topology.wiring_rails, wiring_uplinks, wiring_speeds and wiring_down_ports; topology.wiring runs
them all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from topology.classify import Classification
from topology.model import Guid


def _label(cls: Classification, guid: Guid) -> str:
    c = cls.nodes.get(guid)
    return c.name if c is not None else str(guid)


_PeerKey = tuple[int, int | None, bool, bool]


def _mode(values: Iterable[int] | Counter[int]) -> int:
    """The most common value; ties go to the larger (the design, not the fault)."""
    counts = values if isinstance(values, Counter) else Counter(values)
    return max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]
