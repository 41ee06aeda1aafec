"""What-if: the bandwidth a job would see if ports were isolated, links degraded or AR toggled.

Two collectives per traffic group (a rail on rail-optimized fabrics, else all endpoints):

* **all-to-all**: every HCA sends its link rate split evenly over all the others;
* **ring all-reduce**: each HCA sends to the next host of the group (hosts in name order).

Each is scored as the share ``λ`` (0-1] of the HCA rate that every flow can keep at once: the
most loaded link sets it (``λ = min(1, capacity / load)``). Two routings are compared:

* **static**: one fixed path per destination. Taken from the forwarding tables when a route
  function is given; otherwise modelled as d-mod-k: at every switch the uplink is the destination
  LID modulo the number of uplinks (then divided for the next level), as OpenSM's min-hop and
  fat-tree engines spread destinations. Isolated ports are routed around (the SM resweeps);
  degraded links keep their routes.
* **adaptive (ideal)**: flows spread over every equal-cost path, limited only by the capacity
  out of and into each leaf, each unit (3 tiers) and each HCA cable: the best AR can do.

A per-pair view counts how many host pairs of a group would, alone on the fabric, drop below
their full speed under static routing (the pair is pinned to its path).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from fabric.advise.candidates import link_at, node_label
from topology.classify import Classification, Role
from topology.errors import IbfabError, UsageError
from topology.model import Fabric, Guid, Link, LinkKey, NodeKind, PortRef

Hop = tuple[LinkKey, Guid]  # a cable and the node the traffic leaves from
# src HCA, dst HCA -> cables in order (None: the tables give the pair no route)
RouteFn = Callable[[Guid, Guid], Sequence[Link] | None]


@dataclass(frozen=True)
class Scenario:
    isolate: tuple[PortRef, ...] = ()
    degrade: Mapping[PortRef, float] = field(default_factory=dict)  # port -> share of its rate kept
    ar: bool | None = None  # None: report both routings

    def describe(self, fabric: Fabric, cls: Classification) -> str:
        parts = []
        for ref in self.isolate:
            parts.append(f"{node_label(fabric, cls, ref.guid)}:{ref.port} isolated")
        for ref, share in self.degrade.items():
            lk = link_at(fabric, ref)
            far = "" if lk is None else " <-> " + node_label(fabric, cls, lk.other(ref.guid).guid)
            parts.append(f"{node_label(fabric, cls, ref.guid)}:{ref.port}{far} at {share:.0%}")
        return ", ".join(parts) or "no change"


@dataclass(frozen=True, slots=True)
class Endpoint:
    guid: Guid
    host: str
    leaf: Guid
    lid: int
    gbps: float


@dataclass(frozen=True, slots=True)
class GroupEstimate:
    group: str  # "rail 3" or "all"
    endpoints: int
    pairs: int  # ordered pairs of distinct endpoints
    slowed_pairs: Mapping[float, int]  # static, pair alone: speed share -> pairs
    all_to_all: Mapping[str, float]  # static/adaptive, baseline and scenario: λ
    ring: Mapping[str, float]

    @property
    def slowed(self) -> int:
        return sum(self.slowed_pairs.values())

    def loss(self, collective: str, routing: str) -> float:
        table = self.all_to_all if collective == "all-to-all" else self.ring
        base = table[f"{routing}_baseline"]
        return 0.0 if base <= 0 else max(0.0, 1.0 - table[routing] / base)

    def to_dict(self) -> dict[str, object]:
        return {
            "group": self.group,
            "endpoints": self.endpoints,
            "pairs": self.pairs,
            "slowed_pairs": {f"{k:g}": v for k, v in sorted(self.slowed_pairs.items())},
            "all_to_all": dict(self.all_to_all),
            "ring": dict(self.ring),
            "loss": {
                f"{c}/{r}": round(self.loss(c, r), 6)
                for c in ("all-to-all", "ring")
                for r in ("static", "adaptive")
            },
        }


@dataclass(frozen=True, slots=True)
class WhatIf:
    scenario: str
    routing_model: str
    groups: tuple[GroupEstimate, ...]
    missing: tuple[str, ...]  # endpoints cut off by the scenario
    ar: bool | None

    def worst(self) -> GroupEstimate | None:
        if not self.groups:
            return None
        return max(
            self.groups,
            key=lambda g: (g.loss("all-to-all", "static") + g.loss("ring", "static"), g.slowed, g.group),
        )

    def sentence(self) -> str:
        g = self.worst()
        if g is None:
            return f"with {self.scenario}: no endpoints to estimate"
        parts = [f"with {self.scenario} and static routing"]
        if g.slowed:
            shares = ", ".join(
                f"{n} to {share:.0%} speed" for share, n in sorted(g.slowed_pairs.items(), reverse=True)
            )
            frac = Fraction(g.slowed, g.pairs)
            parts.append(f"{g.slowed} of {g.pairs} {_pairs(g.group)} ({_frac(frac)}) drop ({shares})")
        else:
            parts.append(f"none of the {g.pairs} {_pairs(g.group)} drops below full speed on its own")
        text = ", ".join(parts)
        text += (
            f"; all-to-all on {_on(g.group)} loses {g.loss('all-to-all', 'static'):.0%} static, "
            f"{g.loss('all-to-all', 'adaptive'):.0%} with ideal AR; ring all-reduce loses "
            f"{g.loss('ring', 'static'):.0%} static, {g.loss('ring', 'adaptive'):.0%} with ideal AR"
        )
        if self.ar is not None:
            chosen = "adaptive" if self.ar else "static"
            text += f" (AR {'on' if self.ar else 'off'}: {chosen} numbers apply)"
        return text

    def to_dict(self) -> dict[str, object]:
        return {
            "scenario": self.scenario,
            "routing_model": self.routing_model,
            "ar": self.ar,
            "sentence": self.sentence(),
            "missing": list(self.missing),
            "groups": [g.to_dict() for g in self.groups],
        }


def _on(group: str) -> str:
    return "all hosts" if group == "all" else group


def _pairs(group: str) -> str:
    return "host pairs" if group == "all" else f"{group.replace(' ', '-')} pairs"


def _frac(f: Fraction) -> str:
    approx = f.limit_denominator(64)
    return f"{approx.numerator}/{approx.denominator}" if approx.numerator == 1 else f"{float(f):.1%}"


# -- the modified fabric --------------------------------------------------------------------------
class _Net:
    """Directed capacities of a fabric with ``removed`` cables gone and ``factor`` applied."""

    def __init__(
        self, fabric: Fabric, cls: Classification, removed: set[LinkKey], factor: Mapping[LinkKey, float]
    ):
        self.fabric, self.cls = fabric, cls
        self.cap: dict[Hop, float] = {}
        self.up: dict[Guid, list[tuple[int, Link, Guid]]] = defaultdict(list)
        self.down: dict[Guid, list[tuple[int, Link, Guid]]] = defaultdict(list)
        self.hca_link: dict[Guid, Link] = {}
        for lk in fabric.links:
            if lk.key in removed:
                continue
            rate = lk.gbps * factor.get(lk.key, 1.0)
            self.cap[(lk.key, lk.a.guid)] = rate
            self.cap[(lk.key, lk.b.guid)] = rate
            for near, far in ((lk.a, lk.b), (lk.b, lk.a)):
                tn, tf = self.tier(near.guid), self.tier(far.guid)
                if fabric.nodes[near.guid].kind is not NodeKind.SWITCH:
                    self.hca_link.setdefault(near.guid, lk)
                elif tn is not None and tf is not None and tf > tn:
                    self.up[near.guid].append((near.port, lk, far.guid))
                elif tn is not None and tf is not None and 0 < tf < tn:
                    self.down[near.guid].append((near.port, lk, far.guid))
        for table in (self.up, self.down):
            for v in table.values():
                v.sort(key=lambda t: t[0])
        self._below: dict[Guid, frozenset[Guid]] = {}
        self._reach: dict[tuple[Guid, Guid], bool] = {}

    def tier(self, guid: Guid) -> int | None:
        return self.cls.nodes[guid].tier

    def below(self, sw: Guid) -> frozenset[Guid]:
        """Leaves reachable from ``sw`` going down only (``sw`` itself if a leaf)."""
        hit = self._below.get(sw)
        if hit is None:
            out: set[Guid] = {sw} if self.tier(sw) == 1 else set()
            for _, _, child in self.down.get(sw, ()):
                out |= self.below(child)
            hit = self._below[sw] = frozenset(out)
        return hit

    def reaches(self, sw: Guid, leaf: Guid) -> bool:
        key = (sw, leaf)
        if key not in self._reach:
            self._reach[key] = leaf in self.below(sw) or any(
                self.reaches(u, leaf) for _, _, u in self.up.get(sw, ())
            )
        return self._reach[key]

    def dmodk_path(self, src_leaf: Guid, dst: Endpoint) -> list[Hop] | None:
        """Switch hops from ``src_leaf`` to ``dst``'s leaf, d-mod-k (None when unreachable)."""
        hops: list[Hop] = []
        at, div = src_leaf, 1
        for _ in range(16):
            if at == dst.leaf:
                return hops
            if dst.leaf in self.below(at):
                downs = [t for t in self.down[at] if dst.leaf in self.below(t[2])]
                _, lk, nxt = downs[(dst.lid // div) % len(downs)]
            else:
                ups = [t for t in self.up.get(at, ()) if self.reaches(t[2], dst.leaf)]
                if not ups:
                    return None
                _, lk, nxt = ups[(dst.lid // div) % len(ups)]
                div *= len(ups)
            hops.append((lk.key, at))
            at = nxt
        return None


def _endpoints(
    fabric: Fabric, cls: Classification, net: _Net, hosts: set[str] | None
) -> tuple[dict[str, list[Endpoint]], list[str]]:
    groups: dict[str, list[Endpoint]] = defaultdict(list)
    missing = []
    for i, (g, c) in enumerate(sorted(cls.nodes.items())):
        if c.role is not Role.COMPUTE or c.host is None or (hosts is not None and c.host not in hosts):
            continue
        lk = net.hca_link.get(g)
        if lk is None:
            if c.leaf is not None:
                missing.append(c.name)
            continue
        leaf = lk.other(g).guid
        lid = fabric.nodes[g].lid
        label = f"rail {c.rail}" if cls.rail_optimized and c.rail is not None else "all"
        groups[label].append(Endpoint(g, c.host, leaf, lid if lid is not None else i, net.cap[(lk.key, g)]))
    if hosts is not None:
        unknown = sorted(hosts - {c.host for c in cls.nodes.values() if c.host})
        if unknown:
            raise UsageError(f"hosts not in the fabric: {', '.join(unknown[:5])}")
    return dict(groups), missing


def _flows(eps: list[Endpoint], collective: str) -> list[tuple[Endpoint, Endpoint, float]]:
    n = len(eps)
    if n < 2:
        return []
    if collective == "ring":
        order = sorted(eps, key=lambda e: (e.host, e.guid))
        return [(order[i], order[(i + 1) % n], order[i].gbps) for i in range(n)]
    return [(s, d, s.gbps / (n - 1)) for s in eps for d in eps if s is not d]


def _host_hop(net: _Net, ep: Endpoint, outward: bool) -> Hop:
    lk = net.hca_link[ep.guid]
    return (lk.key, ep.guid) if outward else (lk.key, lk.other(ep.guid).guid)


def _static_lambda(net: _Net, flows: list[tuple[Endpoint, Endpoint, float]], route: RouteFn | None) -> float:
    load: dict[Hop, float] = defaultdict(float)
    paths: dict[tuple[Guid, Guid], list[Hop] | None] = {}
    for s, d, rate in flows:
        hops = _table_hops(net, route, s, d)
        if hops is None:
            key = (s.leaf, d.guid)
            if key not in paths:
                paths[key] = net.dmodk_path(s.leaf, d)
            sw = paths[key]
            if sw is None:
                return 0.0
            hops = [_host_hop(net, s, True), *sw, _host_hop(net, d, False)]
        for h in hops:
            load[h] += rate
    return _lambda(net, load)


def _table_hops(net: _Net, route: RouteFn | None, s: Endpoint, d: Endpoint) -> list[Hop] | None:
    """The pair's hops from the forwarding tables, or None when there are no tables or the table
    path crosses a cable the scenario removed (the SM reroutes such pairs: d-mod-k stands in)."""
    if route is None:
        return None
    links = route(s.guid, d.guid)
    if links is None:
        return None
    hops = _hops_of(links, s.guid)
    return hops if all(h in net.cap for h in hops) else None


def _hops_of(links: Sequence[Link], src: Guid) -> list[Hop]:
    hops, at = [], src
    for lk in links:
        hops.append((lk.key, at))
        at = lk.other(at).guid
    return hops


def _lambda(net: _Net, load: Mapping[Hop, float]) -> float:
    lam = 1.0
    for hop, value in load.items():
        if value > 0:
            lam = min(lam, net.cap.get(hop, 0.0) / value)
    return lam


def _adaptive_lambda(net: _Net, flows: list[tuple[Endpoint, Endpoint, float]]) -> float:
    """The bound at every HCA cable, every leaf's uplinks and every unit's uplinks."""
    if not flows:
        return 1.0
    load: dict[Hop, float] = defaultdict(float)
    for s, d, rate in flows:
        load[_host_hop(net, s, True)] += rate
        load[_host_hop(net, d, False)] += rate
    lam = _lambda(net, load)
    between: dict[tuple[Guid, Guid], float] = defaultdict(float)
    for s, d, rate in flows:
        if s.leaf != d.leaf:
            between[(s.leaf, d.leaf)] += rate
    for members in _cut_sets(net):
        out_cap = in_cap = 0.0
        for sw in members:
            for _, lk, far in net.up.get(sw, ()):
                if far not in members:
                    out_cap += net.cap[(lk.key, sw)]
                    in_cap += net.cap[(lk.key, far)]
        out_demand = sum(r for (a, b), r in between.items() if a in members and b not in members)
        in_demand = sum(r for (a, b), r in between.items() if b in members and a not in members)
        for demand, cap in ((out_demand, out_cap), (in_demand, in_cap)):
            if demand > 0:
                lam = min(lam, cap / demand)
    return lam


def _cut_sets(net: _Net) -> list[frozenset[Guid]]:
    """Each leaf alone; in 3+ tiers also each unit: its leaves plus the spines serving only them."""
    leaves = [g for g, c in net.cls.nodes.items() if c.role is Role.SWITCH and c.tier == 1]
    out = [frozenset([leaf]) for leaf in leaves]
    for group in net.cls.groups:
        own = set(group.leaves)
        spines = {
            g
            for g, c in net.cls.nodes.items()
            if c.role is Role.SWITCH and c.tier == 2 and net.below(g) and net.below(g) <= own
        }
        if spines and any(net.up.get(s) for s in spines):
            out.append(frozenset(own | spines))
    return out


def _pair_view(
    base: _Net, net: _Net, eps: list[Endpoint], route: RouteFn | None, after: RouteFn | None
) -> Counter[float]:
    """Per ordered pair alone: static bottleneck now / before (only pairs that got slower)."""
    slowed: Counter[float] = Counter()
    cache: dict[tuple[int, Guid, Guid], float] = {}
    for s in eps:
        for d in eps:
            if s is d:
                continue
            before = _bottleneck(base, s, d, route, cache, 0)
            now = _bottleneck(net, s, d, after, cache, 1)
            if before > 0 and now < before - 1e-9:
                slowed[round(now / before, 4)] += 1
    return slowed


def _bottleneck(
    net: _Net,
    s: Endpoint,
    d: Endpoint,
    route: RouteFn | None,
    cache: dict[tuple[int, Guid, Guid], float],
    which: int,
) -> float:
    if s.guid not in net.hca_link or d.guid not in net.hca_link:
        return 0.0
    hops = _table_hops(net, route, s, d)
    if hops is not None:
        return min((net.cap[h] for h in hops), default=0.0)
    key = (which, s.leaf, d.guid)
    inner = cache.get(key)
    if inner is None:
        sw = net.dmodk_path(s.leaf, d)
        inner = cache[key] = -1.0 if sw is None else min((net.cap[h] for h in sw), default=float("inf"))
    if inner < 0:
        return 0.0
    return min(inner, net.cap[_host_hop(net, s, True)], net.cap[_host_hop(net, d, False)])


def what_if(
    fabric: Fabric,
    cls: Classification,
    scenario: Scenario,
    hosts: Iterable[str] | None = None,
    route: RouteFn | None = None,
    route_after: RouteFn | None = None,
    after_source: str = "",
) -> WhatIf:
    """Estimate collectives per group before and after ``scenario`` (see the module docstring).

    ``route_after``: the tables the SM really wrote after the change (a twin ran it: ``after_source``
    says which); then no pair is rerouted by estimate, only those the tables leave without a route."""
    removed: set[LinkKey] = set()
    for ref in scenario.isolate:
        lk = link_at(fabric, ref)
        if lk is None:
            raise UsageError(f"{node_label(fabric, cls, ref.guid)}:{ref.port} has no cable to isolate")
        removed.add(lk.key)
    factor: dict[LinkKey, float] = {}
    for ref, share in scenario.degrade.items():
        lk = link_at(fabric, ref)
        if lk is None:
            raise UsageError(f"{node_label(fabric, cls, ref.guid)}:{ref.port} has no cable to degrade")
        if not 0 < share <= 1:
            raise UsageError(f"degrade share {share}: must be more than 0 and at most 1 (100%)")
        factor[lk.key] = share
    host_set = set(hosts) if hosts is not None else None
    base = _Net(fabric, cls, set(), {})
    net = _Net(fabric, cls, removed, factor)
    base_groups, _ = _endpoints(fabric, cls, base, host_set)
    groups, missing = _endpoints(fabric, cls, net, host_set)
    dmodk = "static routing modelled as d-mod-k (destination LID modulo the uplinks)"
    try:
        out = _estimate(base, net, base_groups, groups, route, bool(removed), route_after)
        if route is None:
            model = dmodk + "; no forwarding tables given"
        elif route_after is not None:
            model = f"static routes from the forwarding tables before and after the change ({after_source})"
        elif removed:
            model = (
                "static routes from the forwarding tables; pairs whose route used the isolated cable "
                "rerouted d-mod-k (destination LID modulo the uplinks)"
            )
        else:
            model = "static routes from the forwarding tables"
    except IbfabError as exc:  # tables that do not match the fabric (stale dump, missing entries)
        out = _estimate(base, net, base_groups, groups, None, bool(removed))
        model = dmodk + f"; forwarding tables unusable: {exc.one_line()}"
    return WhatIf(scenario.describe(fabric, cls), model, tuple(out), tuple(missing), scenario.ar)


def _estimate(
    base: _Net,
    net: _Net,
    base_groups: Mapping[str, list[Endpoint]],
    groups: Mapping[str, list[Endpoint]],
    route: RouteFn | None,
    rerouted: bool,
    route_after: RouteFn | None = None,
) -> list[GroupEstimate]:
    out = []
    # After an isolation the SM reroutes the pairs whose table path used the removed cable; the
    # other pairs keep their table routes (see _table_hops), unless the SM's own tables after the
    # change are known (a twin ran it).
    after = route_after if route_after is not None else route
    for label in sorted(base_groups, key=_group_order):
        eps_base = base_groups[label]
        eps = groups.get(label, [])
        tables: dict[str, dict[str, float]] = {}
        for collective in ("all-to-all", "ring"):
            fb, fn = _flows(eps_base, collective), _flows(eps, collective)
            tables[collective] = {
                "static_baseline": _static_lambda(base, fb, route),
                "adaptive_baseline": _adaptive_lambda(base, fb),
                "static": _static_lambda(net, fn, after),
                "adaptive": _adaptive_lambda(net, fn),
            }
        slowed = _pair_view(base, net, eps, route, after)
        n = len(eps)
        out.append(GroupEstimate(label, n, n * (n - 1), dict(slowed), tables["all-to-all"], tables["ring"]))
    return out


def _group_order(label: str) -> tuple[int, str]:
    tail = label.rsplit(" ", 1)[-1]
    return (int(tail), label) if tail.isdigit() else (1 << 30, label)


def parse_share(text: str) -> float:
    """``50%`` or ``0.5`` -> 0.5."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError as exc:
        raise UsageError(f"{text!r}: expected a share such as 50% or 0.5") from exc
    if not 0 < value <= 1:
        raise UsageError(f"{text!r}: the share must be above 0 and at most 100%")
    return value
