"""Single faults planted in a lab fabric's discovered state, swept on the lab-simulated backend.

A lab (ibsim + the real OpenSM) is brought up once per fabric shape for its discovery and its
forwarding tables, then taken down; each fault is planted in a copy of the discovered fabric (a
cable trained narrower or slower, as discovery would then see it) or in the error rates the
simulator applies (a port dropping part of what arrives), and a whole sweep runs on it: plan
(design rates from the cable's peers), simulated rounds, judging, re-tests, follow-ups, ranking.
The routes stay those OpenSM computed for the clean fabric (neither engine weighs link speed).

Used by the property test (tests/probes/test_localize_property.py) and bench/bench_localize.py.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from fabric.app.discovery.discover import discover
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.app.sweeps.sweep import names_of
from fabric.lab import simulator as lab
from fabric.lab.driver import LabDriver
from probes.expect import crossings
from probes.labtraffic import PortKey
from probes.plan import endpoints, plan_sweep
from probes.sweep import LabTrafficBackend, SweepOutcome, run_sweep
from topology.classify import Classification
from topology.generate import lower_speed
from topology.lft import Lfts
from topology.model import Fabric, Guid, Link, LinkKey

KINDS = ("width", "speed", "drops")


@dataclass(frozen=True)
class Shape:
    """A lab fabric as discovered, with OpenSM's forwarding tables."""

    spec: str
    fabric: Fabric
    cls: Classification
    tables: Lfts
    names: dict[Guid, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Fault:
    kind: str  # width | speed | drops
    link: Link
    port: PortKey | None = None  # drops: the port whose arriving data is dropped
    value: int | str = 0  # width (lanes), speed token, or drop percent

    def __str__(self) -> str:
        where = f"{self.link.a.guid}/{self.link.a.port}-{self.link.b.guid}/{self.link.b.port}"
        return f"{self.kind}={self.value} on {where}" + (f" at {self.port}" if self.port else "")


def shape(spec: str, lab_name: str) -> Shape:
    """Bring a lab up, discover it and read its routes, and take it down again."""
    lab.up(spec, (), name=lab_name)
    try:
        d = discover(Session(Source.lab(lab_name)))
        tables = LabDriver(lab_name).forwarding_tables()
    finally:
        lab.down(lab_name)
    return Shape(spec, d.fabric, d.classification, tables, names_of(d))


def crossed(s: Shape, pattern: str) -> list[tuple[LinkKey, Guid]]:
    """Every (link, direction) the pattern's plan crosses on the clean fabric, in a stable order."""
    plan = plan_sweep(s.fabric, s.cls, pattern, s.tables)
    seen: dict[tuple[LinkKey, Guid], None] = {}
    for (client, _), path in sorted(plan.paths.items()):
        for c in crossings(path, client):
            seen.setdefault(c)
    return list(seen)


def random_fault(rng: random.Random, s: Shape, pattern: str) -> Fault:
    """One fault on a cable the plan crosses: 1x or 2x width, one speed lower, or 10-90 % drops."""
    key, src = rng.choice(crossed(s, pattern))
    lk = next(lk for lk in s.fabric.links if lk.key == key)
    kind = rng.choice(KINDS)
    if kind == "width":
        return Fault(kind, lk, None, rng.choice([w for w in (1, 2) if w < lk.width]))
    if kind == "speed":
        return Fault(kind, lk, None, lower_speed(lk.speed))
    enter = lk.other(src)
    return Fault(kind, lk, (enter.guid, enter.port), rng.randrange(10, 91))


def planted(s: Shape, fault: Fault | None) -> tuple[Fabric, dict[PortKey, int]]:
    """The fabric as discovery would see it with ``fault``, and the simulator's error rates."""
    if fault is None or fault.kind == "drops":
        rates = {fault.port: int(fault.value)} if fault is not None and fault.port else {}
        return s.fabric, rates
    lk = fault.link
    width = int(fault.value) if fault.kind == "width" else lk.width
    speed = str(fault.value) if fault.kind == "speed" else lk.speed
    links = [Link(x.a, x.b, width, speed) if x.key == lk.key else x for x in s.fabric.links]
    return Fabric.build(s.fabric.nodes.values(), links, source=s.fabric.source), {}


def sweep(s: Shape, pattern: str, fault: Fault | None) -> SweepOutcome:
    """A whole sweep of ``pattern`` on the shape with ``fault`` planted (None: clean)."""
    fabric, rates = planted(s, fault)
    plan = plan_sweep(fabric, s.cls, pattern, s.tables)
    backend = LabTrafficBackend(fabric, plan.paths, rates)
    return run_sweep(
        plan,
        backend,
        fabric=fabric,
        tables=s.tables,
        candidates=endpoints(fabric, s.cls),
        names=s.names,
    )


def verdict(outcome: SweepOutcome, fault: Fault) -> str:
    """``top1`` (the planted cable leads alone), ``tie`` (it is in a tie no probe split) or ``miss``."""
    top = [x for x in outcome.suspects if x.group == outcome.suspects[0].group] if outcome.suspects else []
    keys = [x.link.key for x in top]
    if keys == [fault.link.key]:
        return "top1"
    return "tie" if fault.link.key in keys else "miss"
