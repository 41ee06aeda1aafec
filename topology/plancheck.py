"""Does the fabric match the cable plan? Miswired, missing, not in the plan, slower than planned.

Every planned cable is looked up in the fabric by its two ends (``topology.plannames``):

* **matched**: the fabric has exactly that cable; it is then checked against the plan's speed
  (width, lane speed, total rate; a cable whose width or speed the tool could not read is
  counted as *rate unknown*, never as slow);
* **miswired**: an end is cabled to something else on a device the plan names (a host, a
  switch, a director: :meth:`FabricNames.device_of`). Planned cables and the fabric's cables
  that touch them are grouped, so two swapped cables are one item: expected A-B and C-D, actual
  A-D and C-B, both ends of each;
* **missing**: neither end is cabled to a planned device (or the device is not in the fabric);
* **not in the plan**: a fabric cable on a planned device that no planned cable is, of a kind
  the plan covers (switch-to-switch, or host cables when the plan has any): a cable to a device
  the plan never names counts here even in a planned port, as UFM's NDT comparison has it (its
  evidence names the planned cable whose port it holds). Cables of a kind the plan does not
  cover are counted as *not covered*; a director's backplane and links to SHARP aggregation
  nodes are not cables and are left out;
* **unchecked**: the plan cables a port to two peers, or an end cannot be pinned to one port
  (a name shared by several nodes): said, never guessed.

A planned device none of whose ports is in the fabric is an *absent device*; a planned port of a
device that is there (a host without one adapter, a director without one line board) is an
*absent port*, never an absent device.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from topology.cableplan import CablePlan, PlanEnd, PlannedCable, PlannedRate
from topology.model import SPEED_RANK, Fabric, Link, NodeKind, PortRef
from topology.nameformats import UnfitName
from topology.plannames import FabricNames, Found, Resolution


class Verdict(StrEnum):
    MISWIRED = "miswired"
    MISSING = "missing"
    NOT_IN_PLAN = "not_in_plan"
    BELOW_PLAN = "below_plan"
    UNCHECKED = "unchecked"


@dataclass(frozen=True, slots=True)
class AbsentPort:
    """A planned port of a device the fabric has, which the fabric lacks (an adapter, a board)."""

    end: str  # as the plan names it: node0042/ibp203s0f1
    reason: str  # host node0042 has no ibp203s0f1 in the fabric


@dataclass(frozen=True, slots=True)
class PlanFinding:
    verdict: Verdict
    expected: tuple[PlannedCable, ...]  # planned cables this is about
    actual: tuple[Link, ...]  # the fabric's cables this is about
    evidence: tuple[str, ...]  # one sentence per fact, naming both ends
    message: str


@dataclass(frozen=True)
class PlanCheck:
    findings: tuple[PlanFinding, ...]  # differences from the plan
    unchecked: tuple[PlanFinding, ...]  # planned cables that could not be checked
    planned: int
    matched: int
    rate_unknown: int  # matched cables whose width or speed the fabric did not report
    not_covered: int  # fabric cables of a kind no planned cable covers
    internal: int  # director backplane and aggregation-node links (never in a plan)
    sources: tuple[str, ...] = ()
    absent_devices: tuple[str, ...] = field(default=())  # planned devices no port of which is here
    absent_ports: tuple[AbsentPort, ...] = field(default=())  # ports of devices that are here

    @property
    def differs(self) -> bool:
        return bool(self.findings)

    def count(self, verdict: Verdict) -> int:
        return sum(1 for f in (*self.findings, *self.unchecked) if f.verdict is verdict)


def rate_shortfall(rate: PlannedRate | None, link: Link) -> str | None:
    """Why ``link`` runs below ``rate`` (None when it does not, or when its rate is unknown)."""
    if rate is None or link.width == 0 or link.speed not in SPEED_RANK:
        return None
    why = []
    if rate.width is not None and link.width < rate.width:
        why.append(f"{link.width} lane{'s' if link.width > 1 else ''} instead of {rate.width}")
    if rate.speed is not None and SPEED_RANK[link.speed] < SPEED_RANK[rate.speed]:
        why.append(f"{link.speed} instead of {rate.speed}")
    if rate.gbps is not None and link.gbps + 1e-6 < rate.gbps:
        why.append(f"{link.gbps:g} Gb/s instead of {rate.gbps:g}")
    return ", ".join(why) or None


def check_plan(plan: CablePlan, fabric: Fabric) -> PlanCheck:
    """Compare ``plan`` with ``fabric``; pure, deterministic (findings in plan order)."""
    return _Check(plan, fabric).run()


class _Check:
    def __init__(self, plan: CablePlan, fabric: Fabric) -> None:
        self.plan, self.fabric = plan, fabric
        self.names = FabricNames(fabric)
        self.port_link: dict[PortRef, Link] = {}
        for lk in fabric.links:
            self.port_link[lk.a] = lk
            self.port_link[lk.b] = lk
        self.spelled: dict[PortRef, str] = {}
        self.planned_devices: set[str] = set()  # FabricNames.device_of of every device the plan names

    def name(self, ref: PortRef) -> str:
        s = self.spelled.get(ref)
        if s is None:
            s = self.spelled[ref] = str(self.names.spell(ref))
        return s

    def link_text(self, lk: Link) -> str:
        return f"{self.name(lk.a)} <-> {self.name(lk.b)} ({lk.width}x{lk.speed})"

    def run(self) -> PlanCheck:
        in_conflict = {id(c): conf for conf in self.plan.conflicts for c in conf.cables}
        claimed: dict[PortRef, PlannedCable] = {}
        resolved: list[tuple[PlannedCable, Resolution, Resolution]] = []
        unchecked: list[PlanFinding] = []
        absent: dict[str, None] = {}
        absent_ports: dict[str, str] = {}
        for cable in self.plan.cables:
            ra, rb = self.names.resolve(cable.start), self.names.resolve(cable.end)
            self.planned_devices.update(r.device for r in (ra, rb) if r.device is not None)
            refs = [r.ref for r in (ra, rb) if r.ref is not None]
            clash = next((claimed[r] for r in refs if r in claimed), None)
            for r in refs:
                claimed.setdefault(r, cable)
            reasons = [
                f"{e}: {r.reason}"
                for e, r in ((cable.start, ra), (cable.end, rb))
                if r.status is Found.UNCLEAR
            ]
            if id(cable) in in_conflict:
                reasons.append(str(in_conflict[id(cable)]))
            if clash is not None:
                reasons.append(f"{cable.where} and {clash.where} name the same port of the fabric")
            if reasons:
                unchecked.append(
                    PlanFinding(
                        Verdict.UNCHECKED,
                        (cable,),
                        tuple(self.port_link[r] for r in refs if r in self.port_link),
                        tuple(reasons),
                        f"cannot check {cable} ({cable.where}): {reasons[0]}",
                    )
                )
                continue
            for e, res in ((cable.start, ra), (cable.end, rb)):
                if res.status is Found.ABSENT:
                    absent.setdefault(e.device)
                elif res.status is Found.PORT_ABSENT:
                    absent_ports.setdefault(str(e), res.reason)
            resolved.append((cable, ra, rb))

        findings: list[PlanFinding] = []
        matched = rate_unknown = 0
        mismatched: list[tuple[PlannedCable, Resolution, Resolution]] = []
        used: set[Link] = set()
        for cable, ra, rb in resolved:
            lk = self.port_link.get(ra.ref) if ra.ref is not None else None
            if lk is not None and rb.ref is not None and {lk.a, lk.b} == {ra.ref, rb.ref}:
                matched += 1
                used.add(lk)
                if cable.rate is not None and (lk.width == 0 or lk.speed not in SPEED_RANK):
                    rate_unknown += 1
                why = rate_shortfall(cable.rate, lk)
                if why is not None:
                    findings.append(self._below(cable, lk, why))
            else:
                mismatched.append((cable, ra, rb))
        findings += self._mismatches(mismatched, used)
        for conf_finding in unchecked:
            used.update(conf_finding.actual)
        not_in_plan, not_covered, internal = self._unplanned(resolved, used, claimed)
        findings += not_in_plan
        return PlanCheck(
            tuple(findings),
            tuple(unchecked),
            len(self.plan.cables),
            matched,
            rate_unknown,
            not_covered,
            internal,
            self.plan.sources,
            tuple(absent),
            tuple(AbsentPort(end, why) for end, why in absent_ports.items()),
        )

    def _below(self, cable: PlannedCable, lk: Link, why: str) -> PlanFinding:
        return PlanFinding(
            Verdict.BELOW_PLAN,
            (cable,),
            (lk,),
            (
                f"plan {cable.where}: {cable} at {cable.rate}",
                f"fabric: {self.link_text(lk)}",
            ),
            f"{cable} runs below the plan: {why} ({cable.where} asks {cable.rate})",
        )

    def _mismatches(
        self, mismatched: list[tuple[PlannedCable, Resolution, Resolution]], used: set[Link]
    ) -> list[PlanFinding]:
        # Group planned cables that share a fabric cable at their ends (a swap is one item).
        parent = list(range(len(mismatched)))

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        owner: dict[Link, int] = {}
        for i, (_, ra, rb) in enumerate(mismatched):
            for r in (ra, rb):
                lk = self.port_link.get(r.ref) if r.ref is not None else None
                if lk is None or not self._between_planned(lk):
                    continue
                if lk in owner:
                    parent[root(i)] = root(owner[lk])
                else:
                    owner[lk] = i
        groups: dict[int, list[int]] = {}
        for i in range(len(mismatched)):
            groups.setdefault(root(i), []).append(i)
        out = []
        for members in groups.values():
            cables = [mismatched[i] for i in members]
            links = sorted({lk for lk, i in owner.items() if root(i) == root(members[0])})
            used.update(links)
            out.append(self._miswired(cables, links) if links else self._missing(cables[0]))
        return out

    def _between_planned(self, lk: Link) -> bool:
        """Whether both ends of a fabric cable are on devices the plan names: only such a cable
        can be a planned cable put in the wrong place (as UFM's NDT comparison has it); a cable to
        a device the plan never names is not in the plan, and the planned cable whose port it
        took is missing (or miswired by its other end)."""
        return all(self.names.device_of(ref.guid) in self.planned_devices for ref in (lk.a, lk.b))

    def _end_fact(self, end: PlanEnd, r: Resolution) -> str:
        if r.ref is None:
            return f"{end}: {r.reason}"
        lk = self.port_link.get(r.ref)
        if lk is None:
            return f"{end}: not cabled"
        return f"{end}: cabled to {self.name(lk.other(r.ref.guid) if lk.a != lk.b else lk.b)}"

    def _missing(self, item: tuple[PlannedCable, Resolution, Resolution]) -> PlanFinding:
        cable, ra, rb = item
        facts = (self._end_fact(cable.start, ra), self._end_fact(cable.end, rb))
        return PlanFinding(
            Verdict.MISSING,
            (cable,),
            (),
            (f"plan {cable.where}: {cable}", *facts),
            f"{cable} is missing ({'; '.join(facts)})",
        )

    def _miswired(
        self, items: list[tuple[PlannedCable, Resolution, Resolution]], links: list[Link]
    ) -> PlanFinding:
        evidence: list[str] = []
        for cable, ra, rb in items:
            evidence.append(f"plan {cable.where}: {cable}")
            evidence += [self._end_fact(cable.start, ra), self._end_fact(cable.end, rb)]
        evidence += [f"fabric: {self.link_text(lk)}" for lk in links]
        expected = "; ".join(str(c) for c, _, _ in items)
        actual = "; ".join(f"{self.name(lk.a)} <-> {self.name(lk.b)}" for lk in links)
        return PlanFinding(
            Verdict.MISWIRED,
            tuple(c for c, _, _ in items),
            tuple(links),
            tuple(evidence),
            f"miswired: expected {expected}; actual {actual}",
        )

    def _unplanned(
        self,
        resolved: Iterable[tuple[PlannedCable, Resolution, Resolution]],
        used: set[Link],
        claimed: dict[PortRef, PlannedCable],
    ) -> tuple[list[PlanFinding], int, int]:
        covered = {self._kind(r.ref for r in rs if r.ref is not None) for _, *rs in resolved}
        out: list[PlanFinding] = []
        not_covered = internal = 0
        for lk in self.fabric.links:
            if lk in used:
                continue
            if self.names.internal(lk.a, lk.b) is not None:
                internal += 1
                continue
            planned = {
                self.names.device_of(lk.a.guid),
                self.names.device_of(lk.b.guid),
            } & self.planned_devices
            if self._kind((lk.a, lk.b)) not in covered or not planned:
                not_covered += 1
                continue
            # A port a planned cable names may hold a cable to a device the plan never names.
            taken = [
                f"{self.name(r)} is planned for {claimed[r]} ({claimed[r].where})"
                for r in (lk.a, lk.b)
                if r in claimed
            ]
            out.append(
                PlanFinding(
                    Verdict.NOT_IN_PLAN,
                    (),
                    (lk,),
                    (f"fabric: {self.link_text(lk)}", *(taken or ["no planned cable uses either port"])),
                    f"{self.name(lk.a)} <-> {self.name(lk.b)} is cabled but not in the plan",
                )
            )
        return out, not_covered, internal

    def _kind(self, refs: Iterable[PortRef]) -> str:
        kinds = {self.fabric.nodes[r.guid].kind for r in refs if r.guid in self.fabric.nodes}
        return "switch-switch" if kinds == {NodeKind.SWITCH} else "host"


# -- the JSON form ---------------------------------------------------------------------------------
def _cable_dict(c: PlannedCable) -> dict[str, Any]:
    return {
        "start": {"device": c.start.device, "port": str(c.start.port)},
        "end": {"device": c.end.device, "port": str(c.end.port)},
        "speed": str(c.rate) if c.rate is not None else None,
        "length": c.length or None,
        "source": c.source,
        "line": c.line,
    }


def check_to_dict(check: PlanCheck, fabric: Fabric) -> dict[str, Any]:
    names = FabricNames(fabric)

    def link(lk: Link) -> dict[str, Any]:
        return {
            "a": {"guid": lk.a.guid, "port": lk.a.port, "name": str(names.spell(lk.a))},
            "b": {"guid": lk.b.guid, "port": lk.b.port, "name": str(names.spell(lk.b))},
            "width": lk.width,
            "speed": lk.speed,
        }

    def finding(f: PlanFinding) -> dict[str, Any]:
        return {
            "verdict": f.verdict.value,
            "message": f.message,
            "expected": [_cable_dict(c) for c in f.expected],
            "actual": [link(lk) for lk in f.actual],
            "evidence": list(f.evidence),
        }

    return {
        "plans": list(check.sources),
        "summary": {
            "differs": check.differs,
            "planned": check.planned,
            "matched": check.matched,
            **{v.value: check.count(v) for v in Verdict},
            "rate_unknown": check.rate_unknown,
            "not_covered": check.not_covered,
            "internal": check.internal,
            "absent_devices": list(check.absent_devices),
            "absent_ports": [{"end": a.end, "reason": a.reason} for a in check.absent_ports],
        },
        "findings": [finding(f) for f in check.findings],
        "unchecked": [finding(f) for f in check.unchecked],
    }


def plan_rows(fabric: Fabric) -> list[tuple[PlanEnd, PlanEnd, str]]:
    """Today's cables as plan rows (start, end, ``4xHDR``), for :func:`format_cable_plan`: every
    cable but a director's backplane and aggregation-node links, in the fabric's cable order."""
    return checked_plan_rows(fabric)[0]


def checked_plan_rows(
    fabric: Fabric,
) -> tuple[list[tuple[PlanEnd, PlanEnd, str]], tuple[UnfitName, ...]]:
    """:func:`plan_rows`, and the names a plan cell could not carry (those nodes are named by
    GUID in the rows)."""
    names = FabricNames(fabric)
    rows = []
    for lk in fabric.links:
        if lk.a == lk.b or names.internal(lk.a, lk.b) is not None:
            continue
        speed = f"{lk.width}x{lk.speed}" if lk.width and lk.speed in SPEED_RANK else ""
        rows.append((names.spell(lk.a), names.spell(lk.b), speed))
    return rows, tuple(names.unfit.values())
