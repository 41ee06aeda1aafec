"""Safety rails for port isolation: what may be taken out of service, and what it costs.

Pure functions of the fabric (networkx for connectivity and max-flow). The rules follow NVIDIA's
own isolator (UFM PDR plugin) and go further where a tool that prints commands must:

* ``disconnects_hca``: never cut an HCA off (a host's only cable to its rail) or split the fabric
  into parts that both hold HCAs; drain the node in Slurm instead.
* ``switch_to_host``: switch-to-host ports only when the operator opts in (NVIDIA ships
  ``SWITCH_TO_HOST_ISOLATION=False``).
* ``uplink_floor``: a switch keeps at least ``min_uplink_share`` (default 75 %) of its *designed*
  uplinks: the most of its count now, its count in the first stored snapshot and the usual count of
  its tier in its section. Measured against the uplinks left now, isolations one after another
  would walk a leaf down (32 -> 24 -> 18 ...); against the design they stop at the floor.
* ``last_path_to_spine_group``: a switch keeps at least one cable into every group of upper
  switches it reaches (spines with the same cores: a plane; in two tiers, all of a leaf's spines).
* ``cap``: at most ``max(10, 0.5 % of cabled switch ports)`` isolations at once (NVIDIA's
  ``max(MAX_NUM_ISOLATE, 0.5% * fabric_size)``), counting ports already isolated: those the fabric
  shows disabled now and those the store has open (the caller counts them, see
  :mod:`fabric.app.isolation.limits`).

Candidates are taken greedily, worst first; each rejection names the rule that stopped it. The
cost of each accepted isolation is the uplink bandwidth its switch loses and the change of the
worst leaf-to-leaf bandwidth of the leaves it touches, from max-flow over up/down (valley-free)
paths, which are the paths fat-tree routing may use.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import networkx as nx

from fabric.advise.candidates import Candidate, node_label
from topology.classify import Classification, Role
from topology.model import Fabric, Guid, Link, LinkKey, NodeKind


class Rule(StrEnum):
    DISCONNECTS_HCA = "disconnects_hca"
    SWITCH_TO_HOST = "switch_to_host"
    UPLINK_FLOOR = "uplink_floor"
    LAST_PATH_TO_SPINE_GROUP = "last_path_to_spine_group"
    CAP = "cap"
    DUPLICATE = "duplicate"


@dataclass(frozen=True, slots=True)
class SafetyPolicy:
    min_uplink_share: float = 0.75
    max_isolations: int | None = None  # None: max(10, 0.5 % of cabled switch ports)
    allow_switch_to_host: bool = False


@dataclass(frozen=True, slots=True)
class LeafCost:
    """What one isolation costs a switch: uplinks and worst leaf-to-leaf bandwidth (Gb/s)."""

    switch: Guid
    name: str
    uplinks_before: int
    uplinks_after: int
    uplink_gbps_before: float
    uplink_gbps_after: float
    worst_leaf_gbps_before: float | None  # None: not a leaf and no leaf below it
    worst_leaf_gbps_after: float | None

    def to_dict(self) -> dict[str, object]:
        return {
            "switch": self.switch,
            "name": self.name,
            "uplinks_before": self.uplinks_before,
            "uplinks_after": self.uplinks_after,
            "uplink_gbps_before": self.uplink_gbps_before,
            "uplink_gbps_after": self.uplink_gbps_after,
            "worst_leaf_gbps_before": self.worst_leaf_gbps_before,
            "worst_leaf_gbps_after": self.worst_leaf_gbps_after,
        }

    def describe(self) -> str:
        text = (
            f"{self.name} keeps {self.uplinks_after}/{self.uplinks_before} uplinks "
            f"({self.uplink_gbps_after:g} of {self.uplink_gbps_before:g} Gb/s)"
        )
        if self.worst_leaf_gbps_before is not None and self.worst_leaf_gbps_after is not None:
            text += (
                f"; worst leaf-to-leaf {self.worst_leaf_gbps_before:g} -> {self.worst_leaf_gbps_after:g} Gb/s"
            )
        return text


@dataclass(frozen=True, slots=True)
class Verdict:
    candidate: Candidate
    accepted: bool
    rule: Rule | None
    reason: str
    costs: tuple[LeafCost, ...] = ()
    drain_host: str | None = None  # the host to drain instead, when the HCA would be cut off

    def to_dict(self) -> dict[str, object]:
        c = self.candidate
        return {
            "port": {"guid": c.port.guid, "port": c.port.port},
            "far": {"guid": c.far.guid, "port": c.far.port},
            "accepted": self.accepted,
            "rule": self.rule.value if self.rule else None,
            "reason": self.reason,
            "costs": [x.to_dict() for x in self.costs],
            "drain_host": self.drain_host,
        }


@dataclass(frozen=True, slots=True)
class SafetyReport:
    verdicts: tuple[Verdict, ...]
    cap: int
    policy: SafetyPolicy
    already_isolated: int = 0

    @property
    def accepted(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.accepted)

    @property
    def rejected(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if not v.accepted)

    def to_dict(self) -> dict[str, object]:
        return {
            "cap": self.cap,
            "already_isolated": self.already_isolated,
            "policy": {
                "min_uplink_share": self.policy.min_uplink_share,
                "max_isolations": self.policy.max_isolations,
                "allow_switch_to_host": self.policy.allow_switch_to_host,
            },
            "verdicts": [v.to_dict() for v in self.verdicts],
        }


@dataclass(frozen=True, slots=True)
class DesignedUplinks:
    """A switch's uplink count by design and where that number comes from."""

    count: int
    source: str  # "now", "first snapshot 3", "usual for leaf in its section"


