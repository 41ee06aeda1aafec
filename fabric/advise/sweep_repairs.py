"""Repairs for the cables a probe sweep points at (:mod:`probes.localize`).

A suspect is a cable every pair crossing it was slow on, chosen as the cable that explains those
pairs. When it alone explains them it gets ``replace_cable`` (reseat first), with the sweep as its
evidence; where the same slow pairs cross several cables (a tie no follow-up probe split) nothing
is replaced on a guess: a note names the tie and the re-test that splits it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fabric.advise.actions import Action, replace_cable
from fabric.advise.candidates import node_label
from fabric.advise.repairs import cable_target
from fabric.core.units import utc_time
from topology.classify import Classification
from topology.model import Fabric, Guid, Link


@dataclass(frozen=True, slots=True)
class SweepSuspect:
    """A cable a stored sweep points at: what the advice and ``ibfab status`` take from a sweep."""

    link: Link
    sweep_id: int
    pattern: str
    finished: float | None
    reason: str  # localize's words: "all 4 pair(s) crossing it were slow (both directions); ..."
    slow_pairs: int
    tied_with: tuple[Link, ...] = ()  # other cables the same slow pairs cross (a tie)

    @property
    def key(self) -> tuple[tuple[str, int], tuple[str, int]]:
        return self.link.key

    def evidence(self) -> str:
        when = f" at {utc_time(self.finished)}" if self.finished is not None else ""
        return f"sweep {self.sweep_id} ({self.pattern}{when}): {self.reason}"


def sweep_cable_actions(
    fabric: Fabric, cls: Classification, suspects: Iterable[SweepSuspect]
) -> tuple[list[Action], list[str]]:
    """(a replacement per suspect that alone explains its slow pairs, a note per tie)."""
    by_key = {lk.key: lk for lk in fabric.links}
    actions: list[Action] = []
    notes: list[str] = []
    for s in suspects:
        lk = by_key.get(s.key)
        if lk is None:  # the cable is not in today's fabric (recabled since the sweep)
            notes.append(f"sweep {s.sweep_id} suspect {_ends(fabric, cls, s.link)} is not in the fabric now")
            continue
        target = cable_target(fabric, cls, lk)
        if s.tied_with:
            others = ", ".join(
                cable_target(fabric, cls, t) if t.key in by_key else _ends(fabric, cls, t)
                for t in s.tied_with
            )
            notes.append(
                f"not replacing {target}: sweep {s.sweep_id}'s slow pairs cross it and {others} alike "
                "(a tie); re-test with probes that cross one of them (ibfab sweep run)"
            )
            continue
        actions.append(
            replace_cable(
                target,
                lk.a,
                lk.b,
                "probes crossing it are slow: reseat it, else replace it",
                (s.evidence(),),
                (
                    f"{node_label(fabric, cls, lk.a.guid)} port {lk.a.port}",
                    f"{node_label(fabric, cls, lk.b.guid)} port {lk.b.port}",
                ),
            )
        )
    return actions, notes


def _ends(fabric: Fabric, cls: Classification, lk: Link) -> str:
    def name(guid: Guid) -> str:
        return node_label(fabric, cls, guid) if guid in fabric.nodes else str(guid)

    return f"{name(lk.a.guid)}:{lk.a.port} <-> {name(lk.b.guid)}:{lk.b.port}"


def suspects_of(
    links: Sequence[tuple[Link, str, int, int]], sweep_id: int, pattern: str, finished: float | None
) -> list[SweepSuspect]:
    """Suspects from localize's ranking as (link, reason, slow pairs, group): a group holding
    several cables is a tie, each cable naming the others."""
    groups: dict[int, list[Link]] = {}
    for lk, _, _, group in links:
        groups.setdefault(group, []).append(lk)
    return [
        SweepSuspect(
            lk,
            sweep_id,
            pattern,
            finished,
            reason,
            slow,
            tuple(o for o in groups[group] if o.key != lk.key),
        )
        for lk, reason, slow, group in links
    ]
