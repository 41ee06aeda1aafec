"""From (element, evidence) pairs and recommend's actions to the ranked entries of ``ibfab status``.

* **One entry per element**, every source's evidence on it (health, the reading, the sweep,
  wiring, the plan, routes, in that order).
* **Severity** is the worst of its evidence; **confidence** the surest, raised one step (never to
  certain) when two or more independent sources point at it.
* **The action** is the first of recommend's actions for that element, in recommend's order
  (isolations before replacements before recabling); the rest are listed as ``also``. An action
  belongs to an element by the port it changes (the cable on it), a drain to the host's bad
  cables, any other by the facts it quotes (discovery's message, the plan's lines).
* **Ranked** worst first: severity, then confidence, then the number of sources, then the name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fabric.advise.actions import Action, ActionKind
from fabric.app.status.evidence import Elements, Found
from fabric.app.status.records import (
    Basis,
    Confidence,
    Element,
    Entry,
    Evidence,
    EvidenceSource,
    severity_rank,
)

# Settings for the whole fabric (AR, the routing engine, NCCL): advice, not something wrong.
_SETTINGS = (
    ActionKind.ENABLE_AR,
    ActionKind.DISABLE_AR,
    ActionKind.SET_ROUTING_ENGINE,
    ActionKind.SET_NCCL_ENV,
)
_BY_PORT = (ActionKind.ISOLATE_PORT, ActionKind.REPLACE_CABLE, ActionKind.CLEAR_COUNTERS)
_SOURCE_ORDER = {s: i for i, s in enumerate(EvidenceSource)}


def merge(
    el: Elements, found: Iterable[Found], actions: Sequence[Action], notes: Sequence[str] = ()
) -> list[Entry]:
    elements: dict[str, Element] = {}
    evidence: dict[str, list[Evidence]] = {}
    for element, ev in found:
        elements.setdefault(element.key, element)
        evidence.setdefault(element.key, []).append(ev)
    acts: dict[str, list[Action]] = {k: [] for k in elements}
    for action in actions:
        if action.kind in _SETTINGS:
            continue
        for key in _elements_of(el, action, elements, evidence):
            acts[key].append(action)
    out = []
    for key, element in elements.items():
        evs = sorted(evidence[key], key=lambda e: (_SOURCE_ORDER[e.source], severity_rank(e.severity)))
        confidence, basis = _confidence(evs)
        mine = acts[key]
        out.append(
            Entry(
                element,
                min((e.severity for e in evs), key=severity_rank),
                confidence,
                basis,
                tuple(evs),
                mine[0] if mine else None,
                tuple(mine[1:]),
                tuple(n for n in notes if element.name in n),
                "" if mine else _why_none(evs),
            )
        )
    out.sort(
        key=lambda e: (
            severity_rank(e.severity),
            -e.confidence.rank,
            -len(e.sources),
            e.element.name,
        )
    )
    return out


def _confidence(evs: Sequence[Evidence]) -> tuple[Confidence, Basis]:
    best = max(evs, key=lambda e: e.confidence.rank)
    sources = {e.source for e in evs}
    if len(sources) >= 2 and best.confidence.rank < Confidence.HIGH.rank:
        return best.confidence.raised(), Basis.AGREE
    return best.confidence, best.basis


def _why_none(evs: Sequence[Evidence]) -> str:
    if any(e.basis is Basis.TIE for e in evs):
        return "tie"
    if all(e.source is EvidenceSource.HEALTH and e.severity == "warning" for e in evs):
        return "watch"
    return "none"


def _elements_of(
    el: Elements, action: Action, elements: dict[str, Element], evidence: dict[str, list[Evidence]]
) -> list[str]:
    """The keys of the elements ``action`` is about (none when it is about nothing listed)."""
    if action.kind in _BY_PORT and action.port is not None:
        key = el.port(action.port).key
        if key in elements:
            return [key]
    if action.kind is ActionKind.DRAIN_NODE:
        hcas = set(el.cls.hosts.get(action.target, ()))
        return [
            k
            for k, element in elements.items()
            if element.kind == "cable"
            and any(e.guid in hcas for e in element.ends)
            and any(ev.source is EvidenceSource.HEALTH for ev in evidence[k])
        ]
    quoted = set(action.evidence)
    return [k for k, evs in evidence.items() if any(q in quoted for ev in evs for q in ev.quoted)]
