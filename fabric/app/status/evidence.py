"""Each source's findings as (element, evidence) pairs: the words are the source's own, the
element what they are about, the confidence what they rest on.

Elements are named as ``recommend`` names its targets (a cable switch end first, the lower tier),
so an entry and its action read alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from fabric.advise.candidates import LinkFinding, link_at, node_label
from fabric.advise.repairs import cable_target
from fabric.advise.sweep_repairs import SweepSuspect
from fabric.app.status.records import Basis, Confidence, Element, Evidence, EvidenceSource
from fabric.health import LinkHealth
from fabric.health.reading import ReadingFinding
from fabric.health.score import finding_kind
from fabric.health.thresholds import HealthThresholds
from topology.anomaly import Anomaly
from topology.classify import Classification
from topology.model import Fabric, Guid, Link, PortRef
from topology.plancheck import PlanCheck, PlanFinding, Verdict
from topology.route_findings import CROSSES_FLAGGED, RouteFinding
from topology.unnamed import likely_machines

Found = tuple[Element, Evidence]
_HEALTH_SEVERITY = {"critical": "critical", "warn": "error", "watch": "warning"}
# Host-level anomalies: about a host's HCAs, the host is what is wrong.
_HOST_KINDS = ("rail_miswire", "single_leaf_host", "missing_hca")


class Elements:
    """Names and keys of the fabric's elements, as recommend names its targets."""

    def __init__(self, fabric: Fabric, cls: Classification) -> None:
        self.fabric, self.cls = fabric, cls
        self.by_key = {lk.key: lk for lk in fabric.links}

    def name(self, guid: Guid) -> str:
        return node_label(self.fabric, self.cls, guid) if guid in self.fabric.nodes else str(guid)

    def cable(self, lk: Link) -> Element:
        known = lk.a.guid in self.fabric.nodes and lk.b.guid in self.fabric.nodes
        name = (
            cable_target(self.fabric, self.cls, self.by_key.get(lk.key, lk))
            if known
            else f"{self.name(lk.a.guid)}:{lk.a.port} <-> {self.name(lk.b.guid)}:{lk.b.port}"
        )
        return Element("cable", _link_key(lk.key), name, (lk.a, lk.b))

    def cable_of(self, key: tuple[tuple[str, int], tuple[str, int]]) -> Element:
        lk = self.by_key.get(key)
        if lk is None:
            (ag, ap), (bg, bp) = key
            lk = Link(PortRef(Guid(ag), ap), PortRef(Guid(bg), bp), 0, "")
        return self.cable(lk)

    def port(self, ref: PortRef) -> Element:
        lk = link_at(self.fabric, ref) if ref.guid in self.fabric.nodes else None
        if lk is not None:
            return self.cable(lk)
        return Element("port", f"{ref.guid}/{ref.port}", f"{self.name(ref.guid)}:{ref.port}", (ref,))

    def host(self, host: str) -> Element:
        return Element("host", host, host)

    def switch(self, guid: Guid) -> Element:
        return Element("switch", str(guid), self.name(guid))

    def host_of(self, guids: Iterable[Guid]) -> str | None:
        hosts = {c.host for g in guids if (c := self.cls.nodes.get(g)) is not None and c.host}
        return hosts.pop() if len(hosts) == 1 else None


def _link_key(key: tuple[tuple[str, int], tuple[str, int]]) -> str:
    (ag, ap), (bg, bp) = key
    return f"{ag}/{ap}-{bg}/{bp}"


# -- health: counter history -----------------------------------------------------------------------
def health_evidence(
    el: Elements, links: Iterable[LinkHealth], thresholds: HealthThresholds | None = None
) -> Iterator[Found]:
    """Every link not ok: its status and reasons; sure when a test or a count says so."""
    t = thresholds or HealthThresholds()
    for lk in links:
        if lk.status.value == "ok" or not lk.reasons:
            continue
        kinds = [finding_kind(r) for r in lk.reasons]
        basis, confidence, count = _health_basis(lk, kinds, t)
        finding = LinkFinding(
            lk.a,
            lk.b,
            lk.status.value,
            lk.reasons,
            lk.ber.value,
            lk.flaps_per_hour,
            lk.repeat_days,
            lk.score,
            lk.congestion,
            lk.repeat_offender,
            lk.downs,
        )
        yield (
            el.cable_of(lk.key),
            Evidence(
                EvidenceSource.HEALTH,
                kinds[0],
                _HEALTH_SEVERITY[lk.status.value],
                confidence,
                basis,
                f"{lk.status.value} (score {lk.score}): {lk.reasons[0]}",
                tuple(lk.reasons[1:]),
                count,
                finding.evidence(),
            ),
        )


