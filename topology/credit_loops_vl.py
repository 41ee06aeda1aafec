"""Credit loops per virtual lane: the channel dependency graph of (channel, VL) nodes. Pure.

Buffers, hence credits, are per VL: a route waiting for the next cable waits on that cable's
buffer of the VL it will use there. A route with SL ``s`` that enters switch ``t`` on in port ``i``
and leaves on out port ``o`` uses VL ``SL2VL[t][i][o][s]`` on the out cable (:mod:`topology.sl2vl`);
a route from (channel c1, VL v1) on to (c2, v2) makes (c1, v1) wait on (c2, v2). A credit loop is
a cycle of those waits. Engines such as dfsssp and lash put routes whose one-lane graph has a
cycle on different SLs (and so VLs) to break it; this graph tells a broken cycle from a real one.

Every host route judged (all-to-all among the compute hosts, as :mod:`topology.credit_loops`) is
traced switch by switch as arrays, one row per (source HCA, destination LID, SL). The HCA's own
table gives the VL of its cable to the leaf; nothing waits on that cable (an HCA forwards nothing),
so it cannot be on a cycle and is not traced.

The lanes are known, and the graph is per VL, only when the tables are and either

* the SM's path records give an SL for every host route judged (``saquery -p``; a pair the SM
  answered with several SLs, as dfsssp may, is traced on each), or
* the tables map every SL to one VL on every port, so that the SL does not matter.

Otherwise (an SL missing for some route, a table missing for a port some route uses, more routes
than :data:`MAX_ROUTES`) the one-lane check of :mod:`topology.credit_loops` stands and its
``lanes`` says why the lanes were not used.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from topology.credit_loops import CreditLoops, channel_hops, credit_loops, find_cycle
from topology.lft import NO_ROUTE
from topology.model import NodeKind
from topology.route_walk import Walk
from topology.sl2vl import PathSls, Sl2Vl

Array = np.ndarray[Any, Any]
MAX_ROUTES = 4_000_000  # (source, destination, SL) rows traced at most (a few hundred MB of arrays)


@dataclass(frozen=True)
class Lanes:
    """What is known of the lanes: the SL2VL tables and, where given, the SM's path records."""

    tables: Sl2Vl | None
    paths: PathSls | None = None
    unknown: str = ""  # with neither: why none are known (none stored with a snapshot), said as is


