"""From health findings to isolation candidates, and from operator text to ports and links.

The health model (:mod:`fabric.health`) judges links; this module reads its verdicts as small
:class:`LinkFinding` records (from a live :class:`~fabric.health.HealthReport` or from a saved
``ibfab health --json`` file) and turns the bad ones into :class:`Candidate` s: the cable, the
port to disable on it (the switch end, the lower tier of two switches) and the evidence.

>>> LinkFinding(PortRef(Guid("0x2"), 1), PortRef(Guid("0x1"), 3), "warn", ("BER 3e-12",)).a
PortRef(guid='0x1', port=3)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabric.health.status import is_status, status_rank
from topology.classify import Classification
from topology.errors import ParseError, UsageError
from topology.model import Fabric, Guid, Link, NodeKind, PortRef, normalise_guid, order_ends
from topology.textfile import MAX_INPUT_BYTES, read_input_text

# Days with a finding within the health lookback that make a link a repeat offender when the
# report does not say so itself (NVIDIA's PDR advice: do not re-admit after the 2nd/3rd time).
REPEAT_OFFENDER_DAYS = 3


@dataclass(frozen=True, slots=True)
class LinkFinding:
    """What the health model says about one cable (``a`` the lower end, as in the model)."""

    a: PortRef
    b: PortRef
    status: str  # ok | watch | warn | critical
    reasons: tuple[str, ...] = ()
    ber: float | None = None
    flaps_per_hour: float | None = 0.0  # None: too short a span for a rate (fabric.health.rates)
    repeat_offender_days: int = 0
    score: int = 100
    congestion: float | None = None  # the busier end's XmitWait share of time
    repeat_offender: bool = False
    downs: int = 0  # link-downs in the health window (both ends merged)

    def __post_init__(self) -> None:
        if not is_status(self.status):
            raise ValueError(f"unknown health status {self.status!r}")
        order_ends(self)

    @property
    def key(self) -> tuple[tuple[str, int], tuple[str, int]]:
        return ((self.a.guid, self.a.port), (self.b.guid, self.b.port))

    @property
    def rank(self) -> int:
        return status_rank(self.status)

    def evidence(self) -> tuple[str, ...]:
        facts = [f"health {self.status} (score {self.score})"]
        if self.ber:  # a BER of 0 is no evidence for taking a link out (the reasons give its bounds)
            facts.append(f"BER {self.ber:.2e}")
        if self.downs:
            facts.append(f"{self.downs} link-down(s) in the window")
        if self.flaps_per_hour:
            facts.append(f"{self.flaps_per_hour:.2f} link-downs/hour")
        if self.repeat_offender_days > 1:  # one day is today's: nothing beyond the status
            facts.append(f"findings on {self.repeat_offender_days} days")
        return (*facts, *self.reasons)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A cable the health model wants out of service, and the port that would take it out."""

    link: Link
    port: PortRef  # the port to disable: a switch end
    finding: LinkFinding
    switch_to_host: bool

    @property
    def far(self) -> PortRef:
        return self.link.b if self.port == self.link.a else self.link.a


