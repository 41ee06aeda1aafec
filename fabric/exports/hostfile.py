"""MPI hostfiles: Open MPI ``host slots=N`` or MPICH/Hydra ``host:N``, one host a line, in ring order.

Slots are ranks per host: one per GPU. The fabric says how many where it is rail-optimized: each
GPU has its own HCA on its own rail (a DGX H100's 8 GPUs, 8 rails), so a host gets as many slots as
a compute host has HCAs there (:func:`fabric_slots`: the count most compute hosts have, so a host
short of a dead HCA keeps its GPUs' slots). A fabric that carries only some of the hosts' rails
(one plane of two) shows fewer HCAs than GPUs: ``--slots N`` sets it. Elsewhere the fabric does not
say (one HCA may serve 8 GPUs or none): 1 slot, and the rule says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from topology.classify import Classification
from topology.errors import UsageError

STYLES = ("openmpi", "mpich")


@dataclass(frozen=True, slots=True)
class Slots:
    """Slots per host, and the rule they come from: ``given`` (--slots), ``rails`` (the HCAs a
    compute host has on a rail-optimized fabric) or ``unknown`` (1: the fabric does not say)."""

    default: int
    rule: str
    per_host: Mapping[str, int] = field(default_factory=dict)

    def of(self, host: str) -> int:
        return self.per_host.get(host, self.default)


def fabric_slots(cls: Classification, given: int | None = None) -> Slots:
    """``given`` when set; else, on a rail-optimized fabric, the HCAs most compute hosts have
    (one GPU per rail HCA), else 1 (see the module docstring)."""
    if given is not None:
        return Slots(given, "given")
    if not cls.rail_optimized:
        return Slots(1, "unknown")
    shapes = Counter(len(hcas) for host, hcas in cls.hosts.items() if not cls.is_service_host(host))
    return Slots(shapes.most_common(1)[0][0] if shapes else 1, "rails")


def hostfile(hosts: Iterable[str], style: str = "openmpi", slots: int | Slots = 1) -> str:
    if style not in STYLES:
        raise UsageError(f"unknown hostfile style {style!r} (use openmpi or mpich)")
    per = slots if isinstance(slots, Slots) else Slots(slots, "given")
    if per.default < 1:
        raise UsageError(f"--slots {per.default}: need at least 1")
    fmt = "{} slots={}" if style == "openmpi" else "{}:{}"
    lines = [fmt.format(h, per.of(h)) for h in hosts]
    return "\n".join(lines) + ("\n" if lines else "")