def usual_uplinks(cls: Classification) -> dict[Guid, int]:
    """The most common uplink count of each switch's tier in its section (its peers' design)."""
    counts: dict[tuple[int, int], Counter[int]] = defaultdict(Counter)
    for g, n in cls.uplinks.items():
        c = cls.nodes.get(g)
        if c is not None and c.tier is not None and n:
            counts[(c.section, c.tier)][n] += 1
    out = {}
    for g in cls.uplinks:
        c = cls.nodes.get(g)
        peers = counts.get((c.section, c.tier)) if c is not None and c.tier is not None else None
        if peers:
            out[g] = max(peers.most_common(), key=lambda kv: (kv[1], kv[0]))[0]
    return out


def designed_uplinks(
    cls: Classification, first: Mapping[Guid, int] | None = None, first_source: str = ""
) -> dict[Guid, DesignedUplinks]:
    """Per switch, the largest of: its uplinks now, in the first snapshot (``first``), and the usual
    count of its tier in its section. The largest wins so no source can lower the floor."""
    usual = usual_uplinks(cls)
    out = {}
    for g, now in cls.uplinks.items():
        best = DesignedUplinks(now, "now")
        if first is not None and first.get(g, 0) > best.count:
            best = DesignedUplinks(first[g], first_source or "the first snapshot")
        c = cls.nodes[g]
        if usual.get(g, 0) > best.count:
            best = DesignedUplinks(usual[g], f"usual for a {c.tier_name} in its section")
        out[g] = best
    return out


def isolation_cap(fabric: Fabric) -> int:
    """``max(10, ceil(0.5 % of cabled switch ports))``."""
    ports = sum(
        1 for lk in fabric.links for end in (lk.a, lk.b) if fabric.nodes[end.guid].kind is NodeKind.SWITCH
    )
    return max(10, math.ceil(0.005 * ports))


@dataclass
class _Working:
    """The fabric with the isolations accepted so far removed."""

    fabric: Fabric
    cls: Classification
    graph: nx.MultiGraph
    designed: Mapping[Guid, DesignedUplinks]
    removed: set[LinkKey] = field(default_factory=set)
    lost_uplinks: dict[Guid, list[Link]] = field(default_factory=lambda: defaultdict(list))

    def tier(self, guid: Guid) -> int | None:
        c = self.cls.nodes.get(guid)
        return None if c is None else c.tier

    def is_host_hca(self, guid: Guid) -> bool:
        return self.cls.nodes[guid].role in (Role.COMPUTE, Role.UNNAMED)


