"""Every route of a fabric at once: forwarding tables bound to the cabling, walked as arrays. Pure.

:func:`bind` lays the tables (:class:`topology.lft.Lfts`) over the fabric: switches and
destination LIDs get indices, each switch port its far end. :func:`walk` then follows every
destination LID from every switch together (switch x destination arrays, a block of destinations
at a time so that memory stays a few times the table's): where each route ends (delivered, no
route, a port without a cable, another node, a loop) after how many switch hops, and, for the
all-to-all traffic among the compute hosts (within each rail on a rail-optimized fabric), how many
routes each switch port carries, which routes the hosts' traffic really uses, the channel
dependencies of those routes (for credit loops), down-then-up turns against the tiers and routes
longer than the cabling's shortest. The checks (:mod:`topology.route_checks`), credit loops
(:mod:`topology.credit_loops`), balance (:mod:`topology.route_balance`) and the engine's look
(:mod:`topology.route_engine`) read what this computes; none walks again.

Traffic counts: for a destination, the sources reaching switch ``s`` are the hosts cabled to
``s`` plus those every switch forwarding to ``s`` received; summed from the longest routes down,
each switch's count passes once to the next.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topology.classify import Classification, Role
from topology.errors import ParseError
from topology.lft import NO_ROUTE, TOOL, Lfts
from topology.model import Fabric, Guid, Link, NodeKind

# Where a route ends (``Walk.end``).
DELIVERED = 0
NO_ENTRY = 1  # the switch has no route for the LID (255)
DEAD_PORT = 2  # the route leaves by a port without a cable
WRONG_NODE = 3  # delivered to another HCA, or a switch takes the LID for itself
LOOP = 4  # the route comes back to a switch it passed
UNKNOWN = 5  # the route reaches a switch whose table was not given
END_NAMES = {
    DELIVERED: "delivered",
    NO_ENTRY: "no route",
    DEAD_PORT: "port without a cable",
    WRONG_NODE: "wrong node",
    LOOP: "loop",
    UNKNOWN: "unknown",
}
_PENDING = -1
_BLOCK_CELLS = 1 << 18  # switch x destination cells walked at once
HOPS_LOOP = 255

Array = np.ndarray[Any, Any]


@dataclass(frozen=True, eq=False)
class Bound:
    """The tables laid over the fabric.

    Switches are indexed 0..S-1 in the fabric's order, destinations 0..D-1 (every LID the
    topology gives a node, HCAs and switches). ``table[s, d]`` is switch ``s``'s out port for
    destination ``d`` (:data:`NO_ROUTE` where none; ``has_table[s]`` False where the tables do
    not list the switch)."""

    fabric: Fabric
    lfts: Lfts
    switches: tuple[Guid, ...]
    index: dict[Guid, int]
    nports: Array  # int16 [S]
    has_table: Array  # bool [S]
    far_switch: Array  # int16 [S, 256]: the switch a port is cabled to, -1
    far_hca: Array  # int32 [S, 256]: the HCA (index into hcas) a port is cabled to, -1
    far_port: Array  # int16 [S, 256]: the far end's port number
    hcas: tuple[Guid, ...]
    hca_switch: Array  # int32 [H]: the switch an HCA is cabled to (-1: none)
    dest_lids: Array  # int32 [D]
    dest_hca: Array  # int32 [D]: HCA index of the destination, -1 for a switch
    dest_switch: Array  # int32 [D]: switch index of the destination, -1 for an HCA
    dest_home: Array  # int32 [D]: the switch that delivers it (an HCA's leaf, a switch itself)
    table: Array  # uint8 [S, D]
    unknown_switches: tuple[Guid, ...] = ()  # in the tables, not in the fabric
    links: dict[tuple[int, int], Link] = field(default_factory=dict)  # (switch, port) -> cable

    @property
    def nswitches(self) -> int:
        return len(self.switches)

    def lid_column(self, lid: int) -> int | None:
        at = int(np.searchsorted(self.dest_lids, lid))
        return at if at < len(self.dest_lids) and int(self.dest_lids[at]) == lid else None


def bind(fabric: Fabric, lfts: Lfts) -> Bound:
    """The tables over the fabric. ParseError when they are another fabric's: most of their
    switches unknown to the topology, or most LIDs they name naming other nodes."""
    switches = tuple(n.guid for n in fabric.switches())
    index = {g: i for i, g in enumerate(switches)}
    S = len(switches)
    unknown = tuple(g for g in lfts.switches if g not in index)
    if lfts.switches and len(unknown) * 2 > len(lfts.switches):
        first = unknown[0]
        raise ParseError(
            TOOL,
            lfts.source,
            lfts.line_of(first),
            "",
            f"switch {first} is not in the topology ({len(unknown)} of the {len(lfts.switches)} "
            f"switches in the tables are not): tables of another fabric?",
        )
    _check_destinations(fabric, lfts)
    hcas = tuple(n.guid for n in fabric.hcas())
    hindex = {g: i for i, g in enumerate(hcas)}
    far_switch = np.full((S, 256), -1, np.int16)
    far_hca = np.full((S, 256), -1, np.int32)
    far_port = np.zeros((S, 256), np.int16)
    links: dict[tuple[int, int], Link] = {}
    nports = np.zeros(S, np.int16)
    for s, g in enumerate(switches):
        nports[s] = fabric.nodes[g].nports
        for port, far, lk in fabric.neighbours(g):
            if not 0 < port < 255:
                continue
            links[(s, port)] = lk
            far_port[s, port] = far.port
            if far.guid in index:
                far_switch[s, port] = index[far.guid]
            elif far.guid in hindex:
                far_hca[s, port] = hindex[far.guid]
    hca_switch = np.full(len(hcas), -1, np.int32)
    for h, g in enumerate(hcas):
        cabled = fabric.neighbours(g)
        if cabled and cabled[0][1].guid in index:
            hca_switch[h] = index[cabled[0][1].guid]
    dests: list[tuple[int, int, int, int]] = []  # lid, hca, switch, home
    for node in fabric.nodes.values():
        if node.lid is None or not 0 < node.lid <= 0xBFFF:
            continue
        if node.kind is NodeKind.SWITCH:
            s = index[node.guid]
            dests.append((node.lid, -1, s, s))
        else:
            h = hindex[node.guid]
            dests.append((node.lid, h, -1, int(hca_switch[h])))
    dests.sort()
    arr = np.array(dests, np.int32).reshape(-1, 4)
    dest_lids = arr[:, 0].copy()
    has_table = np.zeros(S, bool)
    rows = np.full(S, -1, np.int64)
    for r, g in enumerate(lfts.switches):
        at = index.get(g)
        if at is not None:
            rows[at] = r
            has_table[at] = True
    table = np.full((S, len(dest_lids)), NO_ROUTE, np.uint8)
    inside = dest_lids <= lfts.top
    if has_table.any() and inside.any():
        cols = dest_lids[inside]
        got = lfts.ports[rows[has_table]][:, cols]
        sub = table[has_table]
        sub[:, inside] = got
        table[has_table] = sub
    return Bound(
        fabric,
        lfts,
        switches,
        index,
        nports,
        has_table,
        far_switch,
        far_hca,
        far_port,
        hcas,
        hca_switch,
        dest_lids,
        arr[:, 1].copy(),
        arr[:, 2].copy(),
        arr[:, 3].copy(),
        table,
        unknown,
        links,
    )


def _check_destinations(fabric: Fabric, lfts: Lfts) -> None:
    """ParseError when most LIDs the dump names, of those the topology knows, are other nodes
    there (another fabric's tables, or a fabric whose LIDs were all assigned again). A LID the
    topology does not know (a second port of an HCA, an LMC range, a node gone since) says
    nothing either way."""
    if not lfts.destinations:
        return
    by_lid = fabric.by_lid()
    checked = differ = 0
    first: tuple[int, str, str] | None = None
    for lid, dest in lfts.destinations.items():
        node = by_lid.get(lid)
        if node is None:
            continue
        checked += 1
        if node.description.strip() == dest.description.strip():
            continue
        differ += 1
        if first is None:
            first = (lid, dest.description, node.description)
    if first is not None and differ * 2 > checked:
        lid, theirs, ours = first
        raise ParseError(
            TOOL,
            lfts.source,
            lfts.header_lines[0] if lfts.header_lines else 0,
            "",
            f"LID {lid} is {theirs!r} in the tables but {ours!r} in the topology ({differ} of "
            f"{checked} LIDs differ): tables of another fabric?",
        )


# -- traffic ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Traffic:
    """Who talks to whom: all-to-all among the compute hosts' HCAs, and on a rail-optimized
    fabric within each rail (``group[h]``: the rail; -1: the HCA takes no part)."""

    pattern: str  # "all-to-all" or "rail all-to-all"
    group: Array  # int32 [H]
    groups: int


def traffic_group(cls: Classification, hca: Guid) -> int | None:
    """The group whose all-to-all HCA ``hca`` takes part in: its rail on a rail-optimized fabric,
    else 0; None when it takes none (no compute host's, or on no rail of a rail fabric)."""
    c = cls.nodes.get(hca)
    if c is None or c.role is not Role.COMPUTE:
        return None
    if cls.rail_optimized:
        return c.rail
    return 0


def compute_traffic(bound: Bound, cls: Classification) -> Traffic:
    H = len(bound.hcas)
    group = np.full(H, -1, np.int32)
    rail = cls.rail_optimized
    for h, g in enumerate(bound.hcas):
        if bound.hca_switch[h] < 0:
            continue
        t = traffic_group(cls, g)
        if t is not None:
            group[h] = t
    groups = int(group.max()) + 1 if len(group) and group.max() >= 0 else 0
    return Traffic("rail all-to-all" if rail else "all-to-all", group, groups)


# -- the walk ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Walk:
    """Where every route ends, and what the hosts' traffic does on the way."""

    bound: Bound
    traffic: Traffic
    nxt: Array  # int16 [S, D]: the next switch (-1: the route ends here)
    end: Array  # int8 [S, D]: how the route from s ends (DELIVERED, NO_ENTRY, ...)
    hops: Array  # uint8 [S, D]: switch-to-switch hops to where it ends (HOPS_LOOP in a loop)
    used: Array  # bool [S, D]: some host's traffic to d passes s
    sources: Array  # int32 [S, D]: how many hosts' traffic to d passes s
    port_routes: Array  # int64 [S, 256]: routes of the traffic leaving each switch port
    port_lids: Array  # int32 [S, 256]: HCA LIDs each switch port is the out port for
    port_dests: Array  # int32 [S, 256]: destination LIDs of the hosts' traffic leaving each port
    dependencies: Array  # int64 [E]: channel dependencies, (s * 256 + p) * 256 + q (see credit_loops)
    min_hops: Array  # uint8 [S, H]: the cabling's fewest switch hops to each HCA's switch
    homes: Array  # int [H]: the switches min_hops has a column for (sorted)
    longer: Array  # int64 [K, 2]: (s, d) of used routes longer than the cabling's shortest
    down_up: Array  # int64 [K, 3]: (s, d, t): traffic to d from s turns down then up at t


def walk(bound: Bound, traffic: Traffic, tiers: Array) -> Walk:
    """Walk every route (``tiers[s]``: switch s's tier, -1 unknown).

    Most routes of a sound table step one hop nearer their destination's switch at every switch,
    which is checked at each switch alone (its next switch is one hop nearer by the cabling's
    distances): a destination whose every switch does so, and whose own switch delivers it, needs
    no walk. Only the other destinations (a table with a fault, a non-minimal engine, switch
    LIDs) are followed hop by hop."""
    S, D = bound.table.shape
    nxt = np.full((S, D), -1, np.int16)
    end = np.full((S, D), DELIVERED, np.int8)
    hops = np.zeros((S, D), np.uint8)
    used = np.zeros((S, D), bool)
    sources = np.zeros((S, D), np.int32)
    port_routes = np.zeros(S * 256, np.float64)
    port_lids = np.zeros(S * 256, np.int64)
    port_dests = np.zeros(S * 256, np.int64)
    dep_seen = np.zeros(S * 256 * 256, bool) if S * 256 * 256 <= (1 << 27) else None
    deps: list[Array] = []
    hca = (bound.dest_hca >= 0) & (bound.dest_home >= 0)
    homes = np.unique(bound.dest_home[hca])
    home_col = np.where(hca, np.searchsorted(homes, np.maximum(bound.dest_home, 0)), -1)
    min_hops = _min_hops(bound, homes)
    longer: list[Array] = []
    down_up: list[Array] = []
    src_count = _sources_per_switch(bound, traffic)
    rows = np.arange(S, dtype=np.int32)[:, None]
    far_switch, far_hca = bound.far_switch.ravel(), bound.far_hca.ravel()
    for c0, c1 in _blocks(S, D):
        k = c1 - c0
        P = bound.table[:, c0:c1]
        flat_port = rows * 256 + P
        nx = far_switch[flat_port]
        fh = far_hca[flat_port]
        dh = bound.dest_hca[c0:c1][None, :]
        ds = bound.dest_switch[c0:c1][None, :]
        is_self = P == 0
        delivered = ((fh >= 0) & (fh == dh)) | (is_self & (rows == ds))
        e = np.full((S, k), _PENDING, np.int8)
        e[P == NO_ROUTE] = NO_ENTRY
        e[(nx < 0) & (e == _PENDING)] = DEAD_PORT
        e[(fh >= 0) | is_self] = WRONG_NODE
        e[delivered] = DELIVERED
        e[~bound.has_table] = UNKNOWN
        going = e == _PENDING
        nx[~going] = -1
        h = np.zeros((S, k), np.uint8)
        # the columns every switch routes one hop nearer, delivered by their own switch
        hc = home_col[c0:c1]
        mh = min_hops[:, np.maximum(hc, 0)]
        nearer = np.take_along_axis(mh, np.maximum(nx, 0).astype(np.intp), axis=0) == mh - np.uint8(1)
        home_ok = e[np.maximum(bound.dest_home[c0:c1], 0), np.arange(k)] == DELIVERED
        fine = (hc >= 0) & home_ok & (nearer | ~going).all(axis=0) & ((e == DELIVERED) | going).all(axis=0)
        h[:, fine] = mh[:, fine]
        e[:, fine] = DELIVERED
        rest = np.flatnonzero(~fine)
        if len(rest):
            sub_nx, sub_e, sub_h = (np.ascontiguousarray(x[:, rest]) for x in (nx, e, h))
            _resolve(sub_nx, sub_e, sub_h)
            e[:, rest], h[:, rest] = sub_e, sub_h
            ok = (sub_e == DELIVERED) & (hc[rest] >= 0)[None, :]
            over = ok & (sub_h > mh[:, rest])
            if over.any():
                a, b = np.nonzero(over)
                longer.append(np.stack([a, rest[b] + c0], axis=1))
        nxt[:, c0:c1] = nx
        end[:, c0:c1] = e
        hops[:, c0:c1] = h
        cnt = _traffic_counts(bound, traffic, src_count, nx, e, h, c0, c1)
        sources[:, c0:c1] = cnt
        u = cnt > 0
        used[:, c0:c1] = u
        si, ci = np.nonzero(u)
        p_used = P[si, ci].astype(np.int64)
        moving = (p_used != 0) & (p_used != NO_ROUTE)
        fp = si[moving].astype(np.int64) * 256 + p_used[moving]
        port_routes += np.bincount(fp, weights=cnt[si[moving], ci[moving]], minlength=S * 256)
        port_dests += np.bincount(fp, minlength=S * 256)
        ca = (bound.dest_hca[c0:c1] >= 0)[None, :] & (P != 0) & (P != NO_ROUTE) & bound.has_table[:, None]
        port_lids += np.bincount(flat_port[ca], minlength=S * 256)
        # channel dependencies of the used routes: into t over (s, p), out of t over q
        on = nx[si, ci] >= 0
        si, ci, p_used = si[on].astype(np.int64), ci[on], p_used[on]
        t = nx[si, ci].astype(np.int64)
        q = bound.table[t, ci + c0].astype(np.int64)
        onward = (bound.far_switch[t, q] >= 0) & (q != 0) & (q != NO_ROUTE)
        key = ((si * 256 + p_used) * 256 + q)[onward]
        if dep_seen is not None:
            dep_seen[key] = True
        else:
            deps.append(np.unique(key))
        # down then up at t (tiers known at all three switches)
        ti = tiers[t]
        down = (tiers[si] > ti) & (ti >= 0)
        if down.any():
            u2 = nx[t, ci].astype(np.int64)
            turn = down & (u2 >= 0)
            turn &= tiers[np.maximum(u2, 0)] > ti
            if turn.any():
                down_up.append(np.stack([si[turn], ci[turn] + c0, t[turn]], axis=1))
    if dep_seen is not None:
        dependencies = np.flatnonzero(dep_seen)
    else:
        dependencies = np.unique(np.concatenate(deps)) if deps else np.zeros(0, np.int64)
    longer_cells = np.concatenate(longer) if longer else np.zeros((0, 2), np.int64)
    if len(longer_cells):
        longer_cells = longer_cells[used[longer_cells[:, 0], longer_cells[:, 1]]]
    return Walk(
        bound,
        traffic,
        nxt,
        end,
        hops,
        used,
        sources,
        port_routes.astype(np.int64).reshape(S, 256),
        port_lids.reshape(S, 256).astype(np.int32),
        port_dests.reshape(S, 256).astype(np.int32),
        dependencies.astype(np.int64),
        min_hops,
        homes,
        longer_cells,
        np.concatenate(down_up) if down_up else np.zeros((0, 3), np.int64),
    )


def _blocks(S: int, D: int) -> Iterator[tuple[int, int]]:
    step = max(1, _BLOCK_CELLS // max(S, 1))
    for c0 in range(0, D, step):
        yield c0, min(D, c0 + step)


def _resolve(nx: Array, e: Array, h: Array) -> None:
    """Fill ``e`` and ``h`` of the cells whose route goes on (``e`` pending) from the cells they
    lead to: each round settles the routes one hop longer; what never settles is a loop."""
    S, k = nx.shape
    cols = np.arange(k, dtype=np.int64)
    e_flat, h_flat = np.ravel(e, order="C"), np.ravel(h, order="C")
    if not (np.shares_memory(e_flat, e) and np.shares_memory(h_flat, h)):
        raise ValueError("_resolve needs C-contiguous arrays")  # a copy would drop the results
    pending = np.flatnonzero(e_flat == _PENDING)
    if not len(pending):
        return
    target = np.ravel(nx, order="C")[pending].astype(np.int64) * k + cols[pending % k]
    for _ in range(S + 1):
        got = e_flat[target]
        done = got != _PENDING
        if not done.any():
            break
        settled = pending[done]
        e_flat[settled] = got[done]
        h_flat[settled] = np.minimum(h_flat[target[done]].astype(np.int16) + 1, HOPS_LOOP - 1)
        pending, target = pending[~done], target[~done]
        if not len(pending):
            return
    e_flat[pending] = LOOP
    h_flat[pending] = HOPS_LOOP


def _sources_per_switch(bound: Bound, traffic: Traffic) -> Array:
    """int32 [S, groups]: the hosts' HCAs of each group cabled to each switch."""
    S = bound.nswitches
    out = np.zeros((S, max(traffic.groups, 1)), np.int32)
    take = traffic.group >= 0
    np.add.at(out, (bound.hca_switch[take], traffic.group[take]), 1)
    return out


def _traffic_counts(
    bound: Bound, traffic: Traffic, src_count: Array, nx: Array, e: Array, h: Array, c0: int, c1: int
) -> Array:
    """int32 [S, k]: hosts whose traffic to each destination of the block passes each switch."""
    S, k = nx.shape
    dh = bound.dest_hca[c0:c1]
    grp = np.where(dh >= 0, traffic.group[np.maximum(dh, 0)], -1)
    cnt = np.zeros((S, k), np.int32)
    talk = grp >= 0
    if not talk.any():
        return cnt
    cnt[:, talk] = src_count[:, grp[talk]]
    # the destination does not send to itself
    own = np.flatnonzero(talk)
    home = bound.dest_home[c0:c1][own]
    cnt[home, own] -= 1
    cnt[:, ~talk] = 0
    flat = cnt.ravel()
    nflat = nx.ravel()
    moving = (nflat >= 0) & (e.ravel() != LOOP)
    # longest routes first: a switch passes its count on once all that feed it have
    order = np.flatnonzero(moving)
    if not len(order):
        return cnt
    hh = h.ravel()[order]
    for level in range(int(hh.max()), 0, -1):
        at = order[hh == level]
        at = at[flat[at] > 0]
        if not len(at):
            continue
        dest = nflat[at].astype(np.int64) * k + at % k
        np.add.at(flat, dest, flat[at])
    return cnt


def _min_hops_small(bound: Bound, homes: Array, out: Array) -> Array:
    """:func:`_min_hops` for a small fabric, by each switch's neighbour list (a matrix product
    costs more to start than to run there)."""
    far = np.where(bound.far_switch >= 0, bound.far_switch, -1).astype(np.int64)
    H = len(homes)
    seen = np.zeros((H, bound.nswitches + 1), bool)  # a last column stands for "no switch"
    seen[np.arange(H), homes] = True
    out.T[seen[:, :-1]] = 0
    for d in range(1, 255):
        near = seen[:, far].any(axis=2)  # [H, S]: a neighbour already reached
        new = near & ~seen[:, :-1]
        if not new.any():
            break
        out.T[new] = d
        seen[:, :-1] |= new
    return out


def _min_hops(bound: Bound, homes: Array) -> Array:
    """uint8 [S, len(homes)]: fewest switch-to-switch hops from every switch to each home."""
    S = bound.nswitches
    out = np.full((S, len(homes)), 255, np.uint8)
    if not len(homes) or not S:
        return out
    if S <= 256:
        return _min_hops_small(bound, homes, out)
    adj = np.zeros((S, S), np.float32)
    a, p = np.nonzero(bound.far_switch >= 0)
    adj[a, bound.far_switch[a, p]] = 1.0
    reach = np.zeros((len(homes), S), np.float32)
    reach[np.arange(len(homes)), homes] = 1.0
    seen = reach > 0
    out.T[seen] = 0
    for d in range(1, min(S, 254) + 1):
        reach = (reach @ adj > 0).astype(np.float32)
        new = (reach > 0) & ~seen
        if not new.any():
            break
        out.T[new] = d
        seen |= new
        reach = new.astype(np.float32)
    return out
