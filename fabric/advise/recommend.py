"""Put the advice together: isolations that pass the safety rules, drains, cable swaps, AR and NCCL.

>>> # recommend(fabric, cls, findings, SafetyPolicy(), SubnetManager())   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fabric.advise.actions import Action, ActionKind, drain_node, isolate_port, replace_cable
from fabric.advise.cabling import LastPeer, cabling_actions
from fabric.advise.candidates import Candidate, LinkFinding, isolation_candidates, node_label
from fabric.advise.counter_repairs import clear_counter_actions
from fabric.advise.plan_repairs import plan_actions
from fabric.advise.repairs import (
    degraded_cable_actions,
    flapping_cable_actions,
    merge_actions,
    miswire_actions,
)
from fabric.advise.routing_advice import RoutingAdvice, advise_routing
from fabric.advise.safety import (
    DesignedUplinks,
    Rule,
    SafetyPolicy,
    SafetyReport,
    Verdict,
    check_isolations,
)
from fabric.advise.subnet_manager import Ar, ArVerdict, SubnetManager
from fabric.advise.sweep_repairs import SweepSuspect, sweep_cable_actions
from fabric.health.reading import ReadingFinding
from fabric.health.score import finding_kind
from fabric.health.thresholds import HealthThresholds
from topology.anomaly import Anomaly
from topology.classify import Classification
from topology.model import Fabric, Guid, NodeKind, PortRef
from topology.plancheck import PlanCheck
from topology.routes import dr_path


@dataclass(frozen=True, slots=True)
class Recommendations:
    actions: tuple[Action, ...]
    safety: SafetyReport
    routing: RoutingAdvice
    findings: int  # links the health input judged
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "actions": [a.to_dict() for a in self.actions],
            "safety": self.safety.to_dict(),
            "routing": self.routing.to_dict(),
            "findings": self.findings,
            "notes": list(self.notes),
        }


def recommend(
    fabric: Fabric,
    cls: Classification,
    findings: Sequence[LinkFinding],
    policy: SafetyPolicy | None = None,
    sm: SubnetManager | None = None,
    *,
    min_status: str = "warn",
    already_isolated: int = 0,
    anomalies: Sequence[Anomaly] = (),
    designed: Mapping[Guid, DesignedUplinks] | None = None,
    thresholds: HealthThresholds | None = None,
    last_peers: Mapping[PortRef, LastPeer] | None = None,
    suspects: Sequence[SweepSuspect] = (),
    readings: Sequence[ReadingFinding] = (),
    plan: PlanCheck | None = None,
) -> Recommendations:
    """Repairs (isolations that pass the safety rules, drains, cable replacements and recabling,
    one action per target) and the routing settings the evidence supports.

    ``anomalies`` are discovery's: each kind gets its repair from them (a cable to replace,
    recable, connect or move; a node description to set, see fabric.advise.cabling);
    ``already_isolated`` and ``designed`` feed the safety rules (see check_isolations);
    ``thresholds`` are the site's health thresholds (a flapping cable is one at their critical
    link-down count), the defaults when None; ``last_peers`` name down ports' far ends from the
    link history (fabric.advise.cabling.LastPeer). The other evidence ``ibfab status`` merges
    gets its repairs too: ``suspects`` (the newest sweep's, fabric.advise.sweep_repairs) a cable
    replacement each, ``readings`` (counters saturated or large on one reading) a clearing of the
    counters, ``plan`` (the fabric checked against its cable plan) the recabling it asks.
    Actions on one target and of one kind become one, their evidence joined."""
    routing = advise_routing(fabric, cls, sm or SubnetManager(), findings)
    ar = routing.ar
    notes: list[str] = []
    cands = []
    for c in isolation_candidates(fabric, cls, findings, min_status):
        held = _slow_only_uplink(fabric, c.finding, c.port, c.far, ar)
        if held is None:
            cands.append(c)
        else:
            notes.append(f"not isolating {_cable(fabric, cls, c)}: {held}")
    report = check_isolations(fabric, cls, cands, policy, already_isolated, designed)
    actions: list[Action] = []
    drains: dict[str, list[Verdict]] = {}
    for v in report.verdicts:
        c = v.candidate
        near_node, far_node = node_label(fabric, cls, c.port.guid), node_label(fabric, cls, c.far.guid)
        target = _cable(fabric, cls, c)
        evidence = c.finding.evidence()
        if c.finding.repeat_offender:
            actions.append(
                replace_cable(
                    target,
                    c.port,
                    c.far,
                    f"repeat offender: findings on {c.finding.repeat_offender_days} days; "
                    "do not return it to service on the same parts",
                    evidence,
                    (f"{near_node} port {c.port.port}", f"{far_node} port {c.far.port}"),
                )
            )
        if v.accepted:
            impact = "; ".join(x.describe() for x in v.costs)
            if _slow_only(c.finding):  # only past _slow_only_uplink where routing is static
                evidence = (
                    *evidence,
                    *ar.how,
                    "static routing: the flows routed over it run at its rate, below its peers'; "
                    "out of service, they move to links at their peers' rate",
                )
            actions.append(
                isolate_port(
                    c.port,
                    fabric.nodes[c.port.guid].lid,
                    target,
                    f"link is {c.finding.status}",
                    evidence,
                    impact,
                    dr_path(fabric, fabric.origin, c.port.guid, frozenset({c.link.key}))
                    if fabric.origin
                    else None,
                )
            )
        elif v.rule is Rule.DISCONNECTS_HCA and v.drain_host:
            if v.drain_host not in drains:
                actions.append(drain_node(v.drain_host, ""))  # its place; filled in below
            drains.setdefault(v.drain_host, []).append(v)
        else:
            notes.append(f"not isolating {target}: {v.reason} [{v.rule.value if v.rule else '?'}]")
    actions = [
        _drain(fabric, cls, a.target, drains[a.target])
        if a.kind is ActionKind.DRAIN_NODE and a.target in drains
        else a
        for a in actions
    ]
    actions += flapping_cable_actions(fabric, cls, findings, thresholds)
    actions += degraded_cable_actions(fabric, cls, anomalies)
    probed, tie_notes = sweep_cable_actions(fabric, cls, suspects)
    actions += probed
    notes += tie_notes
    actions += miswire_actions(fabric, cls, anomalies)
    actions += cabling_actions(fabric, cls, anomalies, last_peers)
    actions += plan_actions(fabric, cls, plan)
    actions += clear_counter_actions(fabric, cls, readings)
    actions = merge_actions(actions)
    actions += routing.actions
    return Recommendations(tuple(actions), report, routing, len(findings), tuple(notes))


def _cable(fabric: Fabric, cls: Classification, c: Candidate) -> str:
    """``leaf-01:5 <-> spine-02:3``: the candidate's port first."""
    near, far = node_label(fabric, cls, c.port.guid), node_label(fabric, cls, c.far.guid)
    return f"{near}:{c.port.port} <-> {far}:{c.far.port}"


def _slow_only(finding: LinkFinding) -> bool:
    """The link's only findings are that it trains below its peers (no errors, no flaps)."""
    kinds = {finding_kind(r) for r in finding.reasons}
    return kinds == {"degraded_link"}


def _slow_only_uplink(
    fabric: Fabric, finding: LinkFinding, port: PortRef, far: PortRef, ar: ArVerdict
) -> str | None:
    """Why a switch-to-switch link that is only slow (no errors) is not isolated, else None.

    Out of service, its traffic moves to its peers: that helps where routing is static (the flows
    routed over it run at its rate) and costs bandwidth where it is adaptive (AR already sends less
    over it, and it still carries its share). So it is isolated only where AR is known off; a
    host's only link is another matter (its drain is advised: no routing helps a slow host)."""
    if not _slow_only(finding) or ar.state is Ar.OFF:
        return None
    if any(fabric.nodes[r.guid].kind is not NodeKind.SWITCH for r in (port, far)):
        return None
    if ar.state is Ar.UNKNOWN:
        return (
            "it only trains below its peers (no errors); isolating it helps only where routing is "
            "static, and whether the switches route adaptively is not known: replace the cable instead"
        )
    return (
        f"it only trains below its peers (no errors) and adaptive routing is {ar.state.value} "
        "(AR sends less over a slower link; isolating it would cut its bandwidth): replace the cable instead"
    )


def _drain(fabric: Fabric, cls: Classification, host: str, verdicts: list[Verdict]) -> Action:
    """One drain for a host however many of its only cables are bad (each HCA's cable named)."""
    worst = max((v.candidate.finding for v in verdicts), key=lambda f: f.rank).status
    cables = [_cable(fabric, cls, v.candidate) for v in verdicts]
    what = "its only cable" if len(cables) == 1 else f"{len(cables)} HCAs' only cables"
    reason = f"{what} to the fabric {'is' if len(cables) == 1 else 'are'} {worst}: {', '.join(cables)}"
    evidence = tuple(
        f"{cable}: " + "; ".join(v.candidate.finding.evidence())
        for cable, v in zip(cables, verdicts, strict=True)
    ) + tuple(dict.fromkeys(v.reason for v in verdicts))
    return drain_node(host, reason, evidence)
