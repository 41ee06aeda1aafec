"""Repairs for the faults discovery and health find: the cable to reseat or replace, the exact
recabling of a rail miswire, and one action per target however many findings point at it.

* **Degraded cable** (a ``degraded_link`` anomaly: trained width or speed below its peers'):
  ``replace_cable`` naming both ends, reseat first.
* **Flapping cable** (a health finding with at least ``flap_critical`` link-downs in its window,
  from the site's thresholds as health judges them; by default 2, the PDR plugin's second-down
  rule, since one down alone is often a reboot or a reseat): ``replace_cable``.
* **Rail miswire**: ``swap_cables`` with each move, ``from LEAF port P to LEAF port Q``. A cable
  goes to the port its own rail's leaf holds for this host: where another miswired HCA of the same
  host sits (the two swap), else the port number the host uses on its other rail leaves when that
  port is free. When neither holds, the action says which leaf, and that the port is not known.

>>> merge_actions([]) == []
True
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fabric.advise.actions import Action, ActionKind, Command, drain_node, replace_cable
from fabric.advise.candidates import LinkFinding, isolation_port, node_label
from fabric.health.thresholds import HealthThresholds
from topology.anomaly import Anomaly
from topology.classify import Classification, Role
from topology.model import Fabric, Guid, Link, NodeKind, PortRef


def cable_target(fabric: Fabric, cls: Classification, lk: Link) -> str:
    """``switch:port <-> far:port``, the switch end (the lower tier) first, as isolations name it."""
    near = isolation_port(fabric, cls, lk) if _has_switch_end(fabric, lk) else lk.a
    far = lk.b if near == lk.a else lk.a
    return (
        f"{node_label(fabric, cls, near.guid)}:{near.port} <-> {node_label(fabric, cls, far.guid)}:{far.port}"
    )


def _has_switch_end(fabric: Fabric, lk: Link) -> bool:
    return any(fabric.nodes[e.guid].kind is NodeKind.SWITCH for e in (lk.a, lk.b))


def _link_of(fabric: Fabric, ends: Sequence[PortRef]) -> Link | None:
    if len(ends) != 2:
        return None
    key = tuple(sorted(ends))
    for port, _far, lk in fabric.neighbours(ends[0].guid):
        if port == ends[0].port and tuple(sorted((lk.a, lk.b))) == key:
            return lk
    return None


def degraded_cable_actions(fabric: Fabric, cls: Classification, anomalies: Iterable[Anomaly]) -> list[Action]:
    out = []
    for an in anomalies:
        if an.kind != "degraded_link":
            continue
        lk = _link_of(fabric, an.ports)
        if lk is None:
            continue
        target = cable_target(fabric, cls, lk)
        out.append(
            replace_cable(
                target,
                lk.a,
                lk.b,
                f"trains at {lk.width}x{lk.speed}, below its peers: reseat it, else replace it",
                (f"discovery: {an.message}",),
                _ends(fabric, cls, lk),
            )
        )
    return out


def _ends(fabric: Fabric, cls: Classification, lk: Link) -> tuple[str, str]:
    a, b = (f"{node_label(fabric, cls, e.guid)} port {e.port}" for e in (lk.a, lk.b))
    return a, b


def flapping_cable_actions(
    fabric: Fabric,
    cls: Classification,
    findings: Iterable[LinkFinding],
    thresholds: HealthThresholds | None = None,
) -> list[Action]:
    """A replacement for each cable whose link-downs in the window reach the threshold of
    critical (``thresholds.flap_critical``, the site's when given: the number health judges by)."""
    min_downs = (thresholds or HealthThresholds()).flap_critical
    by_key = {lk.key: lk for lk in fabric.links}
    out = []
    for f in findings:
        lk = by_key.get(f.key)
        if lk is None or f.downs < min_downs:
            continue
        out.append(
            replace_cable(
                cable_target(fabric, cls, lk),
                lk.a,
                lk.b,
                f"flapping: {f.downs} link-downs in the health window; reseat it, else replace it",
                f.evidence(),
                _ends(fabric, cls, lk),
            )
        )
    return out


# -- rail miswires --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Move:
    hca: str  # dgx-0002 mlx5_1
    rail: int
    source: str  # leaf-su01-r2 port 3
    dest: str | None  # leaf-su01-r1 port 3; None when the port is not known
    dest_leaf: str | None  # the rail's leaf, when known

    def text(self) -> str:
        to = self.dest or (
            f"{self.dest_leaf} (rail {self.rail}; no free port is known for it)"
            if self.dest_leaf
            else f"a rail-{self.rail} leaf of its unit (which one is not known)"
        )
        return f"{self.hca} (rail {self.rail}): its cable from {self.source} to {to}"


def _leaf_port(fabric: Fabric, hca: Guid) -> PortRef | None:
    for _, far, _ in fabric.neighbours(hca):
        if fabric.nodes[far.guid].kind is NodeKind.SWITCH:
            return far
    return None


def _port_taken(fabric: Fabric, ref: PortRef) -> bool:
    return any(p == ref.port for p, _, _ in fabric.neighbours(ref.guid))


def miswire_moves(fabric: Fabric, cls: Classification, host: str) -> list[Move]:
    """The moves that put every HCA of ``host`` on its own rail's leaf (empty when none is off)."""
    members = [cls.nodes[g] for g in cls.hosts.get(host, ())]
    wrong = [
        c
        for c in members
        if c.rail is not None and c.leaf is not None and cls.nodes[c.leaf].rail not in (None, c.rail)
    ]
    groups = Counter(cls.nodes[c.leaf].group for c in members if c.leaf is not None)
    group = groups.most_common(1)[0][0] if groups else None
    leaves_of_rail: dict[int, list[Guid]] = {}
    for g in cls.leaves():
        lc = cls.nodes[g]
        if lc.group == group and lc.rail is not None:
            leaves_of_rail.setdefault(lc.rail, []).append(g)
    ports = {c.guid: _leaf_port(fabric, c.guid) for c in members}
    usual = Counter(p.port for c in members if c not in wrong and (p := ports[c.guid]) is not None)
    usual_port = usual.most_common(1)[0][0] if usual else None
    moves = []
    for w in sorted(wrong, key=lambda c: (c.hca_index or 0, c.name)):
        assert w.rail is not None
        src = ports[w.guid]
        source = f"{node_label(fabric, cls, src.guid)} port {src.port}" if src else "its leaf"
        leaves = leaves_of_rail.get(w.rail, [])
        dest_leaf = leaves[0] if len(leaves) == 1 else None
        dest = None
        if dest_leaf is not None:
            # Another miswired HCA of this host on that leaf leaves its port for this one (a swap).
            there = sorted(
                (
                    ref
                    for v in wrong
                    if v is not w and v.leaf == dest_leaf and (ref := ports[v.guid]) is not None
                ),
                key=lambda ref: (ref.port != usual_port, ref.port),
            )
            if there:  # miswired HCAs of this host sit there and move away: take one's port (a swap)
                dest = f"{node_label(fabric, cls, dest_leaf)} port {there[0].port}"
            elif usual_port is not None and not _port_taken(fabric, PortRef(dest_leaf, usual_port)):
                dest = f"{node_label(fabric, cls, dest_leaf)} port {usual_port}"
        moves.append(
            Move(
                w.name,
                w.rail,
                source,
                dest,
                node_label(fabric, cls, dest_leaf) if dest_leaf is not None else None,
            )
        )
    return moves


def miswire_actions(fabric: Fabric, cls: Classification, anomalies: Iterable[Anomaly]) -> list[Action]:
    """One recabling per host whose HCAs sit on another rail's leaf: a rail miswire, or a host with
    every HCA on one leaf where its peers spread theirs over the rail leaves (the same moves)."""
    out = []
    for an in anomalies:
        if an.kind not in ("rail_miswire", "single_leaf_host"):
            continue
        hosts = sorted(
            {
                h
                for g in an.nodes
                if (c := cls.nodes.get(g)) is not None and c.role is Role.COMPUTE and (h := c.host)
            }
        )
        for host in hosts:
            moves = miswire_moves(fabric, cls, host)
            if moves:
                out.append(swap_cables(host, moves, (f"discovery: {an.message}",)))
    return out


def swap_cables(host: str, moves: Sequence[Move], evidence: tuple[str, ...]) -> Action:
    """The recabling of one host: a pair whose cables trade places is one swap at the host (its
    two HCA ports), then each cable's end state; anything else is a move."""
    exact = all(m.dest for m in moves)
    lines = []
    for i, m in enumerate(moves):
        for other in moves[i + 1 :]:
            if m.dest == other.source and other.dest == m.source:
                lines.append(f"swap the cables of {m.hca} and {other.hca} at the host (their two ports)")
    lines += [m.text() for m in moves]
    what = "swap its cables" if len(moves) > 1 else "move its cable"
    return Action(
        ActionKind.SWAP_CABLES,
        host,
        f"HCAs cabled to another rail's leaf: {what} so each HCA reaches its own rail"
        + ("" if exact else " (a destination port is not known: see the moves)"),
        evidence,
        f"{host}'s moved HCAs are down while recabled; drain it first",
        tuple(Command("operator", "apply", line) for line in lines),
    )


# -- one action per target ------------------------------------------------------------------------
def merge_actions(actions: Iterable[Action]) -> list[Action]:
    """One action per (kind, target), in first-seen order: their reasons and evidence joined. A
    drain's Slurm reason is rebuilt from the joined reasons."""
    order: list[tuple[ActionKind, str]] = []
    groups: dict[tuple[ActionKind, str], list[Action]] = {}
    for a in actions:
        key = (a.kind, a.target)
        if key not in groups:
            order.append(key)
            groups[key] = []
        groups[key].append(a)
    out = []
    for key in order:
        same = groups[key]
        first = same[0]
        if len(same) == 1:
            out.append(first)
            continue
        reasons = list(dict.fromkeys(a.reason for a in same))
        evidence = tuple(dict.fromkeys(e for a in same for e in a.evidence))
        reason = "; ".join(reasons)
        if first.kind is ActionKind.DRAIN_NODE:
            out.append(drain_node(first.target, reason, evidence))
        else:
            out.append(
                Action(first.kind, first.target, reason, evidence, first.impact, first.commands, first.port)
            )
    return out
