"""Repairs for cables that are missing, down or spread unevenly, and for HCAs without a host name.

Each action names both ends of the cable where the fabric's own peers tell them, and says which
end is not known where they do not; nothing is guessed.

* **Missing uplink** (a switch's ``missing_link``): ``connect_cable`` per upper switch it is short
  of. The switch's end is the free port its peers use for that upper switch; the upper switch's end
  is its free port where most of the switch's other upper switches of that tier take its cables
  (cabling plans give a lower switch one port number on every upper switch), else the upper
  switch's uncabled port(s) in the block of its ports (as many as each peer has there) that holds
  the switch's other cables (a spine with all its uplinks on one core: its ports 9-16 hold it,
  port 9 is free); where no one block is told, that end is said to be unknown.
* **Missing rail HCA** (a host's ``missing_link``): ``connect_cable`` between the rail's leaf port
  (the port the host uses on its other rail leaves) and the HCA (the adapter and port the other
  hosts' HCAs of that rail use); a dead card is named as the other cause.
* **Down port** (``down_port``): ``replace_cable`` (reseat first) for the switch port; its far end
  is not in the discovery (the link is down): it is named from ibfab's link history when a
  collection saw the link (:class:`LastPeer`, with when), else the action says it is not known. A
  port a missing uplink's action already names is not repeated.
* **Uneven uplinks** (``uplink_imbalance``): ``move_cables`` naming the switch, each upper switch
  with more and fewer cables than its peers', and each move.
* **Unnamed HCA** (``unnamed_hca``): ``set_node_description``, a naming fix on the host.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from fabric.advise.actions import Action, ActionKind, Command
from fabric.advise.candidates import node_label
from fabric.core.units import utc_time
from topology.anomaly import Anomaly
from topology.classify import Classification, Role
from topology.model import Fabric, Guid, NodeKind, PortRef
from topology.unnamed import likely_machines
from topology.wiring import uplinks_by_peers


@dataclasses.dataclass(frozen=True, slots=True)
class LastPeer:
    """A down port's peer as ibfab's link history last saw it (the store's link events)."""

    far: PortRef
    name: str  # the far node as it was named then (today's name when it is still discovered)
    time: float  # epoch seconds of the event
    kind: str  # "down" or "up": the event that named it


def cabling_actions(
    fabric: Fabric,
    cls: Classification,
    anomalies: Sequence[Anomaly],
    last_peers: Mapping[PortRef, LastPeer] | None = None,
) -> list[Action]:
    """The repair of every missing, down and unevenly spread cable and every unnamed HCA. A down
    port a missing cable's action already names joins that action as evidence."""
    missing = missing_cable_actions(fabric, cls, anomalies)
    named = {a.port for a in missing if a.port is not None}
    downs = {an.ports[0]: an for an in anomalies if an.kind == "down_port" and an.ports}
    missing = [
        a
        if a.port not in downs
        else dataclasses.replace(a, evidence=(*a.evidence, f"discovery: {downs[a.port].message}"))
        for a in missing
    ]
    return [
        *missing,
        *down_port_actions(fabric, cls, anomalies, named, last_peers),
        *rebalance_actions(fabric, cls, anomalies),
        *name_hca_actions(fabric, cls, anomalies),
    ]


def _taken(fabric: Fabric, guid: Guid) -> set[int]:
    return {p for p, _, _ in fabric.neighbours(guid)}


def _switch_peers(fabric: Fabric, cls: Classification, low: Guid) -> list[Guid]:
    """Switches of ``low``'s section and tier reaching at least half of its upper switches."""
    c = cls.nodes[low]
    mine = _uppers(fabric, cls, low)
    out = []
    for g, o in cls.nodes.items():
        if g == low or o.role is not Role.SWITCH or (o.section, o.tier) != (c.section, c.tier):
            continue
        if mine and 2 * len(mine & _uppers(fabric, cls, g)) >= len(mine):
            out.append(g)
    return out


def _uppers(fabric: Fabric, cls: Classification, g: Guid) -> set[Guid]:
    tier = cls.nodes[g].tier or 0
    return {
        far.guid
        for _, far, _ in fabric.neighbours(g)
        if (fc := cls.nodes.get(far.guid)) is not None and (fc.tier or 0) > tier
    }


def _peer_upper_at(fabric: Fabric, peers: Sequence[Guid], port: int) -> tuple[Guid | None, int, int]:
    """The switch most of ``peers`` reach on ``port``: (it, how many do, how many peers there are)."""
    seen: Counter[Guid] = Counter()
    for g in peers:
        for p, far, _ in fabric.neighbours(g):
            if p == port and fabric.nodes[far.guid].kind is NodeKind.SWITCH:
                seen[far.guid] += 1
    if not seen:
        return None, 0, len(peers)
    up, n = seen.most_common(1)[0]
    return (up if 2 * n > len(peers) else None), n, len(peers)


def _far_ports(fabric: Fabric, cls: Classification, low: Guid, up: Guid, need: int) -> list[int] | None:
    """``up``'s free ports where most of ``low``'s other upper switches of ``up``'s tier take
    ``low``'s cables; None unless exactly ``need`` ports qualify."""
    tier = cls.nodes[up].tier
    others = {
        far.guid
        for _, far, _ in fabric.neighbours(low)
        if far.guid != up and (fc := cls.nodes.get(far.guid)) is not None and fc.tier == tier
    }
    votes: Counter[int] = Counter()
    for o in others:
        votes.update({p for p, far, _ in fabric.neighbours(o) if far.guid == low})
    free = [q for q, n in votes.items() if 2 * n > len(others) and q not in _taken(fabric, up)]
    return sorted(free) if len(free) == need else None


def _block_ports(
    fabric: Fabric, cls: Classification, low: Guid, up: Guid, need: int, size: int
) -> tuple[list[int], int, int] | None:
    """``up``'s uncabled ports in the block of ``size`` ports (the cables each of ``low``'s peers
    has to ``up``) that holds ``low``'s other cables: (the ports, the block's first and last port)
    when one block fits and exactly ``need`` of its ports are uncabled, else None.

    The block lies between the nearest ports holding other switches' cables (or ``up``'s first
    and last port) and starts where the other switches' blocks of ``size`` on ``up`` start
    (modulo ``size``); nothing is named unless they agree and exactly one block fits. A spine with
    all its uplinks on one core: the core's ports 1-8 hold one spine, 9-16 the next; port 9 is free."""
    mine = sorted(p for p, far, _ in fabric.neighbours(up) if far.guid == low)
    if not mine or size < len(mine) + need:
        return None
    on_up = [(p, far.guid) for p, far, _ in fabric.neighbours(up)]
    others = [p for p, g in on_up if g != low]
    lo = max((p for p in others if p < mine[0]), default=0) + 1
    hi = min((p for p in others if p > mine[-1]), default=fabric.nodes[up].nports + 1) - 1
    if any(lo <= p <= hi for p in others):
        return None  # another switch's cable among them: no block of its own
    # the blocks of this size that switches of low's tier have on up: where they start, modulo it
    tier = cls.nodes[low].tier
    blocks: dict[Guid, list[int]] = {}
    for p, g in on_up:
        if g != low and (c := cls.nodes.get(g)) is not None and c.tier == tier:
            blocks.setdefault(g, []).append(p)
    phases = {min(ps) % size for ps in blocks.values() if len(ps) == size and max(ps) - min(ps) == size - 1}
    if len(phases) != 1:
        return None  # no regular blocks to go by
    (phase,) = phases
    starts = [
        a for a in range(max(lo, mine[-1] - size + 1), min(mine[0], hi - size + 1) + 1) if a % size == phase
    ]
    if len(starts) != 1:
        return None
    first, last = starts[0], starts[0] + size - 1
    taken = _taken(fabric, up)
    free = [q for q in range(first, last + 1) if q not in taken]
    return (free, first, last) if len(free) == need else None


def _end(name: str, port: int | None) -> str:
    return f"{name} port {port}" if port is not None else f"{name} (which port is not known)"


def _ends(name: str, ports: Sequence[int], count: int) -> str:
    """``leaf port 5``, ``leaf ports 33, 34`` or the end said to be unknown."""
    if count == 1:
        return _end(name, ports[0] if ports else None)
    if not ports:
        return f"{name} (which ports are not known)"
    return f"{name} ports {', '.join(map(str, ports))}"


def _connect(
    target: str,
    near: str,
    far: str,
    reason: str,
    evidence: tuple[str, ...],
    ref: PortRef | None,
    cables: int = 1,
) -> Action:
    return Action(
        ActionKind.CONNECT_CABLE,
        target,
        reason,
        evidence,
        "none while it is missing; the link comes up when cabled",
        (
            Command(
                "operator",
                "apply",
                f"check the {'cable' if cables == 1 else f'{cables} cables'} between {near} and {far}: "
                f"plug {'it' if cables == 1 else 'each'} in at both ends, else reseat it; "
                "if it stays dark, replace the cable and its transceivers",
            ),
        ),
        ref,
    )


# -- missing cables -------------------------------------------------------------------------------
def missing_cable_actions(fabric: Fabric, cls: Classification, anomalies: Iterable[Anomaly]) -> list[Action]:
    out: list[Action] = []
    for an in anomalies:
        if an.kind != "missing_link" or not an.nodes:
            continue
        # A host's missing rail names its HCAs; a switch short of uplinks names switches only.
        if any((c := cls.nodes.get(g)) is not None and c.role is not Role.SWITCH for g in an.nodes):
            out += _missing_rail(fabric, cls, an)
        else:
            out += _missing_uplinks(fabric, cls, an)
    return out


def _missing_uplinks(fabric: Fabric, cls: Classification, an: Anomaly) -> list[Action]:
    low = an.nodes[0]
    name = node_label(fabric, cls, low)
    have, want = uplinks_by_peers(fabric, cls, low)
    short = {up: want[up] - have.get(up, 0) for up in an.nodes[1:] if want.get(up, 0) > have.get(up, 0)}
    free = sorted(p.port for p in an.ports if p.guid == low)
    peers = _switch_peers(fabric, cls, low)
    # Each free port goes to the upper switch most peers reach on that port number.
    near: dict[Guid, list[int]] = {up: [] for up in short}
    notes: dict[Guid, list[str]] = {up: [] for up in short}
    for port in free:
        up, n, of = _peer_upper_at(fabric, peers, port)
        if up is not None and up in near:
            near[up].append(port)
            notes[up].append(f"peers: port {port} goes to {node_label(fabric, cls, up)} on {n} of {of} peers")
    if len(short) == 1 and not any(near.values()) and len(free) == next(iter(short.values())):
        near = {up: free for up in short}  # one upper switch short and as many free uplink ports
    out = []
    for up, missing in sorted(short.items(), key=lambda kv: node_label(fabric, cls, kv[0])):
        up_name = node_label(fabric, cls, up)
        lows = near[up] if len(near[up]) == missing else []
        highs = _far_ports(fabric, cls, low, up, missing) or []
        evidence = [f"discovery: {an.message}", *notes[up]]
        if highs:
            evidence.append(
                f"peers: {name}'s other upper switches of {up_name}'s tier take its cables on port "
                + ", ".join(map(str, highs))
            )
        elif (block := _block_ports(fabric, cls, low, up, missing, want[up])) is not None:
            highs, first, last = block
            evidence.append(
                f"{up_name}: its ports {first}-{last} (a block of {want[up]}, as {name}'s peers have there) "
                f"hold {name}'s other cables and no other switch's; uncabled: port {', '.join(map(str, highs))}"
            )
        # Several cables: both ends' ports are named, which pairs with which is not claimed.
        near_end = _ends(name, lows, missing)
        far_end = _ends(up_name, highs, missing)
        target = (
            f"{name}:{lows[0]} <-> {up_name}:{highs[0]}"
            if missing == 1 and lows and highs
            else f"{name} <-> {up_name}"
        )
        what = "a cable" if missing == 1 else f"{missing} cables"
        out.append(
            _connect(
                target,
                near_end,
                far_end,
                f"{name} lacks {what} to {up_name} that its peers have",
                tuple(evidence),
                PortRef(low, lows[0]) if lows else None,
                missing,
            )
        )
    return out


def _missing_rail(fabric: Fabric, cls: Classification, an: Anomaly) -> list[Action]:
    leaf = next((g for g in an.nodes if (c := cls.nodes.get(g)) is not None and c.role is Role.SWITCH), None)
    hosts = {c.host for g in an.nodes if (c := cls.nodes.get(g)) is not None and c.host}
    if leaf is None or len(hosts) != 1:
        return []
    host = hosts.pop()
    rail = cls.nodes[leaf].rail
    if rail is None:
        return []
    leaf_name = node_label(fabric, cls, leaf)
    port = an.ports[0].port if an.ports else None
    evidence = [f"discovery: {an.message}"]
    if port is not None and port in _taken(fabric, leaf):
        evidence.append(f"{leaf_name} port {port}, the port {host} uses on its other rail leaves, is taken")
        port = None
    # What the other hosts' HCAs of this rail are called, and which of their ports is cabled.
    adapters: Counter[str] = Counter()
    hca_ports: Counter[int] = Counter()
    for g, c in cls.nodes.items():
        if c.role is Role.COMPUTE and c.rail == rail and c.adapter:
            adapters[c.adapter] += 1
            hca_ports.update(p for p, far, _ in fabric.neighbours(g) if far.guid == c.leaf)
    adapter = adapters.most_common(1)[0][0] if adapters else None
    hca_port = hca_ports.most_common(1)[0][0] if hca_ports else None
    hca = f"{host} {adapter}" if adapter else f"{host}'s rail-{rail} HCA"
    if adapter:
        evidence.append(
            f"peers: {adapters[adapter]} other hosts' rail-{rail} HCAs are {adapter}"
            + (f", cabled on their port {hca_port}" if hca_port is not None else "")
        )
    target = f"{leaf_name}:{port if port is not None else '?'} <-> {hca}:{hca_port or '?'}"
    act = _connect(
        target,
        _end(leaf_name, port),
        _end(hca, hca_port),
        f"{host} has no HCA on rail {rail}: a missing or unplugged cable, or a dead HCA "
        f"(if the cable is in and the link stays dark, check the card on {host} with ibstat)",
        tuple(evidence),
        PortRef(leaf, port) if port is not None else None,
    )
    return [act]


# -- down ports -----------------------------------------------------------------------------------
def down_port_actions(
    fabric: Fabric,
    cls: Classification,
    anomalies: Iterable[Anomaly],
    covered: Iterable[PortRef] = (),
    last_peers: Mapping[PortRef, LastPeer] | None = None,
) -> list[Action]:
    """A reseat/replace of the cable on each down port (``covered`` ports are skipped: another
    action names their cable); its far end from ``last_peers`` where the history has it."""
    skip = set(covered)
    out = []
    for an in anomalies:
        if an.kind != "down_port" or not an.ports or an.ports[0] in skip:
            continue
        ref = an.ports[0]
        name = node_label(fabric, cls, ref.guid)
        evidence = [f"discovery: {an.message}"]
        up, n, of = _peer_upper_at(fabric, _switch_peers(fabric, cls, ref.guid), ref.port)
        if up is not None:
            evidence.append(
                f"peers: port {ref.port} goes to {node_label(fabric, cls, up)} on {n} of {of} peers"
            )
        last = (last_peers or {}).get(ref)
        if last is None:
            far = "its far end (not known: the link is down, so discovery cannot see it; trace the cable)"
        else:
            far = f"{last.name} port {last.far.port}"
            evidence.append(
                f"history: its peer was {far} when ibfab saw the link go {last.kind} at {utc_time(last.time)}"
            )
        out.append(
            Action(
                ActionKind.REPLACE_CABLE,
                f"{name}:{ref.port}",
                "port is down where its peers have that port cabled: reseat the cable, else replace it",
                tuple(evidence),
                "the link is out of service while the cable or transceivers are swapped",
                (
                    Command(
                        "operator",
                        "apply",
                        f"reseat and clean both ends ({name} port {ref.port} and {far}); if it stays "
                        "down, replace the cable and its transceivers",
                    ),
                ),
                ref,
            )
        )
    return out


# -- uneven uplinks -------------------------------------------------------------------------------
def rebalance_actions(fabric: Fabric, cls: Classification, anomalies: Iterable[Anomaly]) -> list[Action]:
    out = []
    for an in anomalies:
        if an.kind != "uplink_imbalance" or not an.nodes:
            continue
        low = an.nodes[0]
        name = node_label(fabric, cls, low)
        have, want = uplinks_by_peers(fabric, cls, low)
        over = {up: have[up] - w for up, w in want.items() if have.get(up, 0) > w}
        under = {up: w - have.get(up, 0) for up, w in want.items() if have.get(up, 0) < w}
        if not over or not under:
            continue
        peers = _switch_peers(fabric, cls, low)
        moves = _moves(fabric, cls, low, peers, over, under)
        spread = ", ".join(
            f"{node_label(fabric, cls, up)}: {have.get(up, 0)} of {w}"
            for up, w in sorted(want.items(), key=lambda kv: node_label(fabric, cls, kv[0]))
        )
        lack = ", ".join(
            node_label(fabric, cls, up) for up in sorted(under, key=lambda g: node_label(fabric, cls, g))
        )
        out.append(
            Action(
                ActionKind.MOVE_CABLES,
                name,
                f"uplinks spread unevenly ({spread}, as its peers have them): {lack} "
                f"{'lacks' if len(under) == 1 else 'lack'} links; move {len(moves)} cable(s)",
                (f"discovery: {an.message}",),
                "each moved link is down while recabled",
                tuple(Command("operator", "apply", m) for m in moves),
            )
        )
    return out


def _moves(
    fabric: Fabric,
    cls: Classification,
    low: Guid,
    peers: Sequence[Guid],
    over: dict[Guid, int],
    under: dict[Guid, int],
) -> list[str]:
    name = node_label(fabric, cls, low)
    # The cables to move: on the ports whose number the peers use for an upper switch short here.
    cables = sorted((p, far) for p, far, _ in fabric.neighbours(low) if far.guid in over)
    left = dict(over)
    todo = [up for up in sorted(under, key=lambda g: node_label(fabric, cls, g)) for _ in range(under[up])]
    out = []
    for up in todo:
        up_name = node_label(fabric, cls, up)
        pick = next(
            (
                (p, far)
                for p, far in cables
                if left.get(far.guid, 0) > 0 and _peer_upper_at(fabric, peers, p)[0] == up
            ),
            None,
        ) or next(((p, far) for p, far in cables if left.get(far.guid, 0) > 0), None)
        if pick is None:
            break
        cables.remove(pick)
        left[pick[1].guid] -= 1
        p, far = pick
        dest = _far_ports(fabric, cls, low, up, under[up])
        out.append(
            f"move the cable on {name} port {p} from {node_label(fabric, cls, far.guid)} port {far.port} "
            f"to {_end(up_name, dest[0] if dest and under[up] == 1 else None)}"
        )
    return out


# -- unnamed HCAs ---------------------------------------------------------------------------------
def name_hca_actions(fabric: Fabric, cls: Classification, anomalies: Iterable[Anomaly]) -> list[Action]:
    """One ``set_node_description`` per machine: the unnamed HCAs the evidence puts in one machine
    (its adapter card, or the port its HCAs share on the unit's leaves) are named by one fix on
    that machine; an HCA with no such evidence is its own target."""
    likely = likely_machines(fabric, cls)
    groups: dict[str, list[Anomaly]] = {}
    for an in anomalies:
        if an.kind == "unnamed_hca" and an.nodes:
            g = an.nodes[0]
            groups.setdefault(likely[g].machine if g in likely else g, []).append(an)
    out = []
    for target, found in groups.items():
        guids = [g for an in found for g in an.nodes]  # discovery gives one anomaly per machine
        hcas = f"HCA {guids[0]}" if len(guids) == 1 else f"its {len(guids)} HCAs {', '.join(guids)}"
        where = f"on the host that holds HCA {guids[0]}" if target == guids[0] else f"on {target} ({hcas})"
        out.append(
            Action(
                ActionKind.SET_NODE_DESCRIPTION,
                target,
                (
                    "HCA has no host name in its node description: health, sweeps and drains cannot "
                    "map it to a host until it has one"
                    if len(guids) == 1
                    else f"{len(guids)} HCAs of one machine have no host name in their node descriptions: "
                    "health, sweeps and drains cannot map them to a host until they have one"
                ),
                tuple(f"discovery: {an.message}" for an in found),
                "none (a name only)",
                (
                    Command(
                        "operator",
                        "apply",
                        f"{where}: systemctl enable --now rdma-ndd "
                        "(rdma-core; it keeps every device's node description as '<hostname> <device>')",
                    ),
                    Command(
                        "operator",
                        "apply",
                        'or once, by hand: echo -n "$(hostname -s) DEVICE" > '
                        "/sys/class/infiniband/DEVICE/node_desc   # DEVICE: the mlx5_N with this node GUID "
                        "(ibstat)",
                    ),
                ),
            )
        )
    return out
