"""Field readings both ibnetdiscover readers share: the line parser (topology.ibnetdiscover) and
its whole-text fast path (topology.ibnetdiscover_fast) must read these the same way."""

from __future__ import annotations

import functools
import re

from topology.model import Guid, Lid, Link, Node, NodeKind, PortRef, normalise_guid

LID = re.compile(r"\blid\s+(\d+)")


@functools.lru_cache(maxsize=1024)
def header_int(text: str) -> int | None:
    """A ``vendid=``/``devid=`` value (``0x2c9``); None when it is not a number. Cached: every
    record of one model repeats the same values."""
    try:
        return int(text, 0)
    except ValueError:
        return None


def node_lid(text: str) -> Lid | None:
    """The LID on a node line's tail (``... enhanced port 0 lid 1 lmc 0``), if any."""
    m = LID.search(text)
    return Lid(int(m.group(1))) if m else None


def resolve_origin(
    origin: tuple[str, str] | None, nodes: dict[Guid, Node], links: list[Link]
) -> PortRef | None:
    """The port the tool ran from ("# Initiated from node N port P"): the port GUID is the node
    GUID plus the port number on HCAs; otherwise the node's only cabled port."""
    if origin is None:
        return None
    try:
        node_guid = normalise_guid(origin[0])
        port_guid = int(origin[1], 16)
    except ValueError:
        return None
    node = nodes.get(node_guid)
    if node is None:
        return None
    cabled = sorted(
        {lk.a.port for lk in links if lk.a.guid == node_guid}
        | {lk.b.port for lk in links if lk.b.guid == node_guid}
    )
    offset = port_guid - int(node_guid, 16)
    if offset in cabled:
        return PortRef(node_guid, offset)
    if node.kind is NodeKind.SWITCH:
        return PortRef(node_guid, 0)
    return PortRef(node_guid, cabled[0]) if len(cabled) == 1 else None
