"""The rules both ibnetdiscover readers apply, written once: the line parser
(topology.ibnetdiscover), which reads every variant, and its whole-text fast path
(topology.ibnetdiscover_fast), which reads the canonical spelling in bulk and hands anything
else to the line parser. What a field means, what a cable's two listings make, where the tool
ran from: here."""

from __future__ import annotations

import dataclasses
import functools
import re

from topology.bounds import id_value, lid_problem
from topology.model import SPEED_RANK, Fabric, Guid, Lid, Node, NodeKind, PortRef, normalise_guid

LID = re.compile(r"\blid\s+(\d+)")
MAX_PORT = 255  # port numbers are one byte in InfiniBand


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


def record_node(
    kind: NodeKind,
    nports: str,
    guid: Guid,
    description: str,
    tail: str,
    sysimg: Guid | None,
    vendid: str | None,
    devid: str | None,
    port_lid: int | None = None,
) -> Node:
    """A record's node from its node line (``Switch 36 "S-..." # "desc" ... lid 1 lmc 0``: the
    port count, the GUID, the description and the tail after it) and its header's values; its
    LID is the one the node line states, else ``port_lid`` (an HCA's, from its port lines). A
    ValueError says why when a number is out of range."""
    count = int(nports) if len(nports) <= 3 else MAX_PORT + 1
    if count > MAX_PORT:
        raise ValueError(f"{nports[:8]} ports: a node has at most {MAX_PORT}")
    lid = node_lid(tail) if "lid" in tail else None
    return Node(
        guid,
        kind,
        description.strip(),
        count,
        lid if lid is not None else (Lid(port_lid) if port_lid is not None else None),
        sysimg,
        header_int(vendid) if vendid else None,
        header_int(devid) if devid else None,
    )


ORIGIN_LINE = "# Initiated from node"


def origin_of(line: str) -> tuple[str, str] | None:
    """(node GUID, port GUID) of a ``# Initiated from node N port P`` line, else None."""
    words = line.split()
    if len(words) >= 7 and words[5] == "port":
        return words[4], words[6]
    return None


def narrower_view(width: int, speed: str, other_width: int, other_speed: str) -> tuple[int, str]:
    """A cable's width and speed from its two ends' listings: the narrower width and the slower
    speed; a width of 0 and a speed that is no known rate (``???``) are unknown, never narrower."""
    if other_width and (not width or other_width < width):
        width = other_width
    if (
        other_speed != speed
        and other_speed in SPEED_RANK
        and SPEED_RANK[other_speed] < SPEED_RANK.get(speed, 99)
    ):
        speed = other_speed
    return width, speed


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
