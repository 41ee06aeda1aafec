"""Whether SL2VL tables are of the fabric they are judged with. Pure.

LIDs are small numbers every subnet manager hands out from 1, so two fabrics' tables share most
of their LIDs: a LID present in both says nothing. What the tables say of the node behind a LID
does: OpenSM's dump names its node GUID, and both forms tell a switch (rows for ports above 0)
from an HCA (its one row, in 0 out 0). Where most LIDs the topology knows are other nodes there,
the tables are another fabric's (or the LIDs were all handed out again since): refused, as the
forwarding tables are (:func:`topology.route_walk.bind`). A LID the topology lacks (a node gone
since, an LMC range) says nothing either way.
"""

from __future__ import annotations

import numpy as np

from topology.errors import ParseError
from topology.model import Fabric, NodeKind
from topology.sl2vl import TOOL, Sl2Vl


def check_tables_fabric(tables: Sl2Vl, fabric: Fabric) -> None:
    """ParseError when ``tables`` are, by the evidence above, of another fabric than ``fabric``:
    most of the switches they list (by LID) are no switch there, or another one by GUID."""
    by_lid = fabric.by_lid()
    if not by_lid or not len(tables.lid):
        return
    # the switches of the tables (the only tables a route is traced through): rows for ports above 0
    ported = np.unique(tables.lid[(tables.in_port > 0) | (tables.out_port > 0)]).tolist()
    switches = sorted(set(ported) | set(tables.switch_lids))
    known = [(lid, by_lid[lid]) for lid in switches if lid in by_lid]
    if switches and not known:
        raise ParseError(
            TOOL,
            tables.source,
            0,
            "",
            f"none of the {len(switches)} switch LIDs of the SL2VL tables is in the topology: "
            "tables of another fabric?",
        )
    differ = 0
    first = ""
    for lid, node in known:
        theirs = tables.guids.get(lid)
        if node.kind is not NodeKind.SWITCH:
            why = f"LID {lid} is a switch in the SL2VL tables but {node.description!r}, no switch, in the topology"
        elif theirs is not None and int(theirs, 16) != int(node.guid, 16):
            why = f"LID {lid} is switch {theirs} in the SL2VL tables but {node.guid} in the topology"
        else:
            continue
        differ += 1
        first = first or why
    if differ * 2 > len(known):
        raise ParseError(
            TOOL,
            tables.source,
            0,
            "",
            f"{first} ({differ} of {len(known)} switch LIDs differ): tables of another fabric?",
        )


__all__ = ["check_tables_fabric"]
