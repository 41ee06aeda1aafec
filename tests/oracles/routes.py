"""The route walk's oracle: forwarding tables followed as dicts, hop by hop from each HCA pair's
source (``{switch: {LID: port}}``, a switch-to-LID suffix remembered once walked). The program
walks routes over the tables bound as arrays (:mod:`topology.route_pairs`, on
:func:`topology.route_walk.bind`); tests/topology/test_route_pairs.py holds it to the same
routes and the same errors as this."""

from __future__ import annotations

from collections.abc import Iterable

from topology.model import Fabric, Guid, Link, NodeKind
from topology.routes import ForwardingTables, RouteError

_MAX_HOPS = 64


class _Router:
    """Follows destination LIDs through the tables, remembering every switch-to-LID suffix."""

    def __init__(self, fabric: Fabric, tables: ForwardingTables) -> None:
        self.fabric = fabric
        self.tables = tables
        self._ports: dict[Guid, dict[int, tuple[Guid, Link]]] = {}
        self._suffix: dict[tuple[Guid, int], tuple[Link, ...]] = {}

    def _port_map(self, switch: Guid) -> dict[int, tuple[Guid, Link]]:
        ports = self._ports.get(switch)
        if ports is None:
            ports = {p: (far.guid, lk) for p, far, lk in self.fabric.neighbours(switch)}
            self._ports[switch] = ports
        return ports

    def _name(self, guid: Guid) -> str:
        node = self.fabric.nodes.get(guid)
        return f"{node.description} ({guid})" if node is not None else guid

    def path(self, src: Guid, dst: Guid) -> list[Link]:
        fabric = self.fabric
        for g in (src, dst):
            if g not in fabric.nodes:
                raise RouteError(f"no node {g} in the fabric")
        dst_node = fabric.nodes[dst]
        if dst_node.lid is None:
            raise RouteError(f"{self._name(dst)} has no LID: cannot route to it")
        if src == dst:
            return []
        first = fabric.neighbours(src)
        if not first:
            raise RouteError(f"{self._name(src)} has no cable")
        _, far, link = first[0]
        if far.guid == dst:
            return [link]
        return [link, *self._from_switch(far.guid, dst_node.lid, dst)]

    def _from_switch(self, switch: Guid, dlid: int, dst: Guid) -> tuple[Link, ...]:
        key = (switch, dlid)
        cached = self._suffix.get(key)
        if cached is not None:
            return cached
        walked: list[tuple[Guid, Link]] = []
        seen: set[Guid] = set()
        here = switch
        tail: tuple[Link, ...] = ()
        while True:
            if (here, dlid) in self._suffix:
                tail = self._suffix[(here, dlid)]
                break
            if here in seen or len(walked) > _MAX_HOPS:
                raise RouteError(f"forwarding loop for LID {dlid} at switch {self._name(here)}")
            seen.add(here)
            node = self.fabric.nodes.get(here)
            if node is None or node.kind is not NodeKind.SWITCH:
                raise RouteError(f"LID {dlid} delivered to {self._name(here)}, not to {self._name(dst)}")
            table = self.tables.get(here)
            if table is None:
                raise RouteError(f"no forwarding table for switch {self._name(here)}")
            port = table.get(dlid)
            if port is None:
                raise RouteError(f"switch {self._name(here)} has no route to LID {dlid} (black hole)")
            if port == 0:
                raise RouteError(f"switch {self._name(here)} claims LID {dlid} for itself")
            hop = self._port_map(here).get(port)
            if hop is None:
                raise RouteError(
                    f"switch {self._name(here)} sends LID {dlid} to port {port}, which has no cable (black hole)"
                )
            far, link = hop
            walked.append((here, link))
            if far == dst:
                break
            here = far
        # Store the suffix of every switch walked, so later pairs to the same LID reuse it.
        for i in range(len(walked) - 1, -1, -1):
            tail = (walked[i][1], *tail)
            self._suffix[(walked[i][0], dlid)] = tail
        return self._suffix[key]


def path(fabric: Fabric, tables: ForwardingTables, src_hca: Guid, dst_hca: Guid) -> list[Link]:
    """The links from HCA ``src_hca`` to HCA ``dst_hca`` (node GUIDs), in order; RouteError if broken."""
    return _Router(fabric, tables).path(src_hca, dst_hca)


def all_paths(
    fabric: Fabric, tables: ForwardingTables, pairs: Iterable[tuple[Guid, Guid]]
) -> dict[tuple[Guid, Guid], list[Link] | RouteError]:
    """:func:`path` for every pair; a pair that cannot be routed maps to its :class:`RouteError`."""
    router = _Router(fabric, tables)
    out: dict[tuple[Guid, Guid], list[Link] | RouteError] = {}
    for src, dst in pairs:
        try:
            out[(src, dst)] = router.path(src, dst)
        except RouteError as exc:
            out[(src, dst)] = exc
    return out