def _health_basis(lk: LinkHealth, kinds: Sequence[str], t: HealthThresholds) -> tuple[Basis, Confidence, int]:
    first = kinds[0]
    if first == "degraded_link" or lk.reasons[0].startswith("link is down"):
        return Basis.OBSERVED, Confidence.CERTAIN, 0
    if first == "ber" and (
        lk.reasons[0].startswith("symbol errors:")
        or (lk.ber.lower is not None and lk.ber.lower > lk.ber.target)
    ):
        return Basis.SIGNIFICANT, Confidence.HIGH, lk.ber.errors
    if first == "flapping" and lk.downs:
        if lk.downs >= t.flap_critical:
            return Basis.COUNTED, Confidence.HIGH, lk.downs
        return Basis.ONE_DOWN, Confidence.MEDIUM, lk.downs
    if first == "flapping" and lk.recoveries >= t.recovery_warn:
        return Basis.COUNTED, Confidence.HIGH, lk.recoveries
    return Basis.NOT_SIGNIFICANT, Confidence.LOW if lk.status.value == "watch" else Confidence.MEDIUM, 0


# -- one reading ------------------------------------------------------------------------------------
def reading_evidence(el: Elements, readings: Iterable[ReadingFinding]) -> Iterator[Found]:
    for f in readings:
        reasons = f.reasons()
        yield (
            el.cable_of(f.key),
            Evidence(
                EvidenceSource.READING,
                "saturated" if f.saturated else "large_total",
                "warning",
                Confidence.MEDIUM if f.saturated else Confidence.LOW,
                Basis.SATURATED if f.saturated else Basis.TOTAL,
                reasons[0],
                reasons[1:],
                0,
                tuple(f"counters: {r}" for r in reasons),
            ),
        )


# -- sweeps -----------------------------------------------------------------------------------------
def sweep_evidence(el: Elements, suspects: Iterable[SweepSuspect]) -> Iterator[Found]:
    for s in suspects:
        tie = bool(s.tied_with)
        detail = (
            (
                "tied with "
                + ", ".join(el.cable(t).name for t in s.tied_with)
                + ": the same slow pairs cross them",
            )
            if tie
            else ()
        )
        if tie:
            basis, confidence, count = Basis.TIE, Confidence.LOW, len(s.tied_with) + 1
        else:
            basis, count = Basis.SOLE_CAUSE, s.slow_pairs
            confidence = Confidence.HIGH if s.slow_pairs >= 2 else Confidence.MEDIUM
        yield (
            el.cable(s.link),
            Evidence(
                EvidenceSource.SWEEP,
                "suspect",
                "warning" if tie else "error",
                confidence,
                basis,
                s.evidence(),
                detail,
                count,
                (s.evidence(),),
            ),
        )


# -- wiring: discovery's anomalies ------------------------------------------------------------------
def wiring_evidence(el: Elements, anomalies: Sequence[Anomaly]) -> Iterator[Found]:
    """Each anomaly on what it is about (:func:`wiring_elements`), in discovery's own words."""
    for an, element in zip(anomalies, wiring_elements(el, anomalies), strict=True):
        yield (
            element,
            Evidence(
                EvidenceSource.WIRING,
                an.kind,
                an.severity.value,
                Confidence.CERTAIN,
                Basis.OBSERVED,
                an.message,
                (),
                0,
                (f"discovery: {an.message}",),
            ),
        )


def wiring_elements(el: Elements, anomalies: Sequence[Anomaly]) -> list[Element]:
    """What each anomaly is about: a cable (degraded), a host (miswired, short of an HCA or a rail),
    a switch (short of or uneven uplinks; a down port among a missing uplink's ports is that
    switch's), a machine (unnamed HCAs, one anomaly per machine), else the nodes it names."""
    missing_at = {
        p: an.nodes[0] for an in anomalies if an.kind == "missing_link" and an.nodes for p in an.ports
    }
    machines = likely_machines(el.fabric, el.cls) if any(a.kind == "unnamed_hca" for a in anomalies) else {}
    return [_wiring_element(el, an, missing_at, machines) for an in anomalies]


