"""Put the advice together: isolations that pass the safety rules, drains, cable swaps, AR and NCCL.

>>> # recommend(fabric, cls, findings, SafetyPolicy(), SubnetManager())   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fabric.advise.actions import Action, drain_node, isolate_port, replace_cable
from fabric.advise.candidates import LinkFinding, isolation_candidates, node_label
from fabric.advise.routing_advice import RoutingAdvice, advise_routing
from fabric.advise.safety import Rule, SafetyPolicy, SafetyReport, check_isolations
from fabric.advise.subnet_manager import SubnetManager
from topology.classify import Classification
from topology.model import Fabric
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
) -> Recommendations:
    cands = isolation_candidates(fabric, cls, findings, min_status)
    report = check_isolations(fabric, cls, cands, policy, already_isolated)
    actions: list[Action] = []
    notes: list[str] = []
    for v in report.verdicts:
        c = v.candidate
        name = f"{node_label(fabric, cls, c.port.guid)}:{c.port.port}"
        far = f"{node_label(fabric, cls, c.far.guid)}:{c.far.port}"
        target = f"{name} <-> {far}"
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
                )
            )
        if v.accepted:
            impact = "; ".join(x.describe() for x in v.costs)
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
            actions.append(drain_node(v.drain_host, f"{target} is {c.finding.status}; {v.reason}", evidence))
        else:
            notes.append(f"not isolating {target}: {v.reason} [{v.rule.value if v.rule else '?'}]")
    routing = advise_routing(fabric, cls, sm or SubnetManager(), findings)
    actions += routing.actions
    return Recommendations(tuple(actions), report, routing, len(findings), tuple(notes))
