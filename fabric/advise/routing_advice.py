"""Adaptive routing and NCCL advice from what the fabric offers and what the subnet manager runs.

* **Path diversity** between leaves: the number of equal-cost (min-hop) switch paths, parallel
  cables counted (two leaves under the same 4 spines with 2 cables each: 8 paths).
* **Subnet manager**: ``sminfo`` (who is master), the OpenSM log (``OpenSM <version>`` and the
  last ``<engine> tables configured on all switches`` line) and opensm.conf when readable.
  NVIDIA's OpenSM (MLNX/UFM builds) has AR engines ``ar_updn``/``ar_ftree``; upstream OpenSM has
  no adaptive routing at all, so the advice there is the best static engine with a root GUID file.
* **NCCL**: ``NCCL_IB_ADAPTIVE_ROUTING`` (2.16+, default 1 on IB), ``NCCL_IB_SL`` (must be an SL
  that AR is enabled for), ``NCCL_IB_QPS_PER_CONNECTION`` (2.10+; more QPs = more routing entropy
  on static multi-level fabrics), ``NCCL_CROSS_NIC=0`` on strictly rail-optimized fabrics and
  ``NCCL_IB_HCA`` listing the adapters in rail order.

What is known of the subnet manager is read by :mod:`fabric.app.subnet` (the tool formats are
:mod:`probes.opensm`); this module only reasons over the :class:`SubnetManager` it is given.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from fabric.advise.actions import Action, ActionKind, routing_action, set_nccl_env
from fabric.advise.candidates import LinkFinding
from fabric.health.status import Status
from topology.classify import Classification, Role
from topology.model import Fabric, Guid, NodeKind
from topology.routes import count_paths, switch_multiplicity

AR_ENGINES = ("ar_updn", "ar_ftree", "ar_torus", "dfp", "dfp2")
# Share of time a port waits to send above which an uplink counts as congested.
CONGESTED_SHARE = 0.05
ROOT_GUID_FILE = "/etc/opensm/root_guids.conf"


@dataclass(frozen=True, slots=True)
class SubnetManager:
    """What could be learnt about the master SM; every field may be unknown (None)."""

    lid: int | None = None
    guid: str | None = None
    state: str | None = None
    version: str | None = None
    engine: str | None = None  # the engine that last configured the switches
    conf: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def vendor(self) -> str:
        """``nvidia`` (MLNX/UFM OpenSM: has AR), ``upstream`` (linux-rdma: no AR) or ``unknown``."""
        v = (self.version or "").upper()
        if "MLNX" in v or "UFM" in v or (self.engine or "").startswith(AR_ENGINES):
            return "nvidia"
        if self.version and re.match(r"3\.", self.version):
            return "upstream"
        return "unknown"

    @property
    def ar_enabled(self) -> bool:
        return (self.engine or self.conf.get("routing_engine", "")).startswith(AR_ENGINES)

    @property
    def ar_sl(self) -> int | None:
        mask = self.conf.get("ar_sl_mask")
        if not mask:
            return None
        try:
            value = int(mask, 0)
        except ValueError:
            return None
        return (value & -value).bit_length() - 1 if value else None

    def to_dict(self) -> dict[str, object]:
        return {
            "lid": self.lid,
            "guid": self.guid,
            "state": self.state,
            "version": self.version,
            "vendor": self.vendor,
            "engine": self.engine,
            "ar_enabled": self.ar_enabled,
            "conf": dict(self.conf),
            "notes": list(self.notes),
        }


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
    """The adapter name of each rail in rail order (``mlx5_0``, ``mlx5_3``, ...)."""
    names: dict[int, Counter[str]] = defaultdict(Counter)
    for c in cls.nodes.values():
        if c.role is Role.COMPUTE and c.rail is not None and c.adapter:
            names[c.rail][c.adapter] += 1
    return [names[r].most_common(1)[0][0] for r in sorted(names)]


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

    def to_dict(self) -> dict[str, object]:
        return {
            "subnet_manager": self.subnet_manager.to_dict(),
            "path_diversity": self.diversity.to_dict(),
            "congested_uplinks": self.congested_uplinks,
            "faulty_uplinks": self.faulty_uplinks,
            "summary": self.summary,
            "actions": [a.to_dict() for a in self.actions],
        }


def _uplink_findings(fabric: Fabric, findings: Iterable[LinkFinding]) -> list[LinkFinding]:
    out = []
    for f in findings:
        a, b = fabric.nodes.get(f.a.guid), fabric.nodes.get(f.b.guid)
        if a is not None and b is not None and a.kind is NodeKind.SWITCH and b.kind is NodeKind.SWITCH:
            out.append(f)
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
    facts = (
        f"leaf pairs have {div.minimum}-{div.maximum} equal-cost paths (median {div.median:g})",
        f"subnet manager: {sm.version or 'version unknown'}, engine {sm.engine or 'unknown'} ({sm.vendor})",
        f"{congested} congested and {faulty} faulty switch-to-switch links in the health report",
    )
    roots = root_guids(fabric, cls)
    files = {ROOT_GUID_FILE: "\n".join(roots)} if roots else {}
    actions: list[Action] = []
    ar_after = sm.ar_enabled
    if sm.vendor == "nvidia":
        if not sm.ar_enabled and multipath:
            ar_after = True
            actions.append(
                routing_action(
                    ActionKind.ENABLE_AR,
                    "subnet manager",
                    "NVIDIA OpenSM can spread each flow over the equal-cost paths this fabric has; "
                    "static routing pins a pair to one path, so a slow or congested link hurts fixed pairs",
                    {"routing_engine": "ar_updn", "root_guid_file": ROOT_GUID_FILE},
                    (*facts, "ar_ftree also works on symmetric fat trees (not on XDR)"),
                    files,
                )
            )
        elif sm.ar_enabled and not multipath:
            ar_after = False
            actions.append(
                routing_action(
                    ActionKind.DISABLE_AR,
                    "subnet manager",
                    "every leaf pair has a single path: AR has nothing to choose from",
                    {"routing_engine": "updn", "root_guid_file": ROOT_GUID_FILE},
                    facts,
                    files,
                )
            )
    elif levels >= 2:
        engine = "ftree" if is_symmetric_fat_tree(fabric, cls) else "updn"
        if sm.engine != engine:
            why = (
                "a symmetric fat tree: ftree spreads destinations evenly over the uplinks"
                if engine == "ftree"
                else "not a symmetric fat tree: updn is deadlock-free on irregular trees"
            )
            actions.append(
                routing_action(
                    ActionKind.SET_ROUTING_ENGINE,
                    "subnet manager",
                    f"{'upstream OpenSM has no adaptive routing' if sm.vendor == 'upstream' else 'if this is upstream OpenSM, it has no adaptive routing'}; "
                    f"the best static engine here is {engine} ({why})"
                    + (f", not {sm.engine}" if sm.engine else ""),
                    {"routing_engine": engine, "root_guid_file": ROOT_GUID_FILE},
                    facts,
                    files,
                )
            )
    actions += _nccl_actions(fabric, cls, sm, ar_after, multipath, levels, facts)
    summary = (
        f"AR {'on' if ar_after else 'off'}"
        + (" (recommended change)" if ar_after != sm.ar_enabled else "")
        + f"; {facts[0]}"
    )
    return RoutingAdvice(sm, div, congested, faulty, tuple(actions), summary)


def _nccl_actions(
    fabric: Fabric,
    cls: Classification,
    sm: SubnetManager,
    ar: bool,
    multipath: bool,
    levels: int,
    facts: tuple[str, ...],
) -> list[Action]:
    out = []
    if ar:
        out.append(
            set_nccl_env(
                "NCCL_IB_ADAPTIVE_ROUTING",
                "1",
                "the fabric routes adaptively: let NCCL send large messages (> NCCL_IB_AR_THRESHOLD, "
                "8192 B) separately so AR can spread them (the default on IB)",
                ">= 2.16",
                facts,
            )
        )
        sl = sm.ar_sl
        out.append(
            set_nccl_env(
                "NCCL_IB_SL",
                str(sl if sl is not None else 0),
                "NCCL's traffic must use an SL that AR is enabled for"
                + (
                    f" (ar_sl_mask {sm.conf.get('ar_sl_mask')})"
                    if sl is not None
                    else " (check ar_sl_mask; 0 is the default)"
                ),
                ">= 2.1.4",
            )
        )
    else:
        out.append(
            set_nccl_env(
                "NCCL_IB_ADAPTIVE_ROUTING",
                "0",
                "the fabric routes statically: splitting messages for AR gains nothing",
                ">= 2.16",
                facts,
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
                )
            )
    if strictly_rail_optimized(fabric, cls):
        out.append(
            set_nccl_env(
                "NCCL_CROSS_NIC",
                "0",
                "strictly rail-optimized: every leaf carries one rail, so traffic that changes rail "
                "crosses the spines; keep each ring on its rail",
                ">= 2.12",
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
                )
            )
    return out
