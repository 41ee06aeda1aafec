"""Leaf and spine uplinks: a switch with fewer uplinks than its peers (``missing_link``) or with
its uplinks spread unevenly over the switches above it where its peers spread theirs evenly
(``uplink_imbalance``). Peers are the switches of one peer group (Classification.peer_key).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import compress
from operator import itemgetter

from topology.anomaly import Anomaly, Severity
from topology.classify import Classification, Role, far_guids
from topology.model import Fabric, Guid, PortRef
from topology.wiring_peers import _label, _mode, _PeerKey


def _higher_tier(cls: Classification, section: int, tier: int) -> set[Guid]:
    """The far ends that make a port of a switch of ``section`` and ``tier`` an uplink: switches
    of its section above ``tier``, and for a side group, the switches of other sections (its
    way out; see topology.tiers.count_uplinks)."""
    side = cls.sections[section].kind == "side" if cls.sections else False
    return {
        g
        for g, c in cls.nodes.items()
        if (c.section == section and (c.tier or 0) > tier) or (side and c.section != section and c.tier != 0)
    }


def _upper_counts(fabric: Fabric, sw: Guid, above: set[Guid]) -> Counter[Guid]:
    """Cables from ``sw`` per switch above it (C-level: this runs over every switch port)."""
    return Counter(filter(above.__contains__, far_guids(fabric, sw)))


def _cabled_up_by_tier(cls: Classification) -> dict[_PeerKey, list[Guid]]:
    """Switches with at least one uplink, per peer group (Classification.peer_key): the peers a
    switch is judged against are those of its own section (the compute fabric, a side group) and
    tier; a service leaf's are service leaves (topology.hostroles), a director board's are boards
    (a board's uplinks include its chassis's inside wiring: topology.chassis)."""
    by_tier: dict[_PeerKey, list[Guid]] = defaultdict(list)
    switch = Role.SWITCH  # read once: an enum member's lookup costs over 100 ns, per node here
    for g, c in cls.nodes.items():
        if c.role is switch and c.tier is not None and cls.uplinks.get(g, 0) > 0:
            by_tier[cls.peer_key(g)].append(g)
    return by_tier


def usual_uplinks(cls: Classification) -> dict[_PeerKey, int]:
    """Per peer group (Classification.peer_key: section, tier, service leaf or not, director board
    or not), the uplink count most of its cabled-up switches have (the design).

    Groups with fewer than 3 such switches are left out: too few peers to tell a fault from a
    design. A switch of a listed group with fewer uplinks is short of cables (``missing_link``).
    """
    return _usual_of(cls, _cabled_up_by_tier(cls))


def _usual_of(cls: Classification, by_tier: dict[_PeerKey, list[Guid]]) -> dict[_PeerKey, int]:
    """usual_uplinks over the peer groups ``by_tier`` (_cabled_up_by_tier) already made."""
    return {
        key: _mode([cls.uplinks[g] for g in switches])
        for key, switches in by_tier.items()
        if len(switches) >= 3
    }


def uplink_anomalies(fabric: Fabric, cls: Classification) -> list[Anomaly]:
    out: list[Anomaly] = []
    by_tier = _cabled_up_by_tier(cls)  # one pass over the nodes serves both
    usual = _usual_of(cls, by_tier)
    for key, switches in sorted(by_tier.items()):
        if key not in usual:
            continue  # too few peers to tell a fault from a design
        expected = usual[key]
        section, tier, _, _ = key
        assert tier is not None
        above = _higher_tier(cls, section, tier)
        usual_ports: set[int] | None = None  # made for the first switch short of uplinks
        upper_counts = {g: _upper_counts(fabric, g, above) for g in switches}
        peers_even = _peers_even(upper_counts)
        for g in sorted(switches, key=lambda g: _label(cls, g)):
            n = cls.uplinks[g]
            uppers = upper_counts[g]
            if n < expected:
                if usual_ports is None:
                    usual_ports = _usual_uplink_ports(fabric, switches, above)
                linked = {p for p, _, _ in fabric.neighbours(g)}
                free = sorted(p for p in usual_ports if p not in linked)
                usual_per_upper = _usual_per_upper(g, upper_counts)
                short_of = sorted(up for up, want in usual_per_upper.items() if uppers.get(up, 0) < want)
                out.append(
                    Anomaly(
                        "missing_link",
                        Severity.ERROR if n * 4 < expected * 3 else Severity.WARNING,
                        (g, *short_of),
                        tuple(PortRef(g, p) for p in free),
                        f"{_label(cls, g)}{' (service leaf)' if key[2] else ''} has {n} uplinks "
                        f"where its {len(switches) - 1} peers have {expected}"
                        + _shortfall(cls, uppers, usual_per_upper)
                        + (f"; uncabled uplink ports: {', '.join(map(str, free))}" if free else ""),
                    )
                )
            elif n == expected and len(uppers) > 1:
                spread = sorted(uppers.values())
                if spread[-1] - spread[0] > 1 and peers_even:
                    out.append(
                        Anomaly(
                            "uplink_imbalance",
                            Severity.WARNING,
                            (g, *sorted(uppers)),
                            (),
                            f"{_label(cls, g)} spreads its {n} uplinks unevenly:"
                            + _spread_note(cls, uppers)
                            + "; its peers spread theirs evenly",
                        )
                    )
    return out


def uplinks_by_peers(fabric: Fabric, cls: Classification, g: Guid) -> tuple[Counter[Guid], dict[Guid, int]]:
    """Switch ``g``'s cables per upper switch, and the count its own peers have to each (what
    the ``missing_link`` and ``uplink_imbalance`` checks compare; empty when ``g`` has no peers)."""
    c = cls.nodes.get(g)
    if c is None or c.tier is None:
        return Counter(), {}
    switches = _cabled_up_by_tier(cls).get(cls.peer_key(g), [])
    above = _higher_tier(cls, c.section, c.tier)
    counts = {h: _upper_counts(fabric, h, above) for h in switches}
    mine = counts.get(g, _upper_counts(fabric, g, above))
    counts[g] = mine
    return mine, _usual_per_upper(g, counts)


def _usual_per_upper(g: Guid, upper_counts: dict[Guid, Counter[Guid]]) -> dict[Guid, int]:
    """Cables per upper switch that ``g``'s own peers have: peers are the switches reaching mostly
    the same upper switches (the leaves of one pod, the spines of one plane), so a leaf of pod 1
    is never said to lack cables to the spines of pod 2."""
    mine = set(upper_counts[g])
    peers = [
        counts
        for h, counts in upper_counts.items()
        if h != g and mine and 2 * len(mine & set(counts)) >= len(mine)
    ]
    per_upper: dict[Guid, list[int]] = defaultdict(list)
    for counts in peers:
        for up, cnt in counts.items():
            per_upper[up].append(cnt)
    return {up: _mode(c) for up, c in per_upper.items() if 2 * len(c) > len(peers)}


def _shortfall(cls: Classification, uppers: Counter[Guid], usual: dict[Guid, int]) -> str:
    short = [
        f"{_label(cls, up)} ({uppers.get(up, 0)} of {want})"
        for up, want in sorted(usual.items(), key=lambda kv: _label(cls, kv[0]))
        if uppers.get(up, 0) < want and (uppers.get(up, 0) > 0 or want > 0)
    ]
    return f"; short of cables to {', '.join(short)}" if short else ""


def _spread_note(cls: Classification, uppers: Counter[Guid]) -> str:
    if not uppers:
        return ""
    parts = ", ".join(
        f"{_label(cls, g)}: {n}" for g, n in sorted(uppers.items(), key=lambda kv: _label(cls, kv[0]))
    )
    return f" ({parts})"


def _peers_even(upper_counts: dict[Guid, Counter[Guid]]) -> bool:
    even = 0
    for counts in upper_counts.values():
        vals = counts.values()
        if vals and max(vals) - min(vals) <= 1:
            even += 1
    return even * 2 > len(upper_counts)


def _usual_uplink_ports(fabric: Fabric, switches: list[Guid], above: set[Guid]) -> set[int]:
    """Uplink port numbers used by most peers (cabling plans reuse the same ports)."""
    counts: Counter[int] = Counter()
    for g in switches:
        near = fabric.neighbours(g)
        counts.update(compress(map(_PORT, near), map(above.__contains__, far_guids(fabric, g))))
    return {p for p, n in counts.items() if n * 2 > len(switches)}


_PORT = itemgetter(0)
