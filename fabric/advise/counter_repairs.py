"""What to do about counters that say something from one reading (:mod:`fabric.health.reading`):
clear them on both ends of the cable and read again, so the rate can judge it.

A saturated counter shows nothing new until it is cleared; a large first total says errors
happened at some time since the last clear, not whether they still do. Clearing is a change to
the ports' counters (nothing else): ibfab never runs it, it prints the commands. The evidence is
the reading itself, by counter and end.

>>> clear_counters_command(PortRef(Guid("0x1"), 3), 12)
'perfquery -R 12 3'
"""

from __future__ import annotations

from collections.abc import Iterable

from fabric.advise.actions import Action, ActionKind, Command
from fabric.advise.candidates import node_label
from fabric.advise.repairs import cable_target
from fabric.health.reading import ReadingFinding
from topology.classify import Classification
from topology.model import Fabric, Guid, Lid, PortRef


def clear_counters_command(ref: PortRef, lid: Lid | int | None) -> str:
    """``perfquery -R LID PORT`` (by GUID, ``-G``, when the LID is not known): clears the port's
    counters (the extended data counters too on devices that tie them, as ConnectX and Quantum do)."""
    if lid is None:
        return f"perfquery -R -G {ref.guid} {ref.port}"
    return f"perfquery -R {lid} {ref.port}"


def clear_counter_actions(
    fabric: Fabric, cls: Classification, readings: Iterable[ReadingFinding]
) -> list[Action]:
    """One ``clear_counters`` per cable whose reading is saturated or large, both ends cleared."""
    by_key = {lk.key: lk for lk in fabric.links}
    out = []
    for f in readings:
        lk = by_key.get(f.key)
        if lk is None:
            continue
        target = cable_target(fabric, cls, lk)
        what = "saturated" if f.saturated else "large on its first reading"
        ends = [e for e in (lk.a, lk.b) if e.guid in fabric.nodes]
        commands = [
            Command("operator", "apply", clear_counters_command(e, fabric.nodes[e.guid].lid)) for e in ends
        ]
        commands.append(
            Command(
                "operator",
                "check",
                "ibfab counters collect (twice, some minutes apart; or let ibfab daemon do it), then ibfab health",
            )
        )
        names = " and ".join(f"{node_label(fabric, cls, e.guid)} port {e.port}" for e in ends)
        out.append(
            Action(
                ActionKind.CLEAR_COUNTERS,
                target,
                f"error counters {what}: clear them on both ends ({names}) and read again, so the rate "
                "judges the cable",
                tuple(f"counters: {r}" for r in f.reasons()),
                "none (counters only; the counts read so far are lost, so note them first)",
                tuple(commands),
                lk.a,
            )
        )
    return out


__all__ = ["Guid", "clear_counter_actions", "clear_counters_command"]
