"""Rail anomalies: a host's HCAs on the wrong rail leaves (``rail_miswire``), a host missing a rail
(``missing_link``), a host with every HCA on one leaf (``single_leaf_host``) and the unnamed HCAs
those explain (topology.unnamedfaults). A host is judged against the rails of its own unit.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from topology.anomaly import Anomaly, Severity
from topology.classify import Classification, NodeClass, Role
from topology.model import Fabric, Guid, PortRef
from topology.wiring_peers import _label


def rail_anomalies(fabric: Fabric, cls: Classification) -> list[Anomaly]:
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
