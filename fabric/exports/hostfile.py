"""MPI hostfiles: Open MPI ``host slots=N`` or MPICH/Hydra ``host:N``, one host a line, in ring order."""

from __future__ import annotations

from collections.abc import Iterable

from topology.errors import UsageError

STYLES = ("openmpi", "mpich")


def hostfile(hosts: Iterable[str], style: str = "openmpi", slots: int = 1) -> str:
    if style not in STYLES:
        raise UsageError(f"unknown hostfile style {style!r} (use openmpi or mpich)")
    if slots < 1:
        raise UsageError(f"--slots {slots}: need at least 1")
    fmt = "{} slots={}" if style == "openmpi" else "{}:{}"
    lines = [fmt.format(h, slots) for h in hosts]
    return "\n".join(lines) + ("\n" if lines else "")
