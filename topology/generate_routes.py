"""Synthetic forwarding tables for a fabric, written as ``dump_lfts`` text: for tests and benches.

:func:`minhop_tables` routes every LID the fabric gives a node over a shortest path, LID by LID
as OpenSM's minhop does: each switch takes, among its ports one hop nearer the LID's switch, the
one it has routed fewest LIDs out of so far. Loop-free, and up/down on a fat tree; numpy, all
switches at once per LID. :func:`write_dump_lfts` writes tables in the ``dump_lfts``/``ibroute``
form (``Unicast lids [...] of switch Lid N guid 0x... (desc):`` and ``0x0001 001 : (Channel
Adapter portguid 0x...: 'desc')`` lines), a switch at a time.
"""

from __future__ import annotations

from typing import Any, BinaryIO

import numpy as np

from topology.lft import NO_ROUTE, Lfts
from topology.model import Fabric, Guid, NodeKind


def minhop_tables(fabric: Fabric, source: str = "minhop (generated)") -> Lfts:
    """Shortest-path tables for every switch and LID of ``fabric`` (d-mod-k among equal hops)."""
    switches = [n.guid for n in fabric.switches()]
    index = {g: i for i, g in enumerate(switches)}
    S = len(switches)
    nport = max((fabric.nodes[g].nports for g in switches), default=0) + 1
    far = np.full((S, nport), -1, np.int32)
    hca_port: dict[Guid, tuple[int, int]] = {}
    for s, g in enumerate(switches):
        for port, end, _ in fabric.neighbours(g):
            if not 0 < port < nport:
                continue
            if end.guid in index:
                far[s, port] = index[end.guid]
            else:
                hca_port.setdefault(end.guid, (s, port))
    # the switch each LID is delivered by, and the port it leaves that switch by
    lids, home, last = [], [], []
    for node in fabric.nodes.values():
        if node.lid is None:
            continue
        if node.kind is NodeKind.SWITCH:
            lids.append(node.lid)
            home.append(index[node.guid])
            last.append(0)
        elif node.guid in hca_port:
            s, p = hca_port[node.guid]
            lids.append(node.lid)
            home.append(s)
            last.append(p)
    lid_arr = np.array(lids, np.int64)
    home_arr = np.array(home, np.int64)
    homes, home_of = np.unique(home_arr, return_inverse=True)
    dist = _distances(far, homes)  # [S, homes]
    top = int(lid_arr.max()) if len(lid_arr) else 0
    ports = np.full((S, top + 1), NO_ROUTE, np.uint8)
    rows = np.arange(S)
    valid = far >= 0
    clipped = np.maximum(far, 0)
    load = np.zeros((S, nport), np.int64)  # LIDs routed out of each port so far
    big = np.iinfo(np.int64).max
    last_arr = np.array(last, np.int64)
    # LID by LID, as OpenSM's minhop does: each switch sends the LID out of its least loaded
    # port among those one hop nearer the LID's switch
    for j in np.argsort(lid_arr, kind="stable").tolist():
        h = int(home_of[j])
        dh = dist[:, h].astype(np.int16)
        cand = valid & (dist[clipped, h].astype(np.int16) == dh[:, None] - 1)
        choice = np.argmin(np.where(cand, load, big), axis=1)
        has = cand.any(axis=1)
        load[rows[has], choice[has]] += 1
        col = np.where(has, choice, NO_ROUTE).astype(np.uint8)
        col[home_arr[j]] = last_arr[j]
        ports[:, lid_arr[j]] = col
    lid_of = {g: fabric.nodes[g].lid for g in switches}
    return Lfts(source, "ibroute", tuple(switches), ports, tuple(lid_of[g] for g in switches))


def _distances(far: np.ndarray[Any, Any], homes: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    S = far.shape[0]
    adj = np.zeros((S, S), np.float32)
    s, p = np.nonzero(far >= 0)
    adj[s, far[s, p]] = 1.0
    dist = np.full((len(homes), S), 255, np.uint8)
    reach = np.zeros((len(homes), S), np.float32)
    reach[np.arange(len(homes)), homes] = 1.0
    seen = reach > 0
    dist[seen] = 0
    for d in range(1, 255):
        new = ((reach @ adj) > 0) & ~seen
        if not new.any():
            break
        dist[new] = d
        seen |= new
        reach = new.astype(np.float32)
    return np.ascontiguousarray(dist.T)


def write_dump_lfts(fabric: Fabric, lfts: Lfts, out: BinaryIO) -> int:
    """Write ``lfts`` as ``dump_lfts`` text (switches in table order); returns bytes written."""
    by_lid = fabric.by_lid()
    top = lfts.top
    # every switch lists the same LIDs with the same destination text: the lines are built once,
    # and each switch's copy gets its three port digits at known offsets
    lids: list[int] = []
    lines: list[bytes] = []
    for lid in range(1, top + 1):
        node = by_lid.get(lid)
        if node is None:
            continue
        kind = "Switch" if node.kind is NodeKind.SWITCH else "Channel Adapter"
        port_guid = int(node.guid, 16) + (0 if node.kind is NodeKind.SWITCH else 1)
        lids.append(lid)
        lines.append(
            b"0x%04x 000 : (%s portguid 0x%016x: '%s')\n"
            % (lid, kind.encode(), port_guid, node.description.encode())
        )
    template = b"".join(lines)
    at = np.cumsum([0] + [len(x) for x in lines[:-1]], dtype=np.int64) + 7  # the digits of each line
    lid_arr = np.array(lids, np.int64)
    written = 0
    for i, g in enumerate(lfts.switches):
        node = fabric.nodes[g]
        ports = lfts.ports[i, lid_arr].astype(np.int64)
        head = (
            f"Unicast lids [0x0-0x{top:x}] of switch Lid {node.lid} guid {g} ({node.description}):\n"
            "  Lid  Out   Destination\n       Port     Info \n"
        ).encode()
        if (ports == NO_ROUTE).any():
            keep = np.flatnonzero(ports != NO_ROUTE)
            body = b"".join(b"0x%04x %03d" % (lids[k], ports[k]) + lines[k][10:] for k in keep.tolist())
            valid = len(keep)
        else:
            buf = bytearray(template)
            arr = np.frombuffer(buf, np.uint8)
            arr[at] = 48 + ports // 100
            arr[at + 1] = 48 + ports // 10 % 10
            arr[at + 2] = 48 + ports % 10
            body, valid = bytes(buf), len(lids)
        chunk = head + body + f"{valid} valid lids dumped \n".encode()
        out.write(chunk)
        written += len(chunk)
    return written
