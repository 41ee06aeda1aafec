"""Does the twin show the fabric it copies? The source against the twin's own discovery. Pure.

Compared: every node (GUID, kind, port count, description, vendor and device id, system image
GUID), every cable (its two ports, width and speed) and every LID. A difference the simulator
explains (:class:`topology.twin_net.TwinNet`: a speed it lacks, a description it cuts, a node no
cable joins to where the tools attach) is *explained*, named with its reason; any other is a
difference, and a twin with one is not a twin.

>>> from topology.model import Fabric, Node, NodeKind, Guid
>>> f = Fabric.build([Node(Guid("0x0000000000000001"), NodeKind.SWITCH, "leaf", 8)], [])
>>> compare_twin(f, f, None).equal
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from topology.model import UNASSIGNED_LIDS, Fabric, Guid, NodeKind
from topology.twin_net import TwinNet, sim_link

_FIELDS = ("kind", "nports", "description", "vendid", "devid", "sysimgguid")
LISTED = 20  # differences listed per kind (the counts say how many in all)


@dataclass(frozen=True)
class TwinDifference:
    kind: str  # node_missing, node_extra, node_field, link_missing, link_extra, link_rate, lid
    what: str  # the node or cable, for people
    source: str  # what the source says
    twin: str  # what the twin shows
    explained: str = ""  # why the simulator shows it otherwise ("" : not explained)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "what": self.what,
            "source": self.source,
            "twin": self.twin,
            "explained": self.explained or None,
        }


@dataclass(frozen=True)
class TwinComparison:
    nodes: int  # in the source
    links: int
    lids: int
    twin_nodes: int
    twin_links: int
    differences: tuple[TwinDifference, ...]  # at most LISTED of each kind
    counts: tuple[tuple[str, int, int], ...]  # (kind, differences, of them explained)

    @property
    def equal(self) -> bool:
        """Nothing differs that the simulator does not explain."""
        return all(n == explained for _, n, explained in self.counts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "equal": self.equal,
            "source": {"nodes": self.nodes, "links": self.links, "lids": self.lids},
            "twin": {"nodes": self.twin_nodes, "links": self.twin_links},
            "counts": [{"kind": k, "differences": n, "explained": e} for k, n, e in self.counts],
            "differences": [d.to_dict() for d in self.differences],
        }


def _name(f: Fabric, g: Guid) -> str:
    n = f.nodes.get(g)
    return f"{n.description or g} ({g})" if n is not None else str(g)


def compare_twin(source: Fabric, twin: Fabric, net: TwinNet | None) -> TwinComparison:
    """``source`` against ``twin`` (its discovery), with what ``net`` says the simulator does."""
    found: dict[str, list[TwinDifference]] = {}

    def add(d: TwinDifference) -> None:
        found.setdefault(d.kind, []).append(d)

    apart = set(source.nodes) - net.reachable if net is not None and net.attach is not None else set()
    for g, n in source.nodes.items():
        t = twin.nodes.get(g)
        if t is None:
            why = "no cable joins it to where the twin's tools attach" if g in apart else ""
            add(TwinDifference("node_missing", _name(source, g), n.kind.value, "absent", why))
            continue
        for f in _FIELDS:
            a, b = getattr(n, f), getattr(t, f)
            if a == b:
                continue
            why = ""
            if f == "description" and net is not None and net.descriptions.get(g) == b:
                why = "cut to what ibsim holds"
            elif f == "sysimgguid" and a is None and b == g:
                why = "the source states none; ibsim reports the node GUID"
            elif f in ("vendid", "devid") and a is None and b == 0:
                why = "the source states none; the twin reports 0"
            add(TwinDifference("node_field", f"{_name(source, g)} {f}", str(a), str(b), why))
    for g in twin.nodes.keys() - source.nodes.keys():
        add(TwinDifference("node_extra", _name(twin, g), "absent", twin.nodes[g].kind.value))

    s_links = {lk.key: lk for lk in source.links}
    t_links = {lk.key: lk for lk in twin.links}
    counted = [(lk.width, lk.speed) for lk in source.links]
    usual = max(set(counted), key=counted.count) if counted else (4, "QDR")
    for key, lk in s_links.items():
        tl = t_links.get(key)
        what = f"{_name(source, lk.a.guid)}[{lk.a.port}] <-> {_name(source, lk.b.guid)}[{lk.b.port}]"
        if tl is None:
            why = "no cable joins it to where the twin's tools attach" if lk.a.guid in apart else ""
            add(TwinDifference("link_missing", what, f"{lk.width}x{lk.speed}", "absent", why))
        elif (tl.width, tl.speed) != (lk.width, lk.speed):
            why = ""
            if (tl.width, tl.speed) == sim_link(lk, usual):
                why = f"ibsim runs {lk.width}x{lk.speed} as {tl.width}x{tl.speed}"
            add(TwinDifference("link_rate", what, f"{lk.width}x{lk.speed}", f"{tl.width}x{tl.speed}", why))
    for key in t_links.keys() - s_links.keys():
        lk = t_links[key]
        what = f"{_name(twin, lk.a.guid)}[{lk.a.port}] <-> {_name(twin, lk.b.guid)}[{lk.b.port}]"
        add(TwinDifference("link_extra", what, "absent", f"{lk.width}x{lk.speed}"))

    lid_owners: dict[int, int] = {}
    for lid in source.lids.values():
        lid_owners[int(lid)] = lid_owners.get(int(lid), 0) + 1
    for ref, lid in source.lids.items():
        if ref not in twin.lids and ref.guid not in twin.nodes:
            continue  # the node's own absence is said above
        t_lid = twin.lids.get(ref)
        if t_lid == lid:
            continue
        why = ""
        if lid in UNASSIGNED_LIDS:
            why = "the source has no LID there; the twin's OpenSM gave one"
        elif lid_owners[int(lid)] > 1:
            why = "the source gives this LID to more than one port"
        elif _not_addressed(source, ref.guid, ref.port):
            continue  # a switch's external port or an HCA's port 0: no LID of its own
        add(TwinDifference("lid", f"{_name(source, ref.guid)} port {ref.port}", str(lid), str(t_lid), why))

    counts = tuple(
        (kind, len(items), sum(1 for d in items if d.explained)) for kind, items in sorted(found.items())
    )
    listed = tuple(d for kind in sorted(found) for d in _listed(found[kind]))
    return TwinComparison(
        len(source.nodes),
        len(source.links),
        len(source.lids),
        len(twin.nodes),
        len(twin.links),
        listed,
        counts,
    )


def _listed(items: list[TwinDifference]) -> list[TwinDifference]:
    """Unexplained first, at most LISTED."""
    return sorted(items, key=lambda d: bool(d.explained))[:LISTED]


def _not_addressed(f: Fabric, guid: Guid, port: int) -> bool:
    n = f.nodes.get(guid)
    return n is not None and (n.kind is NodeKind.SWITCH) != (port == 0)
