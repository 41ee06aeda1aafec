"""Failing links that share a cable vendor, part number or length, more than chance would give.

A batch of bad transceivers or one bad cable length shows as failing links whose modules have
something in common. Having it in common is not enough: on a fabric cabled with one part number
every failing link shares it. A trait value is reported only when at least ``min_links`` failing
links carry it and drawing that many failing links at random from the cabled population would
give at least that many with it with a chance of ``max_chance`` or less (the hypergeometric tail:
the healthy population does not explain it). A link carries a value when either end's module
has it; links whose modules the inventory does not know are left out of both counts.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from topology.cables import CableInfo
from topology.model import Guid, LinkKey, PortRef

# (trait, how an operator says it)
TRAITS: tuple[tuple[str, str], ...] = (
    ("vendor", "vendor"),
    ("part_number", "part number"),
    ("length_m", "length"),
)
MIN_LINKS = 2
MAX_CHANCE = 0.01


@dataclass(frozen=True, slots=True)
class SharedCableTrait:
    """Failing links whose modules share one value of a trait, with the counts that make it notable."""

    trait: str  # "vendor", "part number", "length"
    value: str  # "FS", "MMA4Z00-NS", "3 m"
    links: tuple[LinkKey, ...]  # the failing links with it
    failing_known: int  # failing links whose modules the inventory knows for this trait
    population_with: int  # cabled links with this value
    population_known: int  # cabled links whose modules the inventory knows for this trait
    chance: float  # of at least len(links) such links among failing_known drawn at random

    def to_dict(self) -> dict[str, object]:
        return {
            "trait": self.trait,
            "value": self.value,
            "links": [[{"guid": g, "port": p} for g, p in key] for key in self.links],
            "failing_known": self.failing_known,
            "population_with": self.population_with,
            "population_known": self.population_known,
            "chance": self.chance,
        }


def _shown(trait: str, value: object) -> str:
    if trait == "length_m" and isinstance(value, float):
        return f"{value:g} m"
    return str(value)


def _values(key: LinkKey, modules: Mapping[PortRef, CableInfo], trait: str) -> frozenset[str]:
    out = set()
    for guid, port in key:
        m = modules.get(PortRef(Guid(guid), port))
        value = getattr(m, trait) if m is not None else None
        if value is not None:
            out.add(_shown(trait, value))
    return frozenset(out)


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def tail_chance(population: int, with_value: int, drawn: int, seen: int) -> float:
    """P(at least ``seen`` of ``drawn`` links carry the value) drawing without replacement from
    ``population`` links of which ``with_value`` carry it.

    >>> round(tail_chance(510, 7, 3, 2), 5)
    0.00048
    >>> tail_chance(510, 510, 3, 3)
    1.0
    """
    top = min(drawn, with_value)
    if seen > top:
        return 0.0
    total = _log_comb(population, drawn)
    p = sum(
        math.exp(_log_comb(with_value, i) + _log_comb(population - with_value, drawn - i) - total)
        for i in range(seen, top + 1)
        if drawn - i <= population - with_value
    )
    return min(1.0, p)


def shared_cable_traits(
    failing: Iterable[LinkKey],
    modules: Mapping[PortRef, CableInfo],
    cabled: Sequence[LinkKey] = (),
    *,
    min_links: int = MIN_LINKS,
    max_chance: float = MAX_CHANCE,
) -> tuple[SharedCableTrait, ...]:
    """Trait values shared by failing links beyond chance (see the module doc), least likely first.

    ``failing`` are the links judged failing, ``cabled`` every cabled link of the fabric (the
    population; the failing ones are among them), ``modules`` the inventory by node GUID and port.
    """
    failing = list(dict.fromkeys(failing))
    population = list(dict.fromkeys([*cabled, *failing]))
    if len(failing) < min_links or not modules:
        return ()
    out: list[SharedCableTrait] = []
    for trait, said in TRAITS:
        values = {key: _values(key, modules, trait) for key in population}
        known = [key for key in population if values[key]]
        failing_known = [key for key in failing if values[key]]
        if len(failing_known) < min_links:
            continue
        in_population = Counter(v for key in known for v in values[key])
        in_failing = Counter(v for key in failing_known for v in values[key])
        for value, seen in in_failing.items():
            if seen < min_links:
                continue
            chance = tail_chance(len(known), in_population[value], len(failing_known), seen)
            if chance <= max_chance:
                links = tuple(key for key in failing_known if value in values[key])
                out.append(
                    SharedCableTrait(
                        said, value, links, len(failing_known), in_population[value], len(known), chance
                    )
                )
    return tuple(sorted(out, key=lambda s: (s.chance, s.trait, s.value)))
