"""Wiring anomalies an operator must fix, found by comparing every element with its peers.

Nothing is compared with a fixed design: a leaf is judged against the other leaves of its unit,
a link against links of the same kind (tier pair and hardware), a host against the rails of its
unit. That keeps real fabrics with their own conventions free of false alarms.

Kinds: ``rail_miswire``, ``missing_link``, ``degraded_link``, ``uplink_imbalance``,
``down_port``, ``unnamed_hca``; ``missing_hca`` (topology.hostfaults), ``unconfigured_ports``,
``duplicate_guid``, ``duplicate_lid`` (topology.addressing).
"""

from __future__ import annotations

import operator
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter

from topology._speed import gc_paused
from topology.addressing import addressing_anomalies
from topology.anomaly import Anomaly, Severity
from topology.classify import Classification, NodeClass, Role, far_guids
from topology.hostfaults import missing_hcas
from topology.model import SPEED_ORDER, SPEED_RANK, Fabric, Guid, Link, PortRef, link_gbps


def find_anomalies(fabric: Fabric, cls: Classification) -> list[Anomaly]:
    found: list[Anomaly] = []
    with gc_paused():  # many short-lived counters and sets, no cycles (see topology._speed)
        found += _rail_anomalies(fabric, cls)
        found += _uplink_anomalies(fabric, cls)
        found += _degraded_links(fabric, cls)
        found += _down_ports(fabric, cls)
        found += missing_hcas(fabric, cls)
        found += addressing_anomalies(fabric, cls)
    order = {s: i for i, s in enumerate(reversed(list(Severity)))}
    return sorted(found, key=lambda a: (order[a.severity], a.kind, a.message))


def _label(cls: Classification, guid: Guid) -> str:
    c = cls.nodes.get(guid)
    return c.name if c is not None else str(guid)


# -- rails: miswires, hosts missing a rail, unnamed HCAs -----------------------------------------
def _rail_anomalies(fabric: Fabric, cls: Classification) -> list[Anomaly]:
    out: list[Anomaly] = []
    leaf_of_rail: dict[tuple[int, int], Guid] = {}
    for g in cls.leaves():
        c = cls.nodes[g]
        if c.group is not None and c.rail is not None:
            leaf_of_rail.setdefault((c.group, c.rail), g)
    explained_unnamed: dict[Guid, str] = {}
    if cls.rail_optimized:
        spreads = _spreads_by_adapters(cls)
        for host, hcas in cls.hosts.items():
            if cls.is_service_host(host):
                continue  # not a rail member: a login or storage server has its own design
            members = [cls.nodes[g] for g in hcas]
            group = _host_group(members)
            if group is None:
                continue
            rails = cls.groups[group].rails
            # Only hosts cabled like rail members are checked; a management or UFM host with
            # two adapters is not a DGX missing six rails.
            if len(members) < 2 or 4 * len(members) < 3 * len(rails):
                continue
            if len({c.leaf for c in members}) == 1:
                # All on one leaf: not a rail fault, and only news when its peers spread theirs.
                out += _single_leaf_host(fabric, cls, host, members, spreads)
                continue
            out += _miswires(fabric, cls, host, members)
            out += _missing_rails(fabric, cls, host, members, rails, group, leaf_of_rail, explained_unnamed)
    from topology.unnamedfaults import unnamed_anomalies  # it builds this module's Anomaly

    out += unnamed_anomalies(fabric, cls, explained_unnamed)
    return out


