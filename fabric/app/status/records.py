"""What ``ibfab status`` returns: one entry per element (a cable, a host, a switch...), each with
the evidence every source gives about it, how sure that is, and the one action ``recommend``
gives for it.

``StatusReport.to_dict()`` is exactly what ``ibfab status --json`` prints. Words for people
(why a confidence, what a missing action means) are built in :mod:`fabric.present.status`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from fabric.advise.actions import Action
from topology.classify import Classification
from topology.model import PortRef
from topology.route_findings import RouteFinding


class EvidenceSource(StrEnum):
    """Where a piece of evidence comes from, in the order the entry lists them."""

    HEALTH = "health"  # counter history: rates over the window (fabric.health)
    READING = "reading"  # one reading's totals: saturated or large (fabric.health.reading)
    SWEEP = "sweep"  # a stored sweep's suspects (probes.localize)
    WIRING = "wiring"  # discovery's anomalies (topology.wiring, hostfaults, addressing)
    PLAN = "plan"  # the fabric against its cable plan (topology.plancheck)
    ROUTES = "routes"  # the stored forwarding tables judged (topology.route_checks)


class Confidence(StrEnum):
    """How sure the evidence is that something is wrong (not how bad it is: that is severity)."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CERTAIN = "certain"

    @property
    def rank(self) -> int:
        return list(Confidence).index(self)

    def raised(self) -> Confidence:
        """One step surer, up to high: agreeing sources never make a guess certain."""
        return list(Confidence)[self.rank + 1] if self.rank < Confidence.HIGH.rank else self


class Basis(StrEnum):
    """What a confidence rests on (fabric.present.status says it in words, with ``count``)."""

    OBSERVED = "observed"  # the fabric itself shows it: cabling, width, tables, plan
    SIGNIFICANT = "significant"  # a statistical test: BER bound above target, a budget exceeded
    COUNTED = "counted"  # link-downs or retrains counted on the cable (count: how many)
    ONE_DOWN = "one_down"  # a single link-down: often maintenance
    NOT_SIGNIFICANT = "not_significant"  # some errors, not yet enough to be sure
    SOLE_CAUSE = "sole_cause"  # every pair crossing it was slow and it alone explains them (count: pairs)
    TIE = "tie"  # the same slow pairs cross other cables too (count: cables in the tie)
    SATURATED = "saturated"  # a counter at its maximum: errors happened, how many and when unknown
    TOTAL = "total"  # a large total since the last clear, over a time not known
    AGREE = "agree"  # several independent sources point at it (count: sources)


SEVERITIES = ("critical", "error", "warning", "info")


def severity_rank(severity: str) -> int:
    """0 for the worst (critical)."""
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


@dataclass(frozen=True, slots=True)
class Element:
    """What is wrong: ``kind`` cable | port | host | machine | switch | nodes | planned_cable |
    routing; ``key`` is stable across runs (GUIDs and ports, host names), ``name`` what an operator
    calls it (a cable with both ends: ``leaf-01:5 <-> spine-02:3``)."""

    kind: str
    key: str
    name: str
    ends: tuple[PortRef, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "name": self.name,
            "ends": [{"guid": e.guid, "port": e.port} for e in self.ends],
        }


@dataclass(frozen=True, slots=True)
class Evidence:
    """One source's word on one element: ``text`` in the source's own words, ``detail`` its
    further lines; ``kind`` the source's name for it (an anomaly kind, a plan verdict...)."""

    source: EvidenceSource
    kind: str
    severity: str
    confidence: Confidence
    basis: Basis
    text: str
    detail: tuple[str, ...] = ()
    count: int = 0  # what the basis counts (pairs, link-downs, cables in a tie)
    # The same facts as recommend's actions quote them (to find the action that rests on them).
    quoted: tuple[str, ...] = field(default=(), compare=False, repr=False)
    route: RouteFinding | None = field(default=None, compare=False, repr=False)  # present words it

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source.value,
            "kind": self.kind,
            "severity": self.severity,
            "confidence": self.confidence.value,
            "basis": self.basis.value,
            "count": self.count,
            "text": self.text,
            "detail": list(self.detail),
            **({"route": self.route.to_dict()} if self.route is not None else {}),
        }


@dataclass(frozen=True, slots=True)
class Entry:
    element: Element
    severity: str  # the worst of its evidence
    confidence: Confidence  # the surest of its evidence, raised one step when sources agree
    basis: Basis
    evidence: tuple[Evidence, ...]
    action: Action | None  # the first action recommend gives for it
    also: tuple[Action, ...] = ()  # recommend's other actions for it, after that one
    notes: tuple[str, ...] = ()  # recommend's notes about it (an isolation held back, a tie)
    # Why there is no action, when there is none: "watch" (not bad enough to act on yet), "tie"
    # (a sweep tie: re-test first), "none" (ibfab has no repair for it).
    no_action: str = ""

    @property
    def sources(self) -> tuple[EvidenceSource, ...]:
        return tuple(dict.fromkeys(e.source for e in self.evidence))

    def to_dict(self) -> dict[str, Any]:
        return {
            "element": self.element.to_dict(),
            "severity": self.severity,
            "confidence": self.confidence.value,
            "basis": self.basis.value,
            "sources": [s.value for s in self.sources],
            "evidence": [e.to_dict() for e in self.evidence],
            "action": self.action.to_dict() if self.action is not None else None,
            "also": [a.to_dict() for a in self.also],
            "notes": list(self.notes),
            "no_action": self.no_action or None,
        }


@dataclass(frozen=True, slots=True)
class SourceState:
    """What one source contributed: ``read`` what it was (a window, a sweep, a plan), or why it
    gave nothing (``missing``: not to be had, with how to get it)."""

    source: EvidenceSource
    read: str = ""
    missing: str = ""
    items: int = 0  # elements it gave evidence on

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source.value, "read": self.read, "missing": self.missing, "items": self.items}


@dataclass(frozen=True)
class StatusReport:
    entries: tuple[Entry, ...]  # worst first
    sources: tuple[SourceState, ...]
    fabric: str  # where the fabric came from (a stored snapshot, a lab, a file)
    names: Mapping[str, str] = field(default_factory=dict, compare=False)  # GUID -> operator's name

    def to_dict(self) -> dict[str, Any]:
        return {
            "fabric": self.fabric,
            "entries": [e.to_dict() for e in self.entries],
            "sources": [s.to_dict() for s in self.sources],
            "summary": {
                "entries": len(self.entries),
                "by_severity": {s: sum(1 for e in self.entries if e.severity == s) for s in SEVERITIES},
            },
        }


def detail_node(cls: Classification, element: Element) -> str | None:
    """The node a UI opens for an element that is no cable: a host's first HCA, a switch, the
    first HCA of a machine or of the nodes an anomaly names, a port's node."""
    if element.kind == "host":
        hcas = cls.hosts.get(element.key, ())
        return str(hcas[0]) if hcas else None
    if element.kind == "switch":
        return element.key
    if element.ends:
        return str(element.ends[0].guid)
    guids = [g for g in element.key.rpartition(":")[2].split(",") if g in cls.nodes]
    return guids[0] if guids else None