# -- reading health reports ---------------------------------------------------------------------
def _ref(value: Any, where: str) -> PortRef:
    try:
        return PortRef(normalise_guid(str(value["guid"])), int(value["port"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError("ibfab health", where, 0, "", f"bad port reference {value!r}") from exc


def _ber_value(value: Any) -> float | None:
    if isinstance(value, Mapping):  # the health model's BerEstimate.to_dict()
        value = value.get("value")
    return None if value is None else float(value)


def findings_from_dict(data: Mapping[str, Any], source: str = "health.json") -> list[LinkFinding]:
    """Findings from the ``links`` of an ``ibfab health --json`` document."""
    links = data.get("links") if isinstance(data, Mapping) else None
    if not isinstance(links, list):
        raise ParseError(
            "ibfab health", source, 0, "", "no 'links' list (expected 'ibfab health --json' output)"
        )
    out = []
    for i, row in enumerate(links):
        where = f"{source} links[{i}]"
        try:
            days = int(row.get("repeat_days", row.get("repeat_offender_days", 0)) or 0)
            flaps = row.get("flaps_per_hour", 0.0)  # null: too short a span for a rate
            out.append(
                LinkFinding(
                    a=_ref(row["a"], where),
                    b=_ref(row["b"], where),
                    status=str(row["status"]),
                    reasons=tuple(str(r) for r in row.get("reasons", ())),
                    ber=_ber_value(row.get("ber")),
                    flaps_per_hour=None if flaps is None else float(flaps or 0.0),
                    repeat_offender_days=days,
                    score=int(row.get("score", 100)),
                    congestion=None if row.get("congestion") is None else float(row["congestion"]),
                    repeat_offender=bool(row.get("repeat_offender", days >= REPEAT_OFFENDER_DAYS)),
                    downs=int(row.get("downs") or 0),
                )
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ParseError("ibfab health", where, 0, "", f"unusable link record ({exc})") from exc
    return out


def read_health_file(path: str | Path) -> list[LinkFinding]:
    # Bounded, UTF-8 or refused (json.loads would raise on bytes it cannot decode); the JSON of
    # 50,000 links is ~30 MB, far below the limit (and a JSON file is written on few lines).
    text = read_input_text(path, "ibfab health", max_line=MAX_INPUT_BYTES, strict=True)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError("ibfab health", str(path), exc.lineno, "", f"not JSON: {exc.msg}") from exc
    return findings_from_dict(data, str(path))


def findings_from_report(report: Any) -> list[LinkFinding]:
    """Findings from a :class:`fabric.health.HealthReport` (imported lazily: pandas stays out)."""
    from fabric.health import HealthReport

    if not isinstance(report, HealthReport):
        raise UsageError("findings_from_report needs a fabric.health.HealthReport")
    return [
        LinkFinding(
            a=lk.a,
            b=lk.b,
            status=lk.status.value,
            reasons=lk.reasons,
            ber=lk.ber.value,
            flaps_per_hour=lk.flaps_per_hour,
            repeat_offender_days=lk.repeat_days,
            score=lk.score,
            congestion=lk.congestion,
            repeat_offender=lk.repeat_offender,
            downs=lk.downs,
        )
        for lk in report.links
    ]


# -- candidates ---------------------------------------------------------------------------------
def isolation_candidates(
    fabric: Fabric, cls: Classification, findings: Iterable[LinkFinding], min_status: str = "warn"
) -> list[Candidate]:
    """Cables at ``min_status`` or worse that are in the fabric, worst first (then lowest score)."""
    floor = status_rank(min_status)
    by_key = {lk.key: lk for lk in fabric.links}
    out = []
    for f in findings:
        lk = by_key.get(f.key)
        if lk is None or f.rank < floor:
            continue
        port = isolation_port(fabric, cls, lk)
        a_sw = fabric.nodes[lk.a.guid].kind is NodeKind.SWITCH
        b_sw = fabric.nodes[lk.b.guid].kind is NodeKind.SWITCH
        out.append(Candidate(lk, port, f, not (a_sw and b_sw)))
    out.sort(key=lambda c: (-c.finding.rank, c.finding.score, -(c.finding.ber or 0.0), c.link.key))
    return out


def isolation_port(fabric: Fabric, cls: Classification, link: Link) -> PortRef:
    """The end to disable: the switch end of a host cable, else the lower-tier switch (the leaf)."""
    ends = [e for e in (link.a, link.b) if fabric.nodes[e.guid].kind is NodeKind.SWITCH]
    if not ends:
        raise UsageError(f"cable {link.a} - {link.b} has no switch end to disable")

    def tier(ref: PortRef) -> int:
        t = cls.nodes[ref.guid].tier
        return 99 if t is None else t

    return min(ends, key=lambda e: (tier(e), e.guid, e.port))


# -- operator text -> ports ---------------------------------------------------------------------
def node_label(fabric: Fabric, cls: Classification, guid: Guid) -> str:
    c = cls.nodes.get(guid)
    return c.name if c is not None else fabric.nodes[guid].description or guid


def resolve_node(fabric: Fabric, cls: Classification, text: str) -> Guid:
    """A node by GUID, LID, exact description or the name ibfab shows (``leaf-su01-r0``, ``dgx-0001 mlx5_0``)."""
    names = [g for g, c in cls.nodes.items() if c.name == text]
    if len(names) == 1:
        return names[0]
    try:
        return fabric.find(text).guid
    except KeyError:
        pass
    why = "ambiguous" if len(names) > 1 else "not in the fabric"
    raise UsageError(f"node {text!r}: {why} (give a GUID, a LID or a name such as leaf-su01-r0)")


def resolve_port(fabric: Fabric, cls: Classification, text: str) -> PortRef:
    """``NODE:PORT`` -> a port reference; UsageError naming what is wrong."""
    node, sep, port = text.strip().rpartition(":")
    if not sep or not node or not port.isdigit():
        raise UsageError(f"{text!r}: expected NODE:PORT, e.g. leaf-su01-r0:5 or 0x0c42a10300a00000:5")
    guid = resolve_node(fabric, cls, node)
    n = int(port)
    if not 1 <= n <= max(fabric.nodes[guid].nports, 1):
        raise UsageError(f"{text!r}: {node} has ports 1-{fabric.nodes[guid].nports}")
    return PortRef(guid, n)


def link_at(fabric: Fabric, ref: PortRef) -> Link | None:
    for port, _far, lk in fabric.neighbours(ref.guid):
        if port == ref.port:
            return lk
    return None