def lane_credit_loops(w: Walk, lanes: Lanes) -> CreditLoops:
    """The credit loops of the hosts' routes per VL where ``lanes`` make the VLs known, else the
    one-lane check with a ``lanes`` statement of what was missing."""
    t = lanes.tables
    if t is None and lanes.paths is None and lanes.unknown:
        return _one_lane(w, lanes.unknown)
    if t is None:
        said = "the SL2VL tables are not known"
        if lanes.paths is not None:
            said = f"path records from {lanes.paths.source}, but {said}"
        return _one_lane(w, said)
    where = f"SL2VL tables from {t.source} ({t.format})"
    keys, rows = _table_arrays(w, t)
    h, d, sl, why = _routes(w, lanes, rows)
    if why:
        return _one_lane(w, f"{where}, but {why}")
    if len(h) > MAX_ROUTES:
        return _one_lane(
            w, f"{where}, but {len(h)} host routes are more than the {MAX_ROUTES} traced per lane"
        )
    traced = _trace(w, keys, rows, h, d, sl)
    if isinstance(traced, str):
        return _one_lane(w, f"{where}, but {traced}")
    u, v, witness, used = traced
    if lanes.paths is not None:
        said = f"per VL: {where}; the SL of every host route from {lanes.paths.source} (path records)"
    else:
        said = f"per VL: {where}, which map every SL to one VL on each port (the SL does not matter)"
    if not len(u):
        return CreditLoops(0, 0, 0, (), (), said, True, (), used)
    count, left, ring = find_cycle(u, v)
    if not left:
        return CreditLoops(count, len(u), 0, (), (), said, True, (), used)
    edge = {
        (int(a), int(b)): int(c) for a, b, c in zip(u.tolist(), v.tolist(), witness.tolist(), strict=True)
    }
    hops = channel_hops(w, [n // 16 for n in ring])
    lids = tuple(int(w.bound.dest_lids[edge[(ring[i], ring[(i + 1) % len(ring)])]]) for i in range(len(ring)))
    return CreditLoops(count, len(u), left, hops, lids, said, True, tuple(n % 16 for n in ring), used)


def _one_lane(w: Walk, why: str) -> CreditLoops:
    """The one-lane check, its ``lanes`` saying why the VLs are not known."""
    return replace(credit_loops(w), lanes=f"one lane: {why}")


def _table_arrays(w: Walk, t: Sl2Vl) -> tuple[Array, Array]:
    """(sorted keys ``(s * 256 + in) * 256 + out`` of the switches' tables, their VLs [K, 16])."""
    b = w.bound
    by_lid = b.fabric.by_lid()
    lids = np.unique(t.lid)
    # a LID's switch index (-1: an HCA, whose cable is on no cycle; or a LID the topology lacks)
    index = np.array(
        [
            b.index.get(n.guid, -1)
            if (n := by_lid.get(int(x))) is not None and n.kind is NodeKind.SWITCH
            else -1
            for x in lids.tolist()
        ],
        np.int64,
    )
    s = index[np.searchsorted(lids, t.lid)]
    on = s >= 0
    k = (s[on] * 256 + t.in_port[on].astype(np.int64)) * 256 + t.out_port[on].astype(np.int64)
    order = np.argsort(k, kind="stable")
    return k[order], t.vls[on][order]


def _routes(w: Walk, lanes: Lanes, rows: Array) -> tuple[Array, Array, Array, str]:
    """(source HCA, destination column, SL) of every host route judged, or why they are not known."""
    b = w.bound
    group = w.traffic.group
    # host routes judged: each host to every other HCA LID of its group
    g_dest = group[b.dest_hca[b.dest_hca >= 0]]
    g_dest = g_dest[g_dest >= 0]
    n = max(w.traffic.groups, 1)
    hosts_in = np.bincount(group[group >= 0], minlength=n)
    total = int((hosts_in * np.bincount(g_dest, minlength=n)).sum()) - len(g_dest)
    one_vl = bool(len(rows)) and bool((rows == rows[:, :1]).all())
    paths = lanes.paths
    if one_vl and (paths is None or total > MAX_ROUTES):
        return _every_route(w, total)
    if paths is None:
        return (
            _none(),
            _none(),
            _none(),
            "the SL of each route is not known (give the SM's path records: saquery -p)",
        )
    lid_hca = {int(b.fabric.nodes[g].lid or 0): i for i, g in enumerate(b.hcas)}
    lid_of = np.full(int(max(lid_hca, default=0)) + 2, -1, np.int64)
    lid_of[np.fromiter(lid_hca.keys(), np.int64, len(lid_hca))] = np.fromiter(
        lid_hca.values(), np.int64, len(lid_hca)
    )
    slid = paths.slid.astype(np.int64)
    src = np.where(slid < len(lid_of), lid_of[np.minimum(slid, len(lid_of) - 1)], -1)
    at = np.searchsorted(b.dest_lids, paths.dlid)
    at = np.minimum(at, max(len(b.dest_lids) - 1, 0))
    col = np.where((len(b.dest_lids) > 0) & (b.dest_lids[at] == paths.dlid), at, -1).astype(np.int64)
    ok = (src >= 0) & (col >= 0)
    ok[ok] &= b.dest_hca[col[ok]] >= 0
    ok[ok] &= (group[src[ok]] >= 0) & (group[src[ok]] == group[np.maximum(b.dest_hca[col[ok]], 0)])
    ok[ok] &= src[ok] != b.dest_hca[col[ok]]
    D = max(len(b.dest_lids), 1)
    key = np.sort((src[ok] * D + col[ok]) * 16 + paths.sl[ok].astype(np.int64))
    key = key[np.concatenate([[True], key[1:] != key[:-1]])] if len(key) else key  # every (h, d, SL) once
    pair, sl = np.divmod(key, 16)
    covered = int((np.diff(pair) != 0).sum()) + 1 if len(pair) else 0  # pair is sorted
    if covered < total:
        if one_vl:
            return _every_route(w, total)
        return (
            _none(),
            _none(),
            _none(),
            f"the path records ({paths.source}) give the SL of {covered} of the {total} host routes judged",
        )
    h, d = np.divmod(pair, D)
    return h, d, sl, ""


def _every_route(w: Walk, total: int) -> tuple[Array, Array, Array, str]:
    """Every host route judged on SL 0 (the tables map every SL to one VL: any SL would do), or
    why not: more routes than :data:`MAX_ROUTES` (counted before any pair is made)."""
    if total > MAX_ROUTES:
        return (
            _none(),
            _none(),
            _none(),
            f"{total} host routes are more than the {MAX_ROUTES} traced per lane",
        )
    b = w.bound
    group = w.traffic.group
    hosts = np.flatnonzero(group >= 0)
    dest_cols = np.flatnonzero(b.dest_hca >= 0)
    dest_cols = dest_cols[group[b.dest_hca[dest_cols]] >= 0]
    same = group[hosts][:, None] == group[b.dest_hca[dest_cols]][None, :]
    same &= hosts[:, None] != b.dest_hca[dest_cols][None, :]
    hi, di = np.nonzero(same)
    return hosts[hi].astype(np.int64), dest_cols[di].astype(np.int64), np.zeros(len(hi), np.int64), ""


def _none() -> Array:
    return np.zeros(0, np.int64)


def _trace(
    w: Walk, keys: Array, rows: Array, h: Array, d: Array, sl: Array
) -> tuple[Array, Array, Array, tuple[int, ...]] | str:
    """The (channel, VL) dependencies of the routes: (from node, to node, a destination column
    whose routes make the wait) with node ``(s * 256 + port) * 16 + VL``, and the VLs the routes
    use on switch-to-switch cables; or which table a route needs that is not given."""
    b = w.bound
    hca_at = np.full(len(b.hcas), -1, np.int64)  # the port of its switch each HCA is cabled to
    si, pi = np.nonzero(b.far_hca >= 0)
    mine = b.hca_switch[b.far_hca[si, pi]] == si  # a second port cabled elsewhere is not its route
    hca_at[b.far_hca[si, pi][mine][::-1]] = pi[mine][::-1]  # the lowest such port
    s = b.hca_switch[h].astype(np.int64)
    i = hca_at[h]
    live = (s >= 0) & (i >= 0)
    s, i, d, sl = s[live], i[live], d[live], sl[live]
    prev = np.full(len(s), -1, np.int64)
    us: list[Array] = []
    vs: list[Array] = []
    ws: list[Array] = []
    seen = np.zeros(16, bool)  # VLs the routes use on switch-to-switch cables
    for _ in range(b.nswitches + 1):
        if not len(s):
            break
        o = b.table[s, d].astype(np.int64)
        go = b.has_table[s] & (o != 0) & (o != NO_ROUTE)
        t = np.where(go, b.far_switch[s, np.where(go, o, 0)], -1).astype(np.int64)
        go &= t >= 0
        s, i, o, d, sl, prev, t = (x[go] for x in (s, i, o, d, sl, prev, t))
        if not len(s):
            break
        key = (s * 256 + i) * 256 + o
        pos = np.minimum(np.searchsorted(keys, key), max(len(keys) - 1, 0))
        found = (keys[pos] == key) if len(keys) else np.zeros(len(key), bool)
        if not found.all():
            k = int(np.flatnonzero(~found)[0])
            lid = b.fabric.nodes[b.switches[int(s[k])]].lid
            return f"they lack LID {lid} in port {int(i[k])} out port {int(o[k])}, which host routes use"
        vl = rows[pos, sl].astype(np.int64)
        node = (s * 256 + o) * 16 + vl
        seen[vl] = True
        wait = prev >= 0
        us.append(prev[wait])
        vs.append(node[wait])
        ws.append(d[wait])
        prev = node
        i = b.far_port[s, o].astype(np.int64)
        s = t
    used = tuple(int(x) for x in np.flatnonzero(seen))
    if not us:
        return _none(), _none(), _none(), used
    u, v, wd = np.concatenate(us), np.concatenate(vs), np.concatenate(ws)
    both = u * (int(max(u.max(initial=0), v.max(initial=0))) + 1) + v
    order = np.argsort(both, kind="stable")
    both = both[order]
    first = order[np.concatenate([[True], both[1:] != both[:-1]])]
    return u[first], v[first], wd[first], used
