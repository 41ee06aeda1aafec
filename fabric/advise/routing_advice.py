"""Adaptive routing and NCCL advice from what the fabric offers and what is known to run on it.

* **Path diversity** between leaves: the number of equal-cost (min-hop) switch paths, parallel
  cables counted (two leaves under the same 4 spines with 2 cables each: 8 paths).
* **What runs**: :mod:`fabric.advise.subnet_manager` says whether AR is on, off, mixed or unknown
  and from which source (ibdiagnet AR_INFO, the OpenSM log, sminfo, opensm.conf).
* **Advice only on evidence.** A setting that would cost bandwidth if the guess were wrong is given
  only when the state it assumes is known: ``NCCL_IB_ADAPTIVE_ROUTING=0`` and more queue pairs only
  when AR is known off; enabling AR only when the SM is known to be NVIDIA's and AR known off; a
  static engine only for upstream OpenSM (3.x, no AR) whose running engine is known; ``NCCL_IB_SL``
  only when the SLs AR runs on are known and exclude NCCL's default SL 0. When something is
  unknown the advice says so, names what waits for it and the commands that would tell.
* **NCCL from the topology alone**: ``NCCL_CROSS_NIC=0`` on strictly rail-optimized fabrics and
  ``NCCL_IB_HCA`` listing the adapters in rail order, when every host names them alike.

What is known of the subnet manager is read by :mod:`fabric.app.advice.subnet` (the tool formats are
:mod:`probes.opensm` and :mod:`topology.ibdiag_state`); this module only reasons over it.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from fabric.advise.actions import Action, ActionKind, routing_action, set_nccl_env
from fabric.advise.candidates import LinkFinding, node_label
from fabric.advise.subnet_manager import (
    Ar,
    ArVerdict,
    SubnetManager,
    Unknown,
    ar_verdict,
    learn_ar,
    learn_engine,
    learn_version,
)
from fabric.health.status import Status
from topology.classify import Classification, Role
from topology.model import Fabric, Guid, NodeKind
from topology.routes import count_paths, switch_multiplicity

# Share of time a port waits to send above which an uplink counts as congested.
CONGESTED_SHARE = 0.05
ROOT_GUID_FILE = "/etc/opensm/root_guids.conf"
# NCCL's service level when NCCL_IB_SL is not set.
NCCL_DEFAULT_SL = 0


# -- what the topology offers ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PathDiversity:
    pairs: int  # ordered leaf pairs
    minimum: int
    median: float
    maximum: int
    single_path_pairs: int
    worst: tuple[tuple[Guid, Guid, int], ...]  # a few pairs with the fewest paths

    def to_dict(self) -> dict[str, object]:
        return {
            "pairs": self.pairs,
            "min": self.minimum,
            "median": self.median,
            "max": self.maximum,
            "single_path_pairs": self.single_path_pairs,
            "worst": [{"a": a, "b": b, "paths": n} for a, b, n in self.worst],
        }


def path_diversity(fabric: Fabric, cls: Classification) -> PathDiversity:
    """Equal-cost paths between every ordered pair of leaves.

    Leaves cabled to the same switches the same number of times see the rest of the fabric alike,
    so one breadth-first count per such uplink set serves them all (one per unit, not per leaf).
    """
    adj = switch_multiplicity(fabric)
    leaves = sorted(cls.leaves())
    by_sig: dict[tuple[tuple[Guid, int], ...], tuple[Guid, dict[Guid, int]]] = {}
    counts: list[tuple[Guid, Guid, int]] = []
    for leaf in leaves:
        sig = tuple(sorted(adj.get(leaf, Counter()).items()))
        if sig not in by_sig:
            by_sig[sig] = (leaf, count_paths(adj, leaf))
        rep, reach = by_sig[sig]
        own: dict[Guid, int] | None = reach if rep == leaf else None
        for other in leaves:
            if other == leaf:
                continue
            if other == rep:
                own = own if own is not None else count_paths(adj, leaf)
                counts.append((leaf, other, own.get(other, 0)))
            else:
                counts.append((leaf, other, reach.get(other, 0)))
    values = [n for _, _, n in counts]
    if not values:
        return PathDiversity(0, 0, 0.0, 0, 0, ())
    worst = tuple(sorted(counts, key=lambda t: (t[2], t[0], t[1]))[:5])
    return PathDiversity(
        len(values),
        min(values),
        float(statistics.median(values)),
        max(values),
        sum(v == 1 for v in values),
        worst,
    )


def root_guids(fabric: Fabric, cls: Classification) -> list[Guid]:
    """The top-tier switches (spines in two tiers, cores in three): OpenSM's root GUID file."""
    tiers = [c.tier for c in cls.nodes.values() if c.role is Role.SWITCH and c.tier is not None]
    if not tiers or max(tiers) < 2:
        return []
    top = max(tiers)
    return sorted(g for g, c in cls.nodes.items() if c.role is Role.SWITCH and c.tier == top)


