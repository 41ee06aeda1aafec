"""Repairs for the differences between the fabric and its cable plan (:mod:`topology.plancheck`).

The plan is the design: where the fabric differs, the fix is to cable it as planned.

* **Miswired** (planned cables found on other ports; a swap is one item): ``move_cables`` on the
  fabric's cables, each planned cable as the place it goes.
* **Missing** (a planned cable not in the fabric): ``connect_cable`` between its planned ends.
* **Below plan** (width, speed or rate under the planned one): ``replace_cable``, reseat first
  (the same target as discovery's ``degraded_link`` repair, so the two merge into one action).

Cables in the fabric but not in the plan, and planned cables that could not be checked, get no
action: either the plan or the fabric may be the one to change, and only the operator knows.
"""

from __future__ import annotations

from fabric.advise.actions import Action, ActionKind, Command, replace_cable
from fabric.advise.candidates import node_label
from fabric.advise.repairs import cable_target
from topology.classify import Classification
from topology.model import Fabric, Link
from topology.plancheck import PlanCheck, PlanFinding, Verdict


def plan_actions(fabric: Fabric, cls: Classification, check: PlanCheck | None) -> list[Action]:
    if check is None:
        return []
    out: list[Action] = []
    for f in check.findings:
        if f.verdict is Verdict.MISWIRED and f.actual:
            out.append(_recable(fabric, cls, f))
        elif f.verdict is Verdict.MISSING and f.expected:
            cable = f.expected[0]
            out.append(
                Action(
                    ActionKind.CONNECT_CABLE,
                    str(cable),
                    f"the plan has {cable} and the fabric does not",
                    tuple(f"plan: {e}" for e in f.evidence),
                    "none while it is missing; the link comes up when cabled",
                    (
                        Command(
                            "operator",
                            "apply",
                            f"cable {cable} as planned ({cable.where}); if the cable is in, reseat it, "
                            "else replace it and its transceivers",
                        ),
                    ),
                )
            )
        elif f.verdict is Verdict.BELOW_PLAN and f.actual:
            lk = f.actual[0]
            out.append(
                replace_cable(
                    cable_target(fabric, cls, lk),
                    lk.a,
                    lk.b,
                    f"runs below its plan: {f.message}; reseat it, else replace it",
                    tuple(f"plan: {e}" for e in f.evidence),
                    _names(fabric, cls, lk),
                )
            )
    return out


def _names(fabric: Fabric, cls: Classification, lk: Link) -> tuple[str, str]:
    return (
        f"{node_label(fabric, cls, lk.a.guid)} port {lk.a.port}",
        f"{node_label(fabric, cls, lk.b.guid)} port {lk.b.port}",
    )


def _recable(fabric: Fabric, cls: Classification, f: PlanFinding) -> Action:
    known = [lk for lk in f.actual if lk.a.guid in fabric.nodes and lk.b.guid in fabric.nodes]
    target = "; ".join(cable_target(fabric, cls, lk) for lk in known) or f.message
    moves = [Command("operator", "apply", f"cable {c} as planned ({c.where})") for c in f.expected]
    return Action(
        ActionKind.MOVE_CABLES,
        target,
        f"cabled otherwise than the plan ({f.message}): move the cables to their planned ports",
        tuple(f"plan: {e}" for e in f.evidence),
        "each moved link is down while recabled",
        tuple(moves),
        known[0].a if known else None,
    )
