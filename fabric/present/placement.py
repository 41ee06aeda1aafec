"""Text for ``ibfab place``: the chosen hosts in the asked format, and the cost and hosts left out."""

from __future__ import annotations

import json
from collections.abc import Sequence

from fabric.exports.hostfile import Slots, hostfile
from fabric.exports.tree import fold
from fabric.placement import FABRIC_LEFT_OUT, SERVICE_HOST, LeftOut, Placement


def placement_hosts(p: Placement, fmt: str, slots: int | Slots = 1) -> str:
    """The hosts as an Open MPI hostfile, a Slurm node list or JSON (``fmt``), newline-terminated."""
    if fmt == "json":
        doc = p.to_dict()
        if isinstance(slots, Slots):
            doc["slots"] = {"rule": slots.rule, "per_host": {h: slots.of(h) for h in p.hosts}}
        return json.dumps(doc, indent=1) + "\n"
    if fmt == "slurm":
        return fold(p.hosts) + "\n"
    return hostfile(p.hosts, "openmpi", slots)


def slots_line(slots: Slots) -> str:
    """Where a hostfile's slots come from, said where the hostfile is printed."""
    if slots.rule == "given":
        return f"slots: {slots.default} per host (--slots)"
    if slots.rule == "rails":
        return (
            f"slots: {slots.default} per host, one rank per GPU: on this rail-optimized fabric each GPU "
            f"has its own rail HCA and a compute host has {slots.default}; if this fabric is one of "
            "several planes, give --slots N"
        )
    return (
        "slots: 1 per host: the fabric does not say how many GPUs a host has (not rail-optimized: "
        "one HCA may serve several GPUs); give --slots N"
    )


def placement_summary(p: Placement) -> list[str]:
    """The cost against its minimum, the worst link on the ring's paths, the hosts left out by reason."""
    c = p.cost
    lines = [
        f"placed {len(p.hosts)} hosts ({p.policy}): {c.units} units (min {c.units_min}), "
        f"{c.leaves} leaves (min {c.leaves_min}), {c.crossings} spine crossings in the ring "
        f"(min {c.crossings_min}); units {','.join(p.units)}"
    ]
    if c.worst_link is not None:
        lines.append(f"worst link on the paths: {c.worst_link} {'; '.join(c.worst_links)}".rstrip())
    if c.spine_groups_min > 1 or c.spine_groups > 1:
        lines.append(f"spine groups: {c.spine_groups} (min {c.spine_groups_min})")
    by_reason: dict[str, list[str]] = {}
    for lo in p.left_out:
        if lo.reason not in FABRIC_LEFT_OUT:
            by_reason.setdefault(lo.reason, []).append(lo.name)
    lines += [f"left out ({len(hosts)}) {reason}: {fold(hosts)}" for reason, hosts in by_reason.items()]
    line = left_out_line(p.left_out)
    return [*lines, line] if line else lines


# What a fabric's non-candidates are called, counted: (one, many, named: list the hosts).
_KINDS = {
    "SHARP aggregation node": ("aggregation node", "aggregation nodes", False),
    SERVICE_HOST: ("service host", "service hosts", True),
    "HCA without a host name": ("unnamed HCA", "unnamed HCAs", False),
    "switch management HCA": ("switch management HCA", "switch management HCAs", False),
    "router": ("router", "routers", False),
    "cabled to no switch": ("host cabled to no switch", "hosts cabled to no switch", True),
}
_NAMES_SHOWN = 4


def left_out_line(items: Sequence[LeftOut]) -> str | None:
    """The fabric's hosts and HCAs that are no candidates, counted in one line (never one line a
    node: a SuperPOD has hundreds of aggregation nodes), hosts named, at most a few:
    ``left out: 40 aggregation nodes, 1 service host (B11-P1-CUFM-02), 74 unnamed HCAs``.
    None when nothing was left out."""
    by_reason: dict[str, list[str]] = {}
    for lo in items:
        if lo.reason in _KINDS:
            by_reason.setdefault(lo.reason, []).append(lo.name)
    parts = []
    for reason, (one, many, named) in _KINDS.items():
        names = by_reason.get(reason)
        if not names:
            continue
        part = f"{len(names)} {one if len(names) == 1 else many}"
        if named:
            folded = fold(names)
            shown = folded if len(folded) <= 60 else ", ".join(names[: _NAMES_SHOWN - 1]) + ", ..."
            part += f" ({shown})"
        parts.append(part)
    if not parts:
        return None
    hint = "; --include-service adds the service hosts" if SERVICE_HOST in by_reason else ""
    return "left out: " + ", ".join(parts) + hint
