"""Text for ``ibfab place``: the chosen hosts in the asked format, and the cost and hosts left out."""

from __future__ import annotations

import json

from fabric.exports.hostfile import hostfile
from fabric.exports.tree import fold
from fabric.placement import Placement


def placement_hosts(p: Placement, fmt: str, slots: int = 1) -> str:
    """The hosts as an Open MPI hostfile, a Slurm node list or JSON (``fmt``), newline-terminated."""
    if fmt == "json":
        return json.dumps(p.to_dict(), indent=1) + "\n"
    if fmt == "slurm":
        return fold(p.hosts) + "\n"
    return hostfile(p.hosts, "openmpi", slots)


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
    by_reason: dict[str, list[str]] = {}
    for lo in p.left_out:
        by_reason.setdefault(lo.reason, []).append(lo.name)
    lines += [f"left out ({len(hosts)}) {reason}: {fold(hosts)}" for reason, hosts in by_reason.items()]
    return lines
