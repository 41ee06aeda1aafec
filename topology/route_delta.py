"""What a change did to the routes: the same fabric's tables judged before and after it. Pure.

Both reports (:func:`topology.route_checks.check_routes`) walk every route of the hosts' traffic;
this compares them:

* **destinations made unreachable**: HCAs some hosts' routes delivered to before and do not after
  (no entry, a port without a cable: a black hole, another node, a loop), each with how many host
  routes are lost and one of them hop by hop;
* **credit loops opened**: a cycle in the channel dependencies of the hosts' routes after, where
  there was none before (the cycle link by link, and LIDs whose routes make each wait);
* **the hottest link**: the switch-to-switch channel carrying most of the hosts' routes, before and
  after, and whether the most loaded channel after carries over 1.5x (and 2 more than) the most
  before: the rule :mod:`topology.route_balance` judges an uneven spread by;
* **routes moved**: table entries the SM changed, and those on the hosts' routes.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

from topology.credit_loops import CreditLoops
from topology.model import Guid
from topology.route_balance import MAX_RATIO, MIN_EXCESS, ChannelLoad
from topology.route_checks import RouteReport
from topology.route_findings import Hop, route_hops
from topology.route_walk import DEAD_PORT, END_NAMES, LOOP, NO_ENTRY, WRONG_NODE, Walk

_FAIL = (NO_ENTRY, DEAD_PORT, WRONG_NODE, LOOP)
LISTED = 64  # destinations listed (the count says how many in all)


@dataclass(frozen=True)
class LostDestination:
    """An HCA some hosts' routes no longer reach after the change."""

    lid: int
    destination: Guid
    routes: int  # host routes to it that arrived before and do not after
    reason: str  # how the example route ends: "no route", "port without a cable", ...
    switch: Guid  # where the example route ends
    path: tuple[Hop, ...]  # the example route after the change, hop by hop

    def to_dict(self) -> dict[str, Any]:
        return {
            "lid": self.lid,
            "destination": self.destination,
            "routes": self.routes,
            "reason": self.reason,
            "switch": self.switch,
            "path": [h.to_dict() for h in self.path],
        }


@dataclass(frozen=True)
class RouteDelta:
    lost: tuple[LostDestination, ...]  # at most LISTED, most routes first
    lost_destinations: int
    lost_routes: int
    unreachable_before: int  # host routes that did not arrive before the change already
    loop_before: CreditLoops
    loop_after: CreditLoops
    hottest_before: ChannelLoad | None
    hottest_after: ChannelLoad | None
    entries_changed: int  # table entries (switch x LID) the change made the SM rewrite
    used_changed: int  # of those, entries on the hosts' routes before the change

    @property
    def loop_opened(self) -> bool:
        return self.loop_after.found and not self.loop_before.found

    @property
    def load_rise(self) -> bool:
        """The most loaded channel after carries over 1.5x, and 2 more than, the most before."""
        if self.hottest_after is None:
            return False
        before = self.hottest_before.routes if self.hottest_before is not None else 0
        after = self.hottest_after.routes
        return after > MAX_RATIO * before and after - before >= MIN_EXCESS

    def to_dict(self) -> dict[str, Any]:
        return {
            "lost": [x.to_dict() for x in self.lost],
            "lost_destinations": self.lost_destinations,
            "lost_routes": self.lost_routes,
            "unreachable_before": self.unreachable_before,
            "credit_loop_before": self.loop_before.found,
            "credit_loop_opened": self.loop_opened,
            "credit_loop_after": self.loop_after.to_dict(),
            "hottest_before": self.hottest_before.to_dict() if self.hottest_before else None,
            "hottest_after": self.hottest_after.to_dict() if self.hottest_after else None,
            "load_rise": self.load_rise,
            "entries_changed": self.entries_changed,
            "used_changed": self.used_changed,
        }