def is_symmetric_fat_tree(fabric: Fabric, cls: Classification) -> bool:
    """Every switch of a tier has the same number of uplinks (ftree's 'symmetrical' condition)."""
    per_tier: dict[int, set[int]] = defaultdict(set)
    for g, c in cls.nodes.items():
        if (
            c.role is Role.SWITCH
            and c.tier is not None
            and g in cls.uplinks
            and c.tier < max((x.tier or 0) for x in cls.nodes.values())
        ):
            per_tier[c.tier].add(cls.uplinks[g])
    return bool(per_tier) and all(len(v) == 1 for v in per_tier.values())


def rail_adapters(cls: Classification) -> list[str]:
    """The adapter name of each rail in rail order (``mlx5_0``, ``mlx5_3``, ...); empty when any
    host names a rail's adapter differently or not at all (NCCL_IB_HCA would then leave it out)."""
    names: dict[int, set[str | None]] = defaultdict(set)
    for c in cls.nodes.values():
        if c.role is Role.COMPUTE and c.rail is not None:
            names[c.rail].add(c.adapter or None)
    if not names or any(len(v) != 1 or None in v for v in names.values()):
        return []
    return [next(iter(names[r])) or "" for r in sorted(names)]


def strictly_rail_optimized(fabric: Fabric, cls: Classification) -> bool:
    """Rail-optimized and every leaf carries HCAs of one rail only."""
    if not cls.rail_optimized:
        return False
    rails: dict[Guid, set[int]] = defaultdict(set)
    for c in cls.nodes.values():
        if c.role is Role.COMPUTE and c.leaf is not None and c.rail is not None:
            rails[c.leaf].add(c.rail)
    return bool(rails) and all(len(r) == 1 for r in rails.values())


# -- advice ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RoutingAdvice:
    subnet_manager: SubnetManager
    diversity: PathDiversity
    congested_uplinks: int
    faulty_uplinks: int
    actions: tuple[Action, ...]
    summary: str
    ar: ArVerdict
    facts: tuple[str, ...] = ()  # what is known, each with its source
    unknowns: tuple[Unknown, ...] = ()  # what is not, the advice it holds back, how to learn it

    def to_dict(self) -> dict[str, object]:
        return {
            "subnet_manager": self.subnet_manager.to_dict(),
            "adaptive_routing": self.ar.to_dict(),
            "path_diversity": self.diversity.to_dict(),
            "congested_uplinks": self.congested_uplinks,
            "faulty_uplinks": self.faulty_uplinks,
            "summary": self.summary,
            "facts": list(self.facts),
            "unknowns": [u.to_dict() for u in self.unknowns],
            "actions": [a.to_dict() for a in self.actions],
        }


def _uplink_findings(fabric: Fabric, findings: Iterable[LinkFinding]) -> list[LinkFinding]:
    out = []
    for f in findings:
        a, b = fabric.nodes.get(f.a.guid), fabric.nodes.get(f.b.guid)
        if a is not None and b is not None and a.kind is NodeKind.SWITCH and b.kind is NodeKind.SWITCH:
            out.append(f)
    return out


