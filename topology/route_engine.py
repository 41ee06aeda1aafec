"""Which routing engine the tables look like, and whether the SM's own word agrees. Pure.

Tables do not carry their engine's name, and on a fat tree minhop, updn, ftree and dfsssp all
route minimal up/down paths, so the look is the set of OpenSM engines whose guarantees the tables
meet: updn, dnup and ftree never turn down then up (:data:`UP_DOWN_ENGINES`); minhop never routes
longer than the cabling's shortest path. An engine is ruled out only by a route that breaks its
rule; nothing is guessed beyond that.

What the SM says comes from its log (the engine that configured the switches last, and any engine
that failed before it in that sweep: ``ucast_mgr_route: torus-2QoS: cannot build fwd tables``) and
opensm.conf's ``routing_engine`` (what it is set to run). A fallback is an engine of the list that
failed; tables that break the rule of the engine the SM says it runs are a mismatch (changed by
hand, another SM, a cache).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from topology.anomaly import Severity
from topology.route_findings import ENGINE_FALLBACK, ENGINE_MISMATCH, RouteFinding
from topology.route_walk import Walk

ENGINES = ("minhop", "updn", "dnup", "ftree", "dfsssp", "sssp", "lash", "dor", "torus-2QoS", "nue", "file")
UP_DOWN_ENGINES = frozenset({"updn", "dnup", "ftree", "ar_updn", "ar_ftree"})
MINIMAL_ENGINES = frozenset({"minhop"})


@dataclass(frozen=True)
class SmRouting:
    """What the SM says about its routing, each with where it was read."""

    engine: str | None = None  # the engine that configured the switches last (its log)
    failed: tuple[str, ...] = ()  # engines that failed before it in that sweep (its log)
    configured: str | None = None  # opensm.conf's routing_engine (a comma list)
    source: str = ""  # the log
    conf_source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "failed": list(self.failed),
            "configured": self.configured,
            "log": self.source or None,
            "conf": self.conf_source or None,
        }


@dataclass(frozen=True)
class EngineLook:
    up_down: bool | None  # no used route turns down then up (None: the tiers are not known)
    minimal: bool  # every used route as short as the cabling allows
    down_up_routes: int
    longer_routes: int
    consistent: tuple[str, ...]  # engines whose rules the tables keep
    sm: SmRouting | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "up_down": self.up_down,
            "minimal": self.minimal,
            "down_up_routes": self.down_up_routes,
            "longer_routes": self.longer_routes,
            "consistent_with": list(self.consistent),
            "sm": self.sm.to_dict() if self.sm else None,
        }


def engine_look(w: Walk, tiers_known: bool, sm: SmRouting | None = None) -> EngineLook:
    down_up = len(w.down_up)
    longer = len(w.longer)
    up_down = (down_up == 0) if tiers_known else None
    out = []
    for e in ENGINES:
        if e in UP_DOWN_ENGINES and up_down is False:
            continue
        if e in MINIMAL_ENGINES and longer:
            continue
        out.append(e)
    return EngineLook(up_down, longer == 0, down_up, longer, tuple(out), sm)


def engine_findings(look: EngineLook) -> list[RouteFinding]:
    sm = look.sm
    if sm is None:
        return []
    found: list[RouteFinding] = []
    first = (sm.configured or "").split(",")[0].strip() or None
    if sm.failed:
        found.append(
            RouteFinding(
                ENGINE_FALLBACK,
                Severity.ERROR,
                detail={"failed": list(sm.failed), "used": sm.engine, "log": sm.source},
            )
        )
    elif first and sm.engine and first not in (sm.engine, "no_fallback"):
        found.append(
            RouteFinding(
                ENGINE_FALLBACK,
                Severity.WARNING,
                detail={
                    "configured": sm.configured,
                    "used": sm.engine,
                    "log": sm.source,
                    "conf": sm.conf_source,
                },
            )
        )
    if sm.engine in UP_DOWN_ENGINES and look.up_down is False:
        found.append(
            RouteFinding(
                ENGINE_MISMATCH,
                Severity.WARNING,
                count=look.down_up_routes,
                detail={
                    "engine": sm.engine,
                    "rule": "up/down",
                    "broken_by": look.down_up_routes,
                    "log": sm.source,
                },
            )
        )
    if sm.engine in MINIMAL_ENGINES and not look.minimal:
        found.append(
            RouteFinding(
                ENGINE_MISMATCH,
                Severity.WARNING,
                count=look.longer_routes,
                detail={
                    "engine": sm.engine,
                    "rule": "minimal hops",
                    "broken_by": look.longer_routes,
                    "log": sm.source,
                },
            )
        )
    return found