def _wiring_element(
    el: Elements, an: Anomaly, missing_at: Mapping[PortRef, Guid], machines: Mapping[Guid, object]
) -> Element:
    if an.kind == "degraded_link" and len(an.ports) == 2:
        return el.port(an.ports[0])
    if an.kind in _HOST_KINDS or (an.kind == "missing_link" and el.host_of(an.nodes)):
        host = el.host_of(an.nodes)
        if host is not None:
            return el.host(host)
    if an.kind == "down_port" and an.ports:
        low = missing_at.get(an.ports[0])
        return el.switch(low) if low is not None else el.port(an.ports[0])
    if an.kind in ("missing_link", "uplink_imbalance") and an.nodes:
        return el.switch(an.nodes[0])
    if an.kind == "unnamed_hca" and an.nodes:
        likely = machines.get(an.nodes[0])
        name = getattr(likely, "machine", None) or (
            f"HCA {an.nodes[0]}" if len(an.nodes) == 1 else f"{len(an.nodes)} unnamed HCAs"
        )
        return Element("machine", ",".join(sorted(an.nodes)), name)
    names = [el.name(g) for g in an.nodes] or [f"{el.name(p.guid)}:{p.port}" for p in an.ports]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return Element("nodes", f"{an.kind}:{','.join(sorted(an.nodes))}", shown or an.kind)


# -- the cable plan ---------------------------------------------------------------------------------
_PLAN_SEVERITY = {
    Verdict.MISWIRED: "error",
    Verdict.MISSING: "error",
    Verdict.BELOW_PLAN: "warning",
    Verdict.NOT_IN_PLAN: "info",
}


def plan_evidence(el: Elements, check: PlanCheck | None) -> Iterator[Found]:
    if check is None:
        return
    for f in check.findings:
        if f.verdict not in _PLAN_SEVERITY:
            continue
        yield (
            _plan_element(el, f),
            Evidence(
                EvidenceSource.PLAN,
                f.verdict.value,
                _PLAN_SEVERITY[f.verdict],
                Confidence.CERTAIN,
                Basis.OBSERVED,
                f.message,
                f.evidence,
                0,
                tuple(f"plan: {e}" for e in f.evidence),
            ),
        )


def _plan_element(el: Elements, f: PlanFinding) -> Element:
    if f.verdict is Verdict.MISWIRED and f.actual:
        # A host recabled among its own ports is the host's fault (discovery's rail miswire too).
        host = el.host_of(
            e.guid for lk in f.actual for e in (lk.a, lk.b) if (c := el.cls.nodes.get(e.guid)) and c.host
        )
        if host is not None:
            return el.host(host)
        first = el.cable(f.actual[0])
        if len(f.actual) == 1:
            return first
        return Element(
            "cables",
            ";".join(el.cable(lk).key for lk in f.actual),
            "; ".join(el.cable(lk).name for lk in f.actual),
            tuple(e for lk in f.actual for e in (lk.a, lk.b)),
        )
    if f.actual:
        return el.cable(f.actual[0])
    cable = f.expected[0]
    # A missing cable is its host's (a host short of a cable) or its lower switch's (a switch short
    # of an uplink), as discovery reports them, where the plan names them as the fabric does.
    devices = [e.device.casefold() for e in (cable.start, cable.end)]
    host = next((h for h in el.cls.hosts if h.casefold() in devices), None)
    if host is not None:
        return el.host(host)
    switches = [
        g for g, c in el.cls.nodes.items() if c.role.value == "switch" and c.name.casefold() in devices
    ]
    if switches:
        return el.switch(min(switches, key=lambda g: (el.cls.nodes[g].tier or 99, g)))
    return Element("planned_cable", str(cable), f"{cable} (planned)")


# -- routes -----------------------------------------------------------------------------------------
def route_evidence(el: Elements, findings: Iterable[RouteFinding]) -> Iterator[Found]:
    """Route findings of warning or worse on the switch (or cable) they name; a route over a cable
    health flags is health's finding already, not listed again."""
    for f in findings:
        if f.kind == CROSSES_FLAGGED or f.severity.value not in ("critical", "error", "warning"):
            continue
        if f.switch is not None and f.port is not None:
            element = el.port(PortRef(f.switch, f.port))
        elif f.switch is not None:
            element = el.switch(f.switch)
        else:
            element = Element("routing", f.kind, "routing")
        yield (
            element,
            Evidence(
                EvidenceSource.ROUTES,
                f.kind,
                f.severity.value,
                Confidence.CERTAIN,
                Basis.OBSERVED,
                f.kind,  # the words are fabric.present.routes' (from ``route``)
                (),
                f.count,
                route=f,
            ),
        )