def _sm_facts(fabric: Fabric, cls: Classification, sm: SubnetManager) -> list[str]:
    out = []
    if sm.guid:
        host = fabric.nodes.get(Guid(sm.guid))
        on = f", on {node_label(fabric, cls, host.guid)}" if host is not None else ""
        lid = f" (LID {sm.lid}{on})" if sm.lid else f" ({on[2:]})" if on else ""
        out.append(f"{sm.source_of('master')}: master SM port {sm.guid}{lid}")
    if sm.version:
        out.append(f"{sm.source_of('version')}: OpenSM {sm.version} ({sm.vendor})")
    if not (sm.guid or sm.version or sm.engine or sm.conf):
        out.append("subnet manager: unknown (no sminfo, OpenSM log or opensm.conf was read)")
    return out


def advise_routing(
    fabric: Fabric, cls: Classification, sm: SubnetManager, findings: Iterable[LinkFinding] = ()
) -> RoutingAdvice:
    div = path_diversity(fabric, cls)
    ups = _uplink_findings(fabric, findings)
    congested = sum(1 for f in ups if f.congestion is not None and f.congestion >= CONGESTED_SHARE)
    faulty = sum(1 for f in ups if f.rank >= Status.WARN.rank)
    multipath = div.maximum > 1
    levels = len({c.tier for c in cls.nodes.values() if c.role is Role.SWITCH and c.tier})
    ar = ar_verdict(sm, fabric)
    topo = f"discovery: leaf pairs have {div.minimum}-{div.maximum} equal-cost paths (median {div.median:g})"
    facts = [topo, *_sm_facts(fabric, cls, sm), *ar.how]
    if ups:
        facts.append(f"health: {congested} congested and {faulty} faulty switch-to-switch links")
    if ar.state is Ar.MIXED:
        off = ", ".join(node_label(fabric, cls, g) for g in ar.off[:8]) + (" ..." if len(ar.off) > 8 else "")
        facts.append(f"AR is off on {off}: flows through them are routed statically")
    unknowns: list[Unknown] = []
    actions: list[Action] = []
    roots = root_guids(fabric, cls)
    files = {ROOT_GUID_FILE: "\n".join(roots)} if roots else {}
    evidence = tuple(facts)
    ar_after = ar.state
    if ar.state is Ar.UNKNOWN:
        unknowns.append(
            Unknown(
                "whether the switches route adaptively (AR)",
                "NCCL_IB_ADAPTIVE_ROUTING, NCCL_IB_QPS_PER_CONNECTION, NCCL_IB_SL and any routing-engine change",
                learn_ar(),
            )
        )
    elif ar.state is Ar.OFF and multipath:
        if sm.vendor == "nvidia":
            ar_after = Ar.ON
            actions.append(
                routing_action(
                    ActionKind.ENABLE_AR,
                    "subnet manager",
                    "NVIDIA OpenSM can spread each flow over the equal-cost paths this fabric has; "
                    "static routing pins a pair to one path, so a slow or congested link hurts fixed pairs",
                    {"routing_engine": "ar_updn", "root_guid_file": ROOT_GUID_FILE},
                    (*evidence, "ar_ftree also works on symmetric fat trees (not on XDR)"),
                    files,
                    sm_guid=sm.guid,
                )
            )
        elif sm.vendor == "upstream" and levels >= 2:
            actions += _static_engine(fabric, cls, sm, evidence, files, unknowns)
        elif sm.vendor == "unknown":
            unknowns.append(
                Unknown(
                    "which OpenSM runs (NVIDIA's has AR engines, upstream's has none)",
                    "enabling AR or choosing a static routing engine",
                    learn_version(),
                )
            )
    actions += _nccl_actions(fabric, cls, ar, ar_after, multipath, levels, topo, facts)
    summary = ar.text + (" (enabling it is advised)" if ar_after is not ar.state else "")
    summary += f"; {topo.removeprefix('discovery: ')}"
    return RoutingAdvice(
        sm, div, congested, faulty, tuple(actions), summary, ar, tuple(facts), tuple(unknowns)
    )