def _lower_upper(w: _Working, lk: Link) -> tuple[Guid, Guid] | None:
    """(lower, upper) switch of an inter-tier switch cable, else None."""
    ta, tb = w.tier(lk.a.guid), w.tier(lk.b.guid)
    if ta is None or tb is None or ta == tb or 0 in (ta, tb):
        return None
    return (lk.a.guid, lk.b.guid) if ta < tb else (lk.b.guid, lk.a.guid)


def spine_groups(fabric: Fabric, cls: Classification) -> dict[Guid, frozenset[Guid]]:
    """Upper switches grouped by the switches above them (planes), or, at the top, by those below."""
    out: dict[Guid, frozenset[Guid]] = {}
    for sw in fabric.switches():
        t = cls.nodes[sw.guid].tier
        if t is None or t < 2:
            continue
        above = frozenset(
            far.guid for _, far, _ in fabric.neighbours(sw.guid) if (cls.nodes[far.guid].tier or 0) > t
        )
        below = frozenset(
            far.guid
            for _, far, _ in fabric.neighbours(sw.guid)
            if cls.nodes[far.guid].tier is not None and 0 < (cls.nodes[far.guid].tier or 0) < t
        )
        out[sw.guid] = above or below
    return _merge_similar(out)


def _merge_similar(keys: dict[Guid, frozenset[Guid]]) -> dict[Guid, frozenset[Guid]]:
    """Spines whose neighbour sets mostly overlap are one group: a spine that lost one cable (or
    carries one extra) must not become a group of its own, or every leaf's single cable to it
    would look like a last path."""
    parent = {g: g for g in keys}

    def find(x: Guid) -> Guid:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    distinct: dict[frozenset[Guid], Guid] = {}
    for g, key in keys.items():
        first = distinct.setdefault(key, g)
        parent[find(g)] = find(first)
    reps = list(distinct.items())
    for i, (ka, ga) in enumerate(reps):
        for kb, gb in reps[i + 1 :]:
            if ka and kb and 2 * len(ka & kb) > min(len(ka), len(kb)):
                parent[find(ga)] = find(gb)
    merged: dict[Guid, set[Guid]] = {}
    for g, key in keys.items():
        merged.setdefault(find(g), set()).update(key)
    return {g: frozenset(merged[find(g)]) for g in keys}


def check_isolations(
    fabric: Fabric,
    cls: Classification,
    candidates: Sequence[Candidate],
    policy: SafetyPolicy | None = None,
    already_isolated: int = 0,
    designed: Mapping[Guid, DesignedUplinks] | None = None,
) -> SafetyReport:
    """Greedy selection in the given order (worst first); every candidate gets a verdict.

    ``already_isolated`` counts toward the cap; ``designed`` is each switch's uplink count by
    design (:func:`designed_uplinks`, by default from this fabric and its peers alone)."""
    policy = policy or SafetyPolicy()
    cap = policy.max_isolations if policy.max_isolations is not None else isolation_cap(fabric)
    w = _Working(fabric, cls, fabric.graph(), designed if designed is not None else designed_uplinks(cls))
    groups = spine_groups(fabric, cls)
    verdicts: list[Verdict] = []
    taken = already_isolated
    for cand in candidates:
        v = _judge(w, groups, cand, policy, cap, taken)
        if v.accepted:
            costs = _apply(w, cand)
            v = Verdict(cand, True, None, v.reason, costs)
            taken += 1
        verdicts.append(v)
    return SafetyReport(tuple(verdicts), cap, policy, already_isolated)


