"""The fabric's JSON form: an exact, compact round trip of :class:`topology.model.Fabric`.

Nodes are written as rows in the order of :data:`NODE_FIELDS`; links and unconnected ports name
their nodes by row index (or by GUID when the node has no record of its own, as in partial
``ibnetdiscover`` files). A 16,384-HCA fabric fits in a few MB of JSON and far less compressed.
The LIDs the source stated (``lids``: node, port, LID), the ports it stated up but not Active
(``inactive``) and records whose GUID another record has (``duplicates``) are written only when
there are any; a fabric stored without them reads back with none (not known, so nothing judged).

>>> from topology.model import Fabric, Guid, Link, Node, NodeKind, PortRef
>>> sw = Node(Guid("0x0000000000000001"), NodeKind.SWITCH, "leaf1", 36, lid=1)
>>> hca = Node(Guid("0x0000000000000002"), NodeKind.HCA, "gpu1 mlx5_0", 1, lid=2)
>>> fab = Fabric.build([sw, hca], [Link(PortRef(sw.guid, 1), PortRef(hca.guid, 1), 4, "HDR")])
>>> fabric_to_dict(fab)["links"]
[[0, 1, 1, 1, 4, 'HDR']]
>>> fabric_from_json(fabric_to_json(fab)) == fab
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from topology.bounds import MAX_ID, lid_value_problem, port_problem, width_problem
from topology.errors import ParseError, excerpt
from topology.model import (
    Fabric,
    Guid,
    Lid,
    Link,
    Node,
    NodeKind,
    PortRef,
    SecondRecord,
    UnconnectedPort,
    normalise_guid,
)

FORMAT = "ibfab-fabric"
FORMAT_VERSION = 1
TOOL = "ibfab fabric JSON"
# The order of a node row; a test checks that it names every field of Node.
NODE_FIELDS: tuple[str, ...] = (
    "guid",
    "kind",
    "description",
    "nports",
    "lid",
    "sysimgguid",
    "vendid",
    "devid",
)


def fabric_to_dict(fabric: Fabric) -> dict[str, Any]:
    """A JSON-ready dict of ``fabric`` (see the module docstring for the layout)."""
    index = {guid: i for i, guid in enumerate(fabric.nodes)}

    def ref(guid: Guid) -> int | str:
        return index.get(guid, guid)

    out: dict[str, Any] = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "source": fabric.source,
        "origin": [fabric.origin.guid, fabric.origin.port] if fabric.origin else None,
        "node_fields": list(NODE_FIELDS),
        "nodes": [
            [n.guid, n.kind.value, n.description, n.nports, n.lid, n.sysimgguid, n.vendid, n.devid]
            for n in fabric.nodes.values()
        ],
        "links": [
            [ref(lk.a.guid), lk.a.port, ref(lk.b.guid), lk.b.port, lk.width, lk.speed] for lk in fabric.links
        ],
        "unconnected": [[ref(u.ref.guid), u.ref.port, u.width, u.speed] for u in fabric.unconnected],
    }
    if fabric.warnings:  # what the parser noted (lines skipped...), kept with a stored fabric
        out["notes"] = list(fabric.warnings)
    # Written only when the source stated them (a fabric stored before has none: not known).
    if fabric.lids:
        out["lids"] = [[ref(r.guid), r.port, lid] for r, lid in sorted(fabric.lids.items())]
    if fabric.inactive:
        out["inactive"] = [[ref(r.guid), r.port, state] for r, state in sorted(fabric.inactive.items())]
    if fabric.duplicates:
        out["duplicates"] = [
            [d.guid, d.kind.value, d.description, d.lid, [[p, f.guid, f.port] for p, f in d.cables], d.line]
            for d in fabric.duplicates
        ]
    return out


def fabric_from_dict(data: Mapping[str, Any], source: str = "<fabric JSON>") -> Fabric:
    """The Fabric that :func:`fabric_to_dict` wrote; a malformed dict is a ParseError naming ``source``."""
    if data.get("format") != FORMAT:
        raise ParseError(TOOL, source, 0, "", f"not an ibfab fabric (format {data.get('format')!r})")
    if data.get("version") != FORMAT_VERSION:
        raise ParseError(
            TOOL,
            source,
            0,
            "",
            f"fabric format version {data.get('version')!r} (this ibfab reads {FORMAT_VERSION})",
        )
    try:
        nodes = [_node(row) for row in data["nodes"]]
        guids = [n.guid for n in nodes]

        def guid_of(ref: int | str) -> Guid:
            return guids[ref] if isinstance(ref, int) else Guid(ref)

        links = [
            Link(PortRef(guid_of(a), _port(ap)), PortRef(guid_of(b), _port(bp)), _width(w), str(s))
            for a, ap, b, bp, w, s in data["links"]
        ]
        unconnected = [
            UnconnectedPort(PortRef(guid_of(g), _port(p)), _width(w), str(s))
            for g, p, w, s in data["unconnected"]
        ]
        origin = data.get("origin")
        lids = {PortRef(guid_of(g), int(p)): Lid(int(lid)) for g, p, lid in data.get("lids", [])}
        inactive = {PortRef(guid_of(g), int(p)): str(state) for g, p, state in data.get("inactive", [])}
        duplicates = [
            SecondRecord(
                Guid(str(g)),
                NodeKind(kind),
                str(desc),
                None if lid is None else Lid(int(lid)),
                tuple((int(p), PortRef(Guid(str(fg)), int(fp))) for p, fg, fp in cables),
                int(line),
            )
            for g, kind, desc, lid, cables, line in data.get("duplicates", [])
        ]
        notes = data.get("notes", [])
        if not isinstance(notes, list):
            raise TypeError(f"notes is {type(notes).__name__}, not a list")
        return Fabric.build(
            nodes,
            links,
            unconnected,
            source=str(data.get("source", "")),
            origin=PortRef(normalise_guid(origin[0]), int(origin[1])) if origin else None,
            warnings=tuple(str(n) for n in notes),
            lids=lids,
            inactive=inactive,
            duplicates=duplicates,
        )
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ParseError(TOOL, source, 0, "", f"malformed fabric: {type(exc).__name__}: {exc}") from exc


def fabric_to_json(fabric: Fabric) -> str:
    """Compact JSON text (no spaces after separators)."""
    return json.dumps(fabric_to_dict(fabric), separators=(",", ":"), ensure_ascii=False)


def fabric_from_json(text: str | bytes, source: str = "<fabric JSON>") -> Fabric:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        lineno = getattr(exc, "lineno", 0)
        raise ParseError(TOOL, source, lineno, "", f"not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ParseError(TOOL, source, 0, "", f"expected a JSON object, got {type(data).__name__}")
    return fabric_from_dict(data, source)


def _port(value: Any) -> int:
    problem = port_problem(str(value))
    if problem:
        raise ValueError(problem)
    return int(value)


def _width(value: Any) -> int:
    problem = width_problem(str(value))
    if problem:
        raise ValueError(problem)
    return int(value)


def _node(row: Sequence[Any]) -> Node:
    guid, kind, description, nports, lid, sysimgguid, vendid, devid = row
    # What an older ibfab stored unchecked (a LID of 23 digits) is refused here, with the
    # snapshot it is in: the store then reads around that snapshot (topology.bounds).
    problem = (lid is not None and lid_value_problem(int(lid))) or port_problem(str(nports))
    if problem:
        raise ValueError(f"node {guid}: {problem}")
    for value in (vendid, devid):
        if value is not None and not 0 <= int(value) <= MAX_ID:
            raise ValueError(f"node {guid}: vendor or device id {excerpt(str(value), 24)} is not 32 bits")
    normalise_guid(str(guid))
    if sysimgguid is not None:
        normalise_guid(str(sysimgguid))
    return Node(
        guid=Guid(str(guid)),
        kind=NodeKind(kind),
        description=str(description),
        nports=int(nports),
        lid=None if lid is None else Lid(int(lid)),
        sysimgguid=None if sysimgguid is None else Guid(str(sysimgguid)),
        vendid=None if vendid is None else int(vendid),
        devid=None if devid is None else int(devid),
    )