def _static_engine(
    fabric: Fabric,
    cls: Classification,
    sm: SubnetManager,
    evidence: tuple[str, ...],
    files: dict[str, str],
    unknowns: list[Unknown],
) -> list[Action]:
    """Upstream OpenSM: the best static engine, when the one running is known to be another."""
    engine = "ftree" if is_symmetric_fat_tree(fabric, cls) else "updn"
    if not sm.engine:
        unknowns.append(
            Unknown("the routing engine the SM runs", f"whether to switch it to {engine}", learn_engine())
        )
        return []
    if sm.engine == engine:
        return []
    why = (
        "a symmetric fat tree: ftree spreads destinations evenly over the uplinks"
        if engine == "ftree"
        else "not a symmetric fat tree: updn is deadlock-free on irregular trees"
    )
    return [
        routing_action(
            ActionKind.SET_ROUTING_ENGINE,
            "subnet manager",
            f"upstream OpenSM has no adaptive routing; the best static engine here is {engine} ({why}), "
            f"not {sm.engine}",
            {"routing_engine": engine, "root_guid_file": ROOT_GUID_FILE},
            evidence,
            files,
            sm_guid=sm.guid,
        )
    ]


def _nccl_actions(
    fabric: Fabric,
    cls: Classification,
    ar: ArVerdict,
    ar_after: Ar,
    multipath: bool,
    levels: int,
    topo: str,
    facts: list[str],
) -> list[Action]:
    out = []
    evidence = ar.how  # NCCL's AR settings rest on what is known of AR, nothing else
    if ar_after is Ar.ON:
        facts.append("NCCL uses AR on IB by default (NCCL_IB_ADAPTIVE_ROUTING=1, 2.16+): leave it unset or 1")
        if ar.state is Ar.ON and ar.sls is not None and NCCL_DEFAULT_SL not in ar.sls:
            if ar.sls:
                out.append(
                    set_nccl_env(
                        "NCCL_IB_SL",
                        str(min(ar.sls)),
                        f"AR runs only on SL {','.join(map(str, ar.sls))}, and NCCL sends on SL "
                        f"{NCCL_DEFAULT_SL} unless told: its traffic would be routed statically",
                        ">= 2.1.4",
                        evidence,
                    )
                )
            else:
                facts.append("the switches running AR have no SL in common: no NCCL_IB_SL reaches AR on all")
    elif ar.state is Ar.OFF:
        out.append(
            set_nccl_env(
                "NCCL_IB_ADAPTIVE_ROUTING",
                "0",
                "the fabric is known to route statically: splitting messages for AR gains nothing",
                ">= 2.16",
                evidence,
            )
        )
        if multipath and levels >= 2:
            out.append(
                set_nccl_env(
                    "NCCL_IB_QPS_PER_CONNECTION",
                    "4",
                    "static routing on a multi-level fabric: more queue pairs per connection give the "
                    "routing more entropy, so one connection uses several paths",
                    ">= 2.10",
                    (topo, *evidence),
                )
            )
    if strictly_rail_optimized(fabric, cls):
        rails = ("discovery: every leaf carries the HCAs of one rail only",)
        out.append(
            set_nccl_env(
                "NCCL_CROSS_NIC",
                "0",
                "strictly rail-optimized: every leaf carries one rail, so traffic that changes rail "
                "crosses the spines; keep each ring on its rail",
                ">= 2.12",
                rails,
            )
        )
        adapters = rail_adapters(cls)
        if adapters:
            out.append(
                set_nccl_env(
                    "NCCL_IB_HCA",
                    "=" + ",".join(f"{a}:1" for a in adapters),
                    "the rail adapters in rail order (rail 0 first), exact names",
                    ">= 2.4",
                    (*rails, "discovery: every host names each rail's adapter alike (node descriptions)"),
                )
            )
        else:
            facts.append("hosts name their rail adapters differently (or not at all): no NCCL_IB_HCA list")
    return out
