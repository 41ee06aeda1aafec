"""Credit loops: cycles in the channel dependency graph of the routes the hosts' traffic uses. Pure.

A channel is a switch-to-switch cable in one direction (switch ``s``, out port ``p``). A route
that arrives at switch ``t`` over channel (s, p) and leaves over (t, q) makes (s, p) wait for
buffer credits of (t, q). When these waits form a cycle, a full set of buffers on it can stop every
packet on it for good: a deadlock, usually struck after a cable is lost and the SM reroutes.

Dependencies come from :func:`topology.route_walk.walk` (routes between the hosts' HCAs only, as
ibdmchk traces CA to CA). The graph is peeled of every channel nothing waits on or that waits on
nothing, until only cycles (and what joins them) remain; one cycle is then walked and shown link
by link, with a destination LID whose routes make each of its waits.

Lanes: the SL a route uses is not in the forwarding tables (engines such as dfsssp and lash spread
routes over SLs, hence VLs, to break cycles), so here every route is taken to use one lane; a cycle
found is a credit loop only if its routes share a VL, and the report says the lanes were not known.
Where the SL2VL tables and the routes' SLs are known, :mod:`topology.credit_loops_vl` builds the
graph per virtual lane instead (nodes are (channel, VL)) and fills the same :class:`CreditLoops`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from topology.anomaly import Severity
from topology.route_findings import CREDIT_LOOP, Hop, RouteFinding
from topology.route_walk import Walk

Array = np.ndarray[Any, Any]

LANES_UNKNOWN = "one lane: the SL of each route and the SL-to-VL tables are not known"


@dataclass(frozen=True)
class CreditLoops:
    channels: int  # channels with a dependency
    dependencies: int
    in_cycles: int  # channels left after peeling: on a cycle or joining cycles
    cycle: tuple[Hop, ...]  # one cycle, link by link (empty: none)
    witnesses: tuple[int, ...]  # per hop of the cycle: a LID whose routes make that wait
    lanes: str = LANES_UNKNOWN
    lanes_known: bool = False  # the graph is per VL (credit_loops_vl), not one lane
    vls: tuple[int, ...] = ()  # per hop of the cycle: the VL its routes use there (lanes known)
    vls_used: tuple[int, ...] = ()  # the VLs the hosts' routes use on switch-to-switch cables

    @property
    def found(self) -> bool:
        return bool(self.cycle)

    def to_dict(self) -> dict[str, Any]:
        return {
            "found": self.found,
            "channels": self.channels,
            "dependencies": self.dependencies,
            "channels_in_cycles": self.in_cycles,
            "cycle": [h.to_dict() for h in self.cycle],
            "witness_lids": list(self.witnesses),
            "lanes": self.lanes,
            "lanes_known": self.lanes_known,
            "cycle_vls": list(self.vls),
            "vls_used": list(self.vls_used),
        }


def credit_loops(w: Walk) -> CreditLoops:
    b = w.bound
    keys = w.dependencies
    if not len(keys):
        return CreditLoops(0, 0, 0, (), ())
    src = keys // 256  # channel s * 256 + p
    q = keys % 256
    t = b.far_switch.ravel()[src].astype(np.int64)
    dst = t * 256 + q
    count, left, ring = find_cycle(src, dst)
    if not left:
        return CreditLoops(count, len(keys), 0, (), ())
    hops = channel_hops(w, ring)
    witnesses = tuple(_witness(w, ring[i], ring[(i + 1) % len(ring)]) for i in range(len(ring)))
    return CreditLoops(count, len(keys), left, hops, witnesses)


def channel_hops(w: Walk, ring: list[int]) -> tuple[Hop, ...]:
    """The channels ``s * 256 + p`` of ``ring`` as hops: the switch, its port and the far end."""
    b = w.bound
    return tuple(
        Hop(
            b.switches[c // 256],
            c % 256,
            b.switches[int(b.far_switch[c // 256, c % 256])],
            int(b.far_port[c // 256, c % 256]),
        )
        for c in ring
    )


def find_cycle(src: Array, dst: Array) -> tuple[int, int, list[int]]:
    """(nodes, nodes left after peeling, one cycle's node ids in order) of the graph of the edges
    ``src[k] -> dst[k]`` (node ids any int64). Peeling drops every node nothing waits on or that
    waits on nothing until only cycles (and what joins them) remain."""
    nodes, inv = np.unique(np.concatenate([src, dst]), return_inverse=True)
    u, v = inv[: len(src)], inv[len(src) :]
    alive = np.ones(len(nodes), bool)
    while True:
        live = alive[u] & alive[v]
        indeg = np.bincount(v[live], minlength=len(nodes))
        outdeg = np.bincount(u[live], minlength=len(nodes))
        drop = alive & ((indeg == 0) | (outdeg == 0))
        if not drop.any():
            break
        alive &= ~drop
    left = int(alive.sum())
    if not left:
        return len(nodes), 0, []
    live = alive[u] & alive[v]
    nxt: dict[int, int] = {}
    for a, c in zip(u[live].tolist(), v[live].tolist(), strict=True):
        nxt.setdefault(a, c)
    order: list[int] = []
    at: dict[int, int] = {}
    here = int(np.flatnonzero(alive)[0])
    while here not in at:
        at[here] = len(order)
        order.append(here)
        here = nxt[here]
    return len(nodes), left, [int(nodes[i]) for i in order[at[here] :]]


def _witness(w: Walk, c1: int, c2: int) -> int:
    """A destination LID whose used routes enter switch t over channel c1 and leave over c2."""
    b = w.bound
    s, p = divmod(c1, 256)
    t, q = divmod(c2, 256)
    hit = w.used[s] & (b.table[s] == p) & (w.nxt[s] == t) & (b.table[t] == q)
    cols = np.flatnonzero(hit)
    return int(b.dest_lids[cols[0]]) if len(cols) else 0


# OpenSM's engines that give routes SLs, hence VLs, precisely to break the cycles a one-lane
# graph of their tables shows (dfsssp and nue: virtual layers; lash: layers by SL; torus-2QoS:
# dateline SLs). Their tables alone always look like a credit loop on a ring or torus.
VL_ENGINES = frozenset({"dfsssp", "lash", "nue", "torus-2qos"})


def credit_loop_finding(loops: CreditLoops, sm_engine: str | None = None) -> RouteFinding | None:
    """The credit loop found, an error; a warning when it was judged in one lane while the SM
    says it routes with ``sm_engine``, one of :data:`VL_ENGINES` (the lanes would tell; an error
    on its word alone would be a false alarm on every dfsssp fabric with a ring in it)."""
    if not loops.found:
        return None
    first = loops.cycle[0]
    spread_by = sm_engine if not loops.lanes_known and (sm_engine or "").lower() in VL_ENGINES else None
    return RouteFinding(
        CREDIT_LOOP,
        Severity.WARNING if spread_by else Severity.ERROR,
        lid=loops.witnesses[0] or None,
        switch=first.switch,
        port=first.port,
        path=loops.cycle,
        count=loops.in_cycles,
        lids=tuple(sorted({x for x in loops.witnesses if x})),
        detail={
            "channels_in_cycles": loops.in_cycles,
            "cycle_links": len(loops.cycle),
            "lanes": loops.lanes,
            **({"cycle_vls": list(loops.vls)} if loops.lanes_known else {}),
            **({"sm_engine_spreads_vls": spread_by} if spread_by else {}),
        },
    )