def _judge(
    w: _Working,
    groups: dict[Guid, frozenset[Guid]],
    cand: Candidate,
    policy: SafetyPolicy,
    cap: int,
    taken: int,
) -> Verdict:
    lk = cand.link
    label = node_label(w.fabric, w.cls, cand.port.guid) + f":{cand.port.port}"
    if lk.key in w.removed:
        return Verdict(cand, False, Rule.DUPLICATE, f"{label} is already in this plan")
    cut_off = _cut_off_hcas(w, lk)
    if cut_off:
        hosts = sorted({w.cls.nodes[g].host or w.cls.nodes[g].name for g in cut_off})
        host = hosts[0] if len(hosts) == 1 and w.cls.nodes[cut_off[0]].host else None
        what = ", ".join(w.cls.nodes[g].name for g in cut_off[:3]) + (" …" if len(cut_off) > 3 else "")
        advice = f"; drain {host} instead" if host else ""
        return Verdict(
            cand, False, Rule.DISCONNECTS_HCA, f"isolating {label} would cut off {what}{advice}", (), host
        )
    if cand.switch_to_host and not policy.allow_switch_to_host:
        return Verdict(
            cand, False, Rule.SWITCH_TO_HOST, f"{label} faces a host; switch-to-host isolation is opt-in"
        )
    pair = _lower_upper(w, lk)
    if pair is not None:
        lower, upper = pair
        now = w.cls.uplinks.get(lower, 0)
        design = w.designed.get(lower, DesignedUplinks(now, "now"))
        base = max(design.count, now)
        left = now - len(w.lost_uplinks[lower]) - 1
        if base and left < policy.min_uplink_share * base - 1e-9:
            name = node_label(w.fabric, w.cls, lower)
            whence = "" if design.source == "now" else f", {base} by design ({design.source})"
            return Verdict(
                cand,
                False,
                Rule.UPLINK_FLOOR,
                f"{name} would keep {left}/{base} uplinks ({now} now{whence}), "
                f"below the floor of {policy.min_uplink_share:.0%}",
            )
        group = groups.get(upper)
        if group is not None and not _keeps_group(w, lower, lk, group, groups):
            name = node_label(w.fabric, w.cls, lower)
            return Verdict(
                cand,
                False,
                Rule.LAST_PATH_TO_SPINE_GROUP,
                f"{label} is {name}'s last cable into its spine group of {node_label(w.fabric, w.cls, upper)}",
            )
    if taken >= cap:
        return Verdict(cand, False, Rule.CAP, f"the cap of {cap} isolations at once is reached")
    return Verdict(cand, True, None, "passes every safety rule")


def _keeps_group(
    w: _Working, lower: Guid, lk: Link, group: frozenset[Guid], groups: dict[Guid, frozenset[Guid]]
) -> bool:
    for _, far, other in w.fabric.neighbours(lower):
        if other.key == lk.key or other.key in w.removed or far.guid == lower:
            continue
        if groups.get(far.guid) == group:
            return True
    return False


def _cut_off_hcas(w: _Working, lk: Link) -> list[Guid]:
    """Host HCAs that lose every path to the other host HCAs if ``lk`` goes too."""
    g = w.graph
    u, v = lk.a.guid, lk.b.guid
    if g.number_of_edges(u, v) > 1:
        return []
    g.remove_edge(u, v, key=lk.key)
    try:
        if nx.has_path(g, u, v):
            return []
        side_u = nx.node_connected_component(g, u)
        side_v = nx.node_connected_component(g, v)
        hcas_u = sorted(x for x in side_u if w.is_host_hca(Guid(x)))
        hcas_v = sorted(x for x in side_v if w.is_host_hca(Guid(x)))
        if not hcas_u or not hcas_v:
            return []
        return [Guid(x) for x in (hcas_u if len(hcas_u) <= len(hcas_v) else hcas_v)]
    finally:
        g.add_edge(u, v, key=lk.key, link=lk)


def _apply(w: _Working, cand: Candidate) -> tuple[LeafCost, ...]:
    lk = cand.link
    pair = _lower_upper(w, lk)
    lower = pair[0] if pair else cand.port.guid
    leaves = _leaves_under(w, lower)
    before_up = _uplinks(w, lower)
    before_worst = {leaf: worst_leaf_gbps(w.fabric, w.cls, leaf, w.removed) for leaf in leaves}
    w.graph.remove_edge(lk.a.guid, lk.b.guid, key=lk.key)
    w.removed.add(lk.key)
    if pair:
        w.lost_uplinks[lower].append(lk)
    after_up = _uplinks(w, lower)
    costs = []
    worst_b = min((x for x in before_worst.values() if x is not None), default=None)
    after = [worst_leaf_gbps(w.fabric, w.cls, leaf, w.removed) for leaf in leaves]
    worst_a = min((x for x in after if x is not None), default=None)
    costs.append(
        LeafCost(
            lower,
            node_label(w.fabric, w.cls, lower),
            before_up[0],
            after_up[0],
            before_up[1],
            after_up[1],
            worst_b,
            worst_a,
        )
    )
    return tuple(costs)


