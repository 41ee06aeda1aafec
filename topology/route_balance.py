"""Balance: how many of the hosts' all-to-all routes each cable carries, against an even spread. Pure.

The traffic is :func:`topology.route_walk.compute_traffic`'s: every compute HCA to every other (on
a rail-optimized fabric, within its rail). Each switch-to-switch cable is counted in each direction
(a channel); channels are grouped by direction between tiers (``leaf -> spine``, ``spine ->
core``...), and on a rail-optimized fabric the leaf's rail too.

What the cabling allows is judged at each switch: the routes it sends one way (up to its spines,
say) could at best be spread evenly over its cables that way, ``ceil(routes / cables)`` each. A
switch whose busiest cable that way carries more than half again as many (and at least two more)
is unbalanced: the tables pile routes on some cables while others idle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from topology.anomaly import Severity
from topology.classify import Classification
from topology.route_findings import IMBALANCE, RouteFinding
from topology.route_walk import Walk

HOT_LINKS = 10
# A switch is unbalanced one way when its busiest cable carries more than this times the even
# spread, and at least MIN_EXCESS routes more.
MAX_RATIO = 1.5
MIN_EXCESS = 2


@dataclass(frozen=True, slots=True)
class ChannelLoad:
    """Routes on one cable in one direction: ``switch`` out of ``port`` to ``to`` (``to_port``)."""

    switch: str
    port: int
    to: str
    to_port: int
    routes: int
    lids: int  # HCA LIDs this port is the switch's out port for (check_lft_balance's figure)
    destinations: int  # of those, the ones the hosts' traffic sends this way (ibdmchk's figure)
    direction: str
    gbps: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "switch": self.switch,
            "port": self.port,
            "to": self.to,
            "to_port": self.to_port,
            "routes": self.routes,
            "lids": self.lids,
            "destinations": self.destinations,
            "direction": self.direction,
            "gbps": self.gbps,
        }


@dataclass(frozen=True, slots=True)
class DirectionBalance:
    direction: str  # "leaf -> spine"
    rail: int | None  # the leaf's rail, on a rail-optimized fabric
    links: int
    routes: int
    max: int
    mean: float
    even: int  # ceil(routes / links): the busiest cable with an even spread

    @property
    def ratio(self) -> float:
        return self.max / self.even if self.even else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "direction": self.direction,
            "rail": self.rail,
            "links": self.links,
            "routes": self.routes,
            "max": self.max,
            "mean": round(self.mean, 3),
            "even": self.even,
            "max_over_even": round(self.ratio, 3),
        }


@dataclass(frozen=True, eq=False)
class Balance:
    """Routes per switch-to-switch channel (``routes[i]``: switch ``src[i]`` out of ``port[i]``),
    their direction groups, the hottest channels and the unbalanced switches."""

    pattern: str
    hosts: int  # HCAs taking part
    directions: tuple[DirectionBalance, ...]
    hottest: tuple[ChannelLoad, ...]
    findings: tuple[RouteFinding, ...]
    walk: Walk
    src: np.ndarray[Any, Any]
    port: np.ndarray[Any, Any]
    dst: np.ndarray[Any, Any]
    direction_names: tuple[str, ...]
    direction: np.ndarray[Any, Any]  # index into direction_names
    mean: np.ndarray[Any, Any]  # per channel: the mean routes of its group in ``directions``

    @property
    def routes(self) -> np.ndarray[Any, Any]:
        out: np.ndarray[Any, Any] = self.walk.port_routes[self.src, self.port]
        return out

    def channel(self, i: int) -> ChannelLoad:
        b = self.walk.bound
        s, p = int(self.src[i]), int(self.port[i])
        lk = b.links.get((s, p))
        return ChannelLoad(
            b.switches[s],
            p,
            b.switches[int(self.dst[i])],
            int(b.far_port[s, p]),
            int(self.walk.port_routes[s, p]),
            int(self.walk.port_lids[s, p]),
            int(self.walk.port_dests[s, p]),
            self.direction_names[int(self.direction[i])],
            lk.gbps if lk is not None else 0.0,
        )

    def channels(self) -> list[ChannelLoad]:
        return [self.channel(i) for i in range(len(self.src))]

    def to_dict(self, with_channels: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "pattern": self.pattern,
            "hosts": self.hosts,
            "directions": [d.to_dict() for d in self.directions],
            "hottest": [c.to_dict() for c in self.hottest],
        }
        if with_channels:
            out["links"] = [c.to_dict() for c in self.channels()]
        return out


def balance(w: Walk, cls: Classification) -> Balance:
    b = w.bound
    tier_names = [cls.nodes[g].tier_name if g in cls.nodes else "switch" for g in b.switches]
    kinds = sorted(set(tier_names))
    kind = np.array([kinds.index(n) for n in tier_names], np.int64)
    rails = np.array(
        [r if (r := (cls.nodes[g].rail if g in cls.nodes else None)) is not None else -1 for g in b.switches]
    )
    s_idx, ports = np.nonzero(b.far_switch >= 0)
    t_idx = b.far_switch[s_idx, ports].astype(np.int64)
    routes = w.port_routes[s_idx, ports]
    pair = kind[s_idx] * len(kinds) + kind[t_idx]
    pairs, direction = np.unique(pair, return_inverse=True)
    names = tuple(f"{kinds[p // len(kinds)]} -> {kinds[p % len(kinds)]}" for p in pairs.tolist())
    leaf = kinds.index("leaf") if "leaf" in kinds else -1
    rail = np.full(len(s_idx), -1)
    if cls.rail_optimized:
        rail = np.where(kind[s_idx] == leaf, rails[s_idx], np.where(kind[t_idx] == leaf, rails[t_idx], -1))
    directions = []
    group = direction * 1000 + (rail + 1)
    mean = np.zeros(len(s_idx))
    for g in np.unique(group).tolist():
        sel = routes[group == g]
        mean[group == g] = float(sel.mean())
        carried = int(sel.sum())
        r = g % 1000 - 1
        directions.append(
            DirectionBalance(
                names[g // 1000],
                None if r < 0 else r,
                len(sel),
                carried,
                int(sel.max()),
                float(sel.mean()),
                math.ceil(carried / len(sel)),
            )
        )
    # per switch and direction: the busiest cable against the even spread of its routes
    key = s_idx.astype(np.int64) * len(names) + direction
    order = np.argsort(key, kind="stable")
    ks = key[order]
    # no switch-to-switch cable (one switch): no group, and reduceat refuses a start on nothing
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]]) if len(ks) else np.zeros(0, np.int64)
    total = np.add.reduceat(routes[order], starts)
    cables = np.diff(np.r_[starts, len(ks)])
    top = np.maximum.reduceat(routes[order], starts)
    idle = np.add.reduceat((routes[order] == 0).astype(np.int64), starts)
    even = -(-total // np.maximum(cables, 1))
    bad = (cables >= 2) & (total > 0) & (top > MAX_RATIO * even) & (top - even >= MIN_EXCESS)
    findings = []
    for dirn in np.unique(direction[order][starts][bad]).tolist():
        mine = np.flatnonzero(bad & (direction[order][starts] == dirn))
        worst = mine[np.argmax(top[mine] / even[mine])]
        at = order[starts[worst] : starts[worst] + cables[worst]]
        busiest = at[np.argmax(routes[at])]
        findings.append(
            RouteFinding(
                IMBALANCE,
                Severity.WARNING,
                switch=b.switches[int(s_idx[busiest])],
                port=int(ports[busiest]),
                count=len(mine),
                detail={
                    "direction": names[dirn],
                    "routes": int(total[worst]),
                    "cables": int(cables[worst]),
                    "max": int(top[worst]),
                    "even": int(even[worst]),
                    "idle_cables": int(idle[worst]),
                    "switches": len(mine),
                    "pattern": w.traffic.pattern,
                },
            )
        )
    hosts = int((w.traffic.group >= 0).sum())
    bal = Balance(
        w.traffic.pattern,
        hosts,
        tuple(directions),
        (),
        tuple(findings),
        w,
        s_idx,
        ports,
        t_idx,
        names,
        direction,
        mean,
    )
    hot = np.argsort(-routes, kind="stable")[:HOT_LINKS]
    hottest = tuple(bal.channel(int(i)) for i in hot if routes[int(i)] > 0)
    return Balance(
        w.traffic.pattern,
        hosts,
        tuple(directions),
        hottest,
        tuple(findings),
        w,
        s_idx,
        ports,
        t_idx,
        names,
        direction,
        mean,
    )
