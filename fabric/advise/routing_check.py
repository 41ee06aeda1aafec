"""The verdict on a change checked on the twin: what its re-routing did, judged. Pure.

The twin ran the change through its real OpenSM; :func:`topology.route_delta.route_delta` compared
the routes before and after, and the SM's own log says which engine routed each time. From them:

* **STOP** (exit 8, as the other safety rules): destinations some hosts' routes no longer reach,
  or a credit loop the change opened;
* **CONFIRM** (a warning the operator must accept): the SM's engine fell back to another (ftree
  refusing a fabric that is no longer a pure fat tree hands over to minhop), or the most loaded
  link after carries over 1.5x (and 2 more than) the most loaded before;
* **PASS**: none of these; a change that moves nothing is quiet.

Every issue carries its evidence: the lost destinations with a route hop by hop, the cycle link by
link, the SM's log lines, the channels and their route counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from topology.route_delta import RouteDelta


class RoutingVerdict(StrEnum):
    PASS = "pass"
    CONFIRM = "confirm"
    STOP = "stop"


_RANK = {RoutingVerdict.PASS: 0, RoutingVerdict.CONFIRM: 1, RoutingVerdict.STOP: 2}

UNREACHABLE = "unreachable"
CREDIT_LOOP = "credit_loop"
ENGINE_FALLBACK = "engine_fallback"
LOAD_RISE = "load_rise"


@dataclass(frozen=True)
class SmRouted:
    """What the SM's log says of one routing: the engine that configured the switches, those that
    failed before it, and the log's own lines for both (the evidence)."""

    engine: str | None
    failed: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()
    log: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "failed": list(self.failed),
            "lines": list(self.lines),
            "log": self.log,
        }


@dataclass(frozen=True)
class RoutingIssue:
    kind: str  # UNREACHABLE, CREDIT_LOOP, ENGINE_FALLBACK, LOAD_RISE
    verdict: RoutingVerdict
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "verdict": self.verdict.value, "evidence": dict(self.evidence)}


def worst(issues: tuple[RoutingIssue, ...]) -> RoutingVerdict:
    return max((i.verdict for i in issues), key=_RANK.__getitem__, default=RoutingVerdict.PASS)


def judge_change(delta: RouteDelta, before: SmRouted, after: SmRouted) -> tuple[RoutingIssue, ...]:
    """The issues of one change, STOP first."""
    issues: list[RoutingIssue] = []
    if delta.lost_destinations:
        issues.append(
            RoutingIssue(
                UNREACHABLE,
                RoutingVerdict.STOP,
                {
                    "destinations": delta.lost_destinations,
                    "routes": delta.lost_routes,
                    "lost": [x.to_dict() for x in delta.lost],
                },
            )
        )
    if delta.loop_opened:
        issues.append(RoutingIssue(CREDIT_LOOP, RoutingVerdict.STOP, {"loop": delta.loop_after.to_dict()}))
    fell = after.failed or (
        before.engine is not None and after.engine is not None and after.engine != before.engine
    )
    if fell:
        issues.append(
            RoutingIssue(
                ENGINE_FALLBACK,
                RoutingVerdict.CONFIRM,
                {
                    "engine_before": before.engine,
                    "engine_after": after.engine,
                    "failed": list(after.failed),
                    "log_lines": list(after.lines),
                    "log": after.log,
                },
            )
        )
    if delta.load_rise:
        issues.append(
            RoutingIssue(
                LOAD_RISE,
                RoutingVerdict.CONFIRM,
                {
                    "hottest_before": delta.hottest_before.to_dict() if delta.hottest_before else None,
                    "hottest_after": delta.hottest_after.to_dict() if delta.hottest_after else None,
                },
            )
        )
    return tuple(issues)
