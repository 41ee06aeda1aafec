"""Field readings both ibnetdiscover readers share: the line parser (topology.ibnetdiscover) and
its whole-text fast path (topology.ibnetdiscover_fast) must read these the same way."""

from __future__ import annotations

import dataclasses
import functools
import re

from topology.bounds import id_value, lid_problem
from topology.model import Fabric, Lid, NodeKind, PortRef, normalise_guid

LID = re.compile(r"\blid\s+(\d+)")


@functools.lru_cache(maxsize=1024)
def header_int(text: str) -> int | None:
    """A ``vendid=``/``devid=`` value (``0x2c9``); None when it is not a number. Cached: every
    record of one model repeats the same values."""
    try:
        return id_value(int(text, 0)) if len(text) <= 24 else None
    except ValueError:
        return None


def node_lid(text: str) -> Lid | None:
    """The LID on a node line's tail (``... enhanced port 0 lid 1 lmc 0``), if any; a ValueError
    saying why when it is no LID (topology.bounds)."""
    m = LID.search(text)
    if m is None:
        return None
    problem = lid_problem(m.group(1))
    if problem is not None:
        raise ValueError(problem)
    return Lid(int(m.group(1)))


def with_origin(fabric: Fabric, origin: tuple[str, str] | None) -> Fabric:
    """``fabric`` with the port the tool ran from ("# Initiated from node N port P"): the port
    GUID is the node GUID plus the port number on HCAs; otherwise the node's only cabled port."""
    port = _origin_port(fabric, origin)
    return fabric if port is None else dataclasses.replace(fabric, origin=port)


def _origin_port(fabric: Fabric, origin: tuple[str, str] | None) -> PortRef | None:
    if origin is None:
        return None
    try:
        node_guid = normalise_guid(origin[0])
        port_guid = int(origin[1], 16)
    except ValueError:
        return None
    node = fabric.nodes.get(node_guid)
    if node is None:
        return None
    cabled = sorted({port for port, _, _ in fabric.neighbours(node_guid)})
    offset = port_guid - int(node_guid, 16)
    if offset in cabled:
        return PortRef(node_guid, offset)
    if node.kind is NodeKind.SWITCH:
        return PortRef(node_guid, 0)
    return PortRef(node_guid, cabled[0]) if len(cabled) == 1 else None
