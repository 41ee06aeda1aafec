"""Whose routes cross a cable: from the forwarding tables, which host sets (a job's nodes) send
traffic over the switch-to-switch cables a change takes out. Pure.

:func:`crossing` marks, for every switch and destination LID, whether the route from that switch to
that LID leaves some switch by one of the given out ports (a cable, in either direction, is its two
ends as out ports); :func:`routes_crossing` counts the routes among a set of HCAs (each to each
other, within a rail on a rail-optimized fabric, as :func:`topology.route_walk.compute_traffic`
pairs them) that do.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import numpy as np

from topology.model import Guid, LinkKey
from topology.route_walk import Walk

Array = np.ndarray[Any, Any]


def out_ports(cables: Iterable[LinkKey]) -> set[tuple[Guid, int]]:
    """Both ends of each cable, as (switch, out port): traffic crosses a cable either way."""
    return {(Guid(g), p) for key in cables for g, p in key}


def crossing(w: Walk, ports: Collection[tuple[Guid, int]]) -> Array:
    """``[S, D]`` bool: the route from switch ``s`` to destination column ``d`` leaves a switch by
    one of ``ports`` (at ``s`` itself or further on)."""
    b = w.bound
    S, D = b.table.shape
    marked = np.zeros((S, D), bool)
    for g, port in ports:
        s = b.index.get(g)
        if s is not None and b.has_table[s]:
            marked[s] |= b.table[s] == port
    nxt = w.nxt.astype(np.int64)
    on = nxt >= 0
    rows, cols = np.nonzero(on)
    far = nxt[rows, cols]
    for _ in range(S):  # a route is at most S switches long (a loop is walked once round)
        grown = marked.copy()
        grown[rows, cols] |= marked[far, cols]
        if np.array_equal(grown, marked):
            break
        marked = grown
    return marked


def routes_crossing(w: Walk, marked: Array, hcas: Collection[Guid]) -> int:
    """Routes among ``hcas`` (each to each other, within a rail on a rail-optimized fabric) that
    ``marked`` (:func:`crossing`) says cross."""
    b, t = w.bound, w.traffic
    hindex = {g: i for i, g in enumerate(b.hcas)}
    col_of = np.full(len(b.hcas), -1, np.int64)
    at = np.flatnonzero(b.dest_hca >= 0)
    col_of[b.dest_hca[at]] = at
    idx = np.array([hindex[g] for g in hcas if g in hindex], np.int64)
    if len(idx) < 2:
        return 0
    idx = idx[(b.hca_switch[idx] >= 0) & (col_of[idx] >= 0)]
    rail = t.pattern.startswith("rail")
    group = t.group[idx] if rail else np.zeros(len(idx), np.int64)
    keep = group >= 0
    idx, group = idx[keep], group[keep]
    crossed = marked[np.ix_(b.hca_switch[idx], col_of[idx])]
    same = (group[:, None] == group[None, :]) & ~np.eye(len(idx), dtype=bool)
    return int((crossed & same).sum())