def _uplinks(w: _Working, sw: Guid) -> tuple[int, float]:
    t = w.tier(sw)
    n, gbps = 0, 0.0
    for _, far, lk in w.fabric.neighbours(sw):
        ft = w.tier(far.guid)
        if t is not None and ft is not None and ft > t and lk.key not in w.removed:
            n += 1
            gbps += lk.gbps
    return n, gbps


def _leaves_under(w: _Working, sw: Guid) -> list[Guid]:
    t = w.tier(sw)
    if t == 1:
        return [sw]
    if t is None or t < 1:
        return []
    frontier, seen = {sw}, {sw}
    leaves: set[Guid] = set()
    while frontier:
        nxt: set[Guid] = set()
        for x in frontier:
            tx = w.tier(x) or 0
            for _, far, _ in w.fabric.neighbours(x):
                ft = w.tier(far.guid)
                if ft is None or ft <= 0 or ft >= tx or far.guid in seen:
                    continue
                seen.add(far.guid)
                (leaves if ft == 1 else nxt).add(far.guid)
        frontier = nxt
    return sorted(leaves)


# -- leaf-to-leaf bandwidth over up/down paths ----------------------------------------------------
def updown_network(fabric: Fabric, cls: Classification, removed: Iterable[LinkKey] = ()) -> nx.DiGraph:
    """A flow network whose source-to-sink paths are the up-then-down paths of the fabric.

    Every switch has an up copy and a down copy joined by an unbounded turn edge; a cable from
    tier t to tier t' > t gives an up edge (its upward direction) and a down edge (its downward
    direction), each with the cable's Gb/s. A flow from ``("u", A)`` to ``("d", B)`` climbs from
    leaf A, turns once and descends to leaf B.
    """
    gone = set(removed)
    net = nx.DiGraph()
    for sw in fabric.switches():
        if cls.nodes[sw.guid].tier is not None:
            net.add_edge(("u", sw.guid), ("d", sw.guid))
    for lk in fabric.links:
        if lk.key in gone:
            continue
        ta, tb = cls.nodes[lk.a.guid].tier, cls.nodes[lk.b.guid].tier
        if ta is None or tb is None or ta == tb or 0 in (ta, tb):
            continue
        lo, hi = (lk.a.guid, lk.b.guid) if ta < tb else (lk.b.guid, lk.a.guid)
        for edge in ((("u", lo), ("u", hi)), (("d", hi), ("d", lo))):
            if net.has_edge(*edge):
                net.edges[edge]["capacity"] += lk.gbps
            else:
                net.add_edge(*edge, capacity=lk.gbps)
    return net


def _signature(fabric: Fabric, cls: Classification, leaf: Guid, gone: set[LinkKey]) -> tuple[object, ...]:
    ups: dict[str, float] = defaultdict(float)
    for _, far, lk in fabric.neighbours(leaf):
        if lk.key not in gone and (cls.nodes[far.guid].tier or 0) > 1:
            ups[far.guid] += lk.gbps
    return tuple(sorted(ups.items()))


def worst_leaf_gbps(
    fabric: Fabric, cls: Classification, leaf: Guid, removed: Iterable[LinkKey] = ()
) -> float | None:
    """The smallest max-flow from ``leaf`` to any other leaf over up/down paths (None: no other leaf).

    Leaves with the same uplinks (same spines, same Gb/s) give the same answer, so one max-flow is
    run per distinct uplink signature, not per leaf.
    """
    gone = set(removed)
    others = [g for g in cls.leaves() if g != leaf]
    if not others:
        return None
    net = updown_network(fabric, cls, gone)
    src = ("u", leaf)
    best: float | None = None
    done: set[tuple[object, ...]] = set()
    for other in others:
        sig = _signature(fabric, cls, other, gone)
        if sig in done:
            continue
        done.add(sig)
        dst = ("d", other)
        reachable = src in net and dst in net
        value = float(nx.maximum_flow_value(net, src, dst)) if reachable else 0.0
        best = value if best is None else min(best, value)
    return best