def _spreads_by_adapters(cls: Classification) -> dict[tuple[int | None, ...], tuple[int, int]]:
    """Per set of HCA indexes (hosts built alike): (hosts spread over several leaves, hosts)."""
    out: dict[tuple[int | None, ...], list[int]] = defaultdict(lambda: [0, 0])
    for hcas in cls.hosts.values():
        members = [cls.nodes[g] for g in hcas]
        if len(members) >= 2:
            counts = out[_adapter_set(members)]
            counts[0] += len({c.leaf for c in members}) > 1
            counts[1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def _adapter_set(members: list[NodeClass]) -> tuple[int | None, ...]:
    return tuple(sorted((c.hca_index for c in members), key=lambda i: -1 if i is None else i))


def _single_leaf_host(
    fabric: Fabric,
    cls: Classification,
    host: str,
    members: list[NodeClass],
    spreads: dict[tuple[int | None, ...], tuple[int, int]],
) -> list[Anomaly]:
    """A rail-sized host with every HCA on one leaf, where most hosts built like it (the same
    HCA indexes, at least three of them) spread theirs over the rail leaves."""
    spread, alike = spreads.get(_adapter_set(members), (0, 0))
    if alike < 3 or 2 * spread <= alike:
        return []
    leaf = members[0].leaf
    assert leaf is not None
    ports = sorted(p for c in members if (p := fabric.switch_port_of(c.guid)) is not None)
    return [
        Anomaly(
            "single_leaf_host",
            Severity.WARNING,
            tuple(sorted({c.guid for c in members} | {leaf})),
            tuple(ports),
            f"{host} has all {len(members)} HCAs on {_label(cls, leaf)} (ports "
            + ", ".join(str(p.port) for p in ports)
            + f") where {spread} of {alike} hosts with the same adapters spread theirs over the rail leaves: "
            "its rails share one leaf; recable each HCA to its rail's leaf",
        )
    ]


def _host_group(members: list[NodeClass]) -> int | None:
    """The group most of a host's HCAs are in (a tie: the first seen). Counted on the list, not
    with a Counter: a host has a few HCAs, and this runs once per host."""
    groups = [c.group for c in members if c.group is not None]
    return max(dict.fromkeys(groups), key=groups.count) if groups else None


def _miswires(fabric: Fabric, cls: Classification, host: str, members: list[NodeClass]) -> list[Anomaly]:
    wrong = [
        c
        for c in members
        if c.rail is not None and c.leaf is not None and cls.nodes[c.leaf].rail not in (None, c.rail)
    ]
    if not wrong:
        return []
    parts = []
    ports: list[PortRef] = []
    for c in sorted(wrong, key=lambda c: c.hca_index or 0):
        assert c.leaf is not None
        leaf = cls.nodes[c.leaf]
        port = fabric.switch_port_of(c.guid)
        if port is not None:
            ports.append(port)
        parts.append(
            f"{c.adapter} (rail {c.rail}) is cabled to {leaf.name}"
            + (f" port {port.port}" if port else "")
            + f" (rail {leaf.rail})"
        )
    fix = "swap these cables" if len(wrong) > 1 else "move it to its rail's leaf"
    return [
        Anomaly(
            "rail_miswire",
            Severity.ERROR,
            tuple(sorted({c.guid for c in wrong} | {p.guid for p in ports})),
            tuple(sorted(ports)),
            f"{host}: " + "; ".join(parts) + f": {fix}",
        )
    ]


def _missing_rails(
    fabric: Fabric,
    cls: Classification,
    host: str,
    members: list[NodeClass],
    rails: tuple[int, ...],
    group: int,
    leaf_of_rail: dict[tuple[int, int], Guid],
    explained_unnamed: dict[Guid, str],
) -> list[Anomaly]:
    present = {c.rail for c in members}
    missing = [
        (rail, leaf) for rail in rails if rail not in present and (leaf := leaf_of_rail.get((group, rail)))
    ]
    if not missing:
        return []
    out: list[Anomaly] = []
    # Rail leaves are cabled alike: the host's usual port number on its other rail leaves.
    usual = Counter(p.port for c in members if (p := fabric.switch_port_of(c.guid)) is not None)
    port_no = usual.most_common(1)[0][0] if usual else None
    for rail, leaf in missing:
        there = "nothing answers at"
        if port_no is not None:
            peer = next((far for p, far, _ in fabric.neighbours(leaf) if p == port_no), None)
            if peer is not None and cls.nodes.get(peer.guid, None) is not None:
                pc = cls.nodes[peer.guid]
                if pc.role is Role.UNNAMED:
                    explained_unnamed[peer.guid] = (
                        f"probably {host}'s rail {rail} HCA (where {host} lacks one: port {port_no}"
                        " of its unit's rail leaves)"
                    )
                    continue
                there = f"{pc.name} answers at"
        where = f"{_label(cls, leaf)} port {port_no}" if port_no is not None else _label(cls, leaf)
        idx = cls.rail_indexes[rail]
        out.append(
            Anomaly(
                "missing_link",
                Severity.ERROR,
                tuple(sorted({c.guid for c in members} | {leaf})),
                (PortRef(leaf, port_no),) if port_no is not None else (),
                f"{host} has no HCA on rail {rail} (HCA index {idx}): {there} {where}; "
                "a missing cable, a dead HCA or a link that is down",
            )
        )
    return out


# -- leaf and spine uplinks -----------------------------------------------------------------------
def _higher_tier(cls: Classification, section: int, tier: int) -> set[Guid]:
    """The far ends that make a port of a switch of ``section`` and ``tier`` an uplink: switches
    of its section above ``tier``, and for a side group, the switches of other sections (its
    way out; see topology.classify.count_uplinks)."""
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
    for g, c in cls.nodes.items():
        if c.role is Role.SWITCH and c.tier is not None and cls.uplinks.get(g, 0) > 0:
            by_tier[cls.peer_key(g)].append(g)
    return by_tier


_PeerKey = tuple[int, int | None, bool, bool]


def usual_uplinks(cls: Classification) -> dict[_PeerKey, int]:
    """Per peer group (Classification.peer_key: section, tier, service leaf or not, director board
    or not), the uplink count most of its cabled-up switches have (the design).

    Groups with fewer than 3 such switches are left out: too few peers to tell a fault from a
    design. A switch of a listed group with fewer uplinks is short of cables (``missing_link``).
    """
    return {
        key: _mode([cls.uplinks[g] for g in switches])
        for key, switches in _cabled_up_by_tier(cls).items()
        if len(switches) >= 3
    }


def _uplink_anomalies(fabric: Fabric, cls: Classification) -> list[Anomaly]:
    out: list[Anomaly] = []
    usual = usual_uplinks(cls)
    for key, switches in sorted(_cabled_up_by_tier(cls).items()):
        if key not in usual:
            continue  # too few peers to tell a fault from a design
        expected = usual[key]
        section, tier, _, _ = key
        assert tier is not None
        above = _higher_tier(cls, section, tier)
        usual_ports = _usual_uplink_ports(fabric, switches, above)
        upper_counts = {g: _upper_counts(fabric, g, above) for g in switches}
        peers_even = _peers_even(upper_counts)
        for g in sorted(switches, key=lambda g: _label(cls, g)):
            n = cls.uplinks[g]
            uppers = upper_counts[g]
            if n < expected:
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


# -- link width and speed -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BelowPeers:
    """A cable trained narrower or slower than its peers, and what its peers train at.

    ``width``/``speed`` are the peers' usual values where the cable is below them, else the
    cable's own, so :attr:`gbps` is the rate the cable should give.
    """

    link: Link
    width: int
    speed: str

    @property
    def narrow(self) -> bool:
        return 0 < self.link.width < self.width

    @property
    def slow(self) -> bool:
        return self.speed != self.link.speed

    @property
    def gbps(self) -> float:
        return link_gbps(self.width, self.speed)

    def problems(self) -> str:
        """``1x where its peers run 4x`` and/or ``EDR where its peers run HDR``."""
        out = []
        if self.narrow:
            out.append(f"{self.link.width}x where its peers run {self.width}x")
        if self.slow:
            out.append(f"{self.link.speed} where its peers run {self.speed}")
        return " and ".join(out)


def links_below_peers(fabric: Fabric, cls: Classification) -> list[BelowPeers]:
    """Cables slower than their peers (fabric order), with the rate their peers train at.

    Width is compared across all cables of one tier pair. Speed is compared among cables that
    should run at one speed: a host's HCA cables to one leaf model, single-HCA hosts of one model
    on one leaf, or
    switch cables of one hardware pair (an EDR storage host on an HDR leaf is a design, not a fault).
    """
    # A node's part in the class of its cables: (tier, devid, None) for a switch, (0, 0, host key)
    # for an HCA of a multi-HCA host. Any other HCA's part names the switch it is cabled to, so
    # it is made per cable (token_of).
    devid = {g: n.devid or 0 for g, n in fabric.nodes.items()}
    token: dict[Guid, _Token] = {}
    plain_hcas: set[Guid] = set()
    hosts = cls.hosts
    service = cls.service_leaves
    for g, c in cls.nodes.items():
        t = c.tier if c.tier is not None else -1
        if t != 0:
            # A side group's tiers are its own: offset by section so its cables are compared
            # only with its own (the compute fabric, section 0, keeps its plain tiers); a service
            # leaf's cables only with service leaves' (topology.hostroles).
            token[g] = (t + 100 * c.section + 50 * (g in service), devid[g], None)
        elif c.host is not None and len(hosts.get(c.host, ())) >= 2:
            # A host's cables should run one speed, on one model of leaf: its card on an FDR
            # switch runs FDR beside its cards on an EDR switch by design.
            token[g] = (0, 0, ("host", c.host, devid.get(c.leaf, 0) if c.leaf is not None else 0))
        else:
            plain_hcas.add(g)

    def token_of(g: Guid, far: Guid) -> _Token:
        known = token.get(g)
        if known is not None:
            return known
        if g in plain_hcas:
            return (0, 0, ("leaf", far, devid[g]))
        return (-1, devid[g], None)  # a node the classification does not know: an untiered switch

    def classes(lk: Link) -> tuple[tuple[int, int], tuple[object, ...]]:
        ga, gb = lk.a.guid, lk.b.guid
        return _class(token_of(ga, gb), token_of(gb, ga))

    # One pass counts cables per (tier pair, speed key, width, speed); a clean fabric needs no
    # second pass, and a faulty one revisits only to name the cables (in fabric order).
    combos = _cable_classes(fabric.links, token, classes)
    by_tiers: dict[tuple[int, int], Counter[int]] = defaultdict(Counter)
    by_speed_key: dict[tuple[object, ...], Counter[int]] = defaultdict(Counter)
    for (tp, key, width, speed), n in combos.items():
        if width:  # 0: the tool could not read it
            by_tiers[tp][width] += n
        rank = SPEED_RANK.get(speed)
        if rank is not None:
            by_speed_key[key][rank] += n
    width_mode = {tp: _mode(ws) for tp, ws in by_tiers.items() if ws.total() >= 2}
    speed_mode = {key: _mode(ranks) for key, ranks in by_speed_key.items() if ranks.total() >= 3}
    suspect = set()
    for tp, key, width, speed in combos:
        wm, sm, rank = width_mode.get(tp), speed_mode.get(key), SPEED_RANK.get(speed)
        if (wm is not None and 0 < width < wm) or (sm is not None and rank is not None and rank < sm):
            suspect.add((tp, key))
    entries = [
        (lk, *tk)
        for lk in (fabric.links if suspect else ())
        if lk.a.guid != lk.b.guid and (tk := classes(lk)) in suspect
    ]
    out: list[BelowPeers] = []
    for lk, tp, key in entries:
        wm = width_mode.get(tp)
        sm = speed_mode.get(key)
        rank = SPEED_RANK.get(lk.speed)
        narrow = wm is not None and 0 < lk.width < wm
        slow = sm is not None and rank is not None and rank < sm
        if narrow or slow:
            width = wm if narrow and wm is not None else lk.width
            speed = SPEED_ORDER[sm] if slow and sm is not None else lk.speed
            out.append(BelowPeers(lk, width, speed))
    return out


def _degraded_links(fabric: Fabric, cls: Classification) -> list[Anomaly]:
    """A ``degraded_link`` anomaly for every cable below its peers (see :func:`links_below_peers`)."""
    return [
        Anomaly(
            "degraded_link",
            Severity.ERROR if d.narrow else Severity.WARNING,
            (d.link.a.guid, d.link.b.guid),
            (d.link.a, d.link.b),
            f"cable {_label(cls, d.link.a.guid)} port {d.link.a.port} <-> {_label(cls, d.link.b.guid)} "
            f"port {d.link.b.port} trains at {d.link.width}x{d.link.speed} ({d.link.gbps:g} Gb/s): "
            + d.problems()
            + "; reseat or replace the cable/transceiver",
        )
        for d in links_below_peers(fabric, cls)
    ]


# A Link's fields by position (a named tuple (a, b, width, speed) of PortRefs (guid, port)): an
# item is read at C level, a named field through its descriptor; these run over every cable.
_A_END, _B_END, _GUID_OF = itemgetter(0), itemgetter(1), itemgetter(0)
_WIDTH, _SPEED = itemgetter(2), itemgetter(3)
_Token = tuple[int, int, tuple[object, ...] | None]  # see _degraded_links
_Class = tuple[tuple[int, int], tuple[object, ...], int, str]


def _class(a: _Token, b: _Token) -> tuple[tuple[int, int], tuple[object, ...]]:
    """(tier pair, speed key) of a cable from its two ends' tokens: an HCA cable is compared by
    its HCA's key, a switch cable with the cables of the same tier pair and hardware pair."""
    (t_a, d_a, key_a), (t_b, d_b, key_b) = a, b
    tp = (t_a, t_b) if t_a <= t_b else (t_b, t_a)
    if t_a == 0 or t_b == 0:
        key = key_a if t_a == 0 else key_b
        assert key is not None  # every tier-0 token has its key
        return tp, key
    return tp, ("switches", tp, (d_a, d_b) if d_a <= d_b else (d_b, d_a))


def _cable_classes(
    links: Sequence[Link],
    token: dict[Guid, _Token],
    classes: Callable[[Link], tuple[tuple[int, int], tuple[object, ...]]],
) -> Counter[_Class]:
    """Cables (loopbacks aside) per (tier pair, speed key, width, speed).

    Cables whose two ends have a fixed token (``token``) are counted by their tokens with
    C-level map and Counter (49k cables at 16k HCAs), and each distinct pair becomes its class
    once. The rest (an end whose token depends on the cable) go through ``classes`` one by one."""
    ga, gb = list(map(_GUID_OF, map(_A_END, links))), list(map(_GUID_OF, map(_B_END, links)))
    ta, tb = list(map(token.get, ga)), list(map(token.get, gb))
    fast = None not in ta and None not in tb and not any(map(operator.eq, ga, gb))
    out: Counter[_Class] = Counter()
    if not fast:
        for lk, a, b, ka, kb in zip(links, ga, gb, ta, tb, strict=True):
            if a != b and (ka is None or kb is None):
                out[(*classes(lk), lk.width, lk.speed)] += 1
    counted: Counter[tuple[_Token | None, _Token | None, int, str]] = Counter(
        zip(ta, tb, map(_WIDTH, links), map(_SPEED, links), strict=True)
        if fast
        else (
            (ka, kb, lk.width, lk.speed)
            for lk, a, b, ka, kb in zip(links, ga, gb, ta, tb, strict=True)
            if a != b and ka is not None and kb is not None
        )
    )
    for (ka, kb, width, speed), n in counted.items():
        assert ka is not None and kb is not None
        out[(*_class(ka, kb), width, speed)] += n
    return out


# -- ports the tool lists as down ----------------------------------------------------------------
def _down_ports(fabric: Fabric, cls: Classification) -> list[Anomaly]:
    """A port listed without a peer where most same-tier peers have that port cabled."""
    out: list[Anomaly] = []
    if not fabric.unconnected:
        return out
    by_tier: dict[_PeerKey, list[Guid]] = defaultdict(list)
    for g, sc in cls.nodes.items():
        if sc.role is Role.SWITCH and sc.tier is not None:
            by_tier[cls.peer_key(g)].append(g)
    for up in fabric.unconnected:
        c = cls.nodes.get(up.ref.guid)
        if c is None or c.tier is None:
            continue
        peers = [g for g in by_tier[cls.peer_key(up.ref.guid)] if g != up.ref.guid]
        if len(peers) < 2:
            continue
        cabled = sum(1 for g in peers if any(p == up.ref.port for p, _, _ in fabric.neighbours(g)))
        if cabled * 2 > len(peers):
            out.append(
                Anomaly(
                    "down_port",
                    Severity.WARNING,
                    (up.ref.guid,),
                    (up.ref,),
                    f"{c.name} port {up.ref.port} is down ({up.width}x {up.speed}) while {cabled} of "
                    f"{len(peers)} peers have it cabled",
                )
            )
    return out


def _mode(values: Iterable[int] | Counter[int]) -> int:
    """The most common value; ties go to the larger (the design, not the fault)."""
    counts = values if isinstance(values, Counter) else Counter(values)
    return max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]