def failing_routes(w: Walk) -> np.ndarray[Any, Any]:
    """Per destination column: the hosts' routes to it that do not arrive (each host HCA of the
    destination's traffic group to it, counted at the host's switch; the destination itself not)."""
    b, t = w.bound, w.traffic
    D = len(b.dest_lids)
    out = np.zeros(D, np.int64)
    if t.groups == 0 or D == 0:
        return out
    on = (t.group >= 0) & (b.hca_switch >= 0)
    hosts = np.zeros((b.nswitches, t.groups), np.int64)
    np.add.at(hosts, (b.hca_switch[on], t.group[on]), 1)
    cols = np.flatnonzero(b.dest_hca >= 0)
    group = t.group[b.dest_hca[cols]]
    cols, group = cols[group >= 0], group[group >= 0]
    if not len(cols):
        return out
    fail = np.isin(w.end[:, cols], _FAIL)
    out[cols] = (fail * hosts[:, group]).sum(axis=0)
    # the destination HCA does not route to itself: one less where its own switch fails it
    home = b.hca_switch[b.dest_hca[cols]]
    own = (home >= 0) & fail[np.maximum(home, 0), np.arange(len(cols))]
    out[cols] -= own.astype(np.int64)
    return out


def route_delta(before: RouteReport, after: RouteReport, *, ignore: Collection[Guid] = ()) -> RouteDelta:
    """``after`` (the same fabric's tables after a change, the cables it took out removed) against
    ``before``; destinations in ``ignore`` (HCAs the change takes away on purpose) are not lost."""
    wb, wa = before.walk, after.walk
    fb, fa = failing_routes(wb), failing_routes(wa)
    # the same LIDs in both (the change takes out cables, not nodes); matched by LID all the same
    col_b = {int(lid): i for i, lid in enumerate(wb.bound.dest_lids.tolist())}
    lost: list[tuple[int, int, int]] = []  # (routes, column after, lid)
    gone = {i for i, h in enumerate(wa.bound.dest_hca.tolist()) if h >= 0 and wa.bound.hcas[h] in ignore}
    for d, lid in enumerate(wa.bound.dest_lids.tolist()):
        if d in gone:
            continue
        was = int(fb[col_b[lid]]) if lid in col_b else 0
        now = int(fa[d])
        if now > was:
            lost.append((now - was, d, int(lid)))
    lost.sort(key=lambda x: (-x[0], x[2]))
    listed = tuple(_lost(wa, routes, d, lid) for routes, d, lid in lost[:LISTED])
    changed, used_changed = _changed(wb, wa)
    return RouteDelta(
        listed,
        len(lost),
        sum(x[0] for x in lost),
        int(fb.sum()),
        before.credit,
        after.credit,
        before.balance.hottest[0] if before.balance.hottest else None,
        after.balance.hottest[0] if after.balance.hottest else None,
        changed,
        used_changed,
    )


def _lost(w: Walk, routes: int, d: int, lid: int) -> LostDestination:
    b, t = w.bound, w.traffic
    h = int(b.dest_hca[d])
    group = int(t.group[h])
    on = np.flatnonzero((t.group == group) & (b.hca_switch >= 0))
    leaves = np.unique(b.hca_switch[on])
    bad = leaves[np.isin(w.end[leaves, d], _FAIL)]
    start = int(bad[0]) if len(bad) else int(leaves[0])
    path = route_hops(w, start, d)
    where = path[-1].switch if path else b.switches[start]
    end = int(w.end[start, d])
    return LostDestination(lid, b.hcas[h], routes, END_NAMES.get(end, "unknown"), where, path)


def _changed(wb: Walk, wa: Walk) -> tuple[int, int]:
    """Entries that differ between the two tables (switches and LIDs both know), and how many of
    them the hosts' routes used before."""
    bb, ba = wb.bound, wa.bound
    if bb.switches != ba.switches or not np.array_equal(bb.dest_lids, ba.dest_lids):
        sw = np.array([ba.index[g] for g in bb.switches if g in ba.index], np.int64)
        keep = np.array([bb.index[g] for g in bb.switches if g in ba.index], np.int64)
        cols_a = np.searchsorted(ba.dest_lids, bb.dest_lids)
        ok = (cols_a < len(ba.dest_lids)) & (
            ba.dest_lids[np.minimum(cols_a, len(ba.dest_lids) - 1)] == bb.dest_lids
        )
        tb = bb.table[np.ix_(keep, np.flatnonzero(ok))]
        ta = ba.table[np.ix_(sw, cols_a[ok])]
        diff = tb != ta
        return int(diff.sum()), int((diff & wb.used[np.ix_(keep, np.flatnonzero(ok))]).sum())
    diff = bb.table != ba.table
    return int(diff.sum()), int((diff & wb.used).sum())
