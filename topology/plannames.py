"""Cable-plan names for a fabric's ports, both ways: a plan end to a port, a port to a plan end.

Names are matched case-insensitively. A plan device is matched against:

* a node GUID (``0x...``), which is how ibfab exports nodes whose names are not unique;
* a switch's system name: ``MF0;leaf-07:MQM8700/U1`` is ``leaf-07``, a description without the
  ``MF0;name:`` form is its own name; a director's line-board ASICs are ``MF0;dir-1:MCS8500/L05/U2``
  and a plan names their ports ``Blade 5_Port 2/P`` (line board 5, ASIC U2, port P);
* a whole NodeDescription (``node01 HCA-1``), and a host name taken from HCA descriptions
  (``dgx-0042 mlx5_3`` is adapter ``mlx5_3`` of host ``dgx-0042``; ``dgx-0042/mlx5_3`` and
  ``dgx-0042:mlx5_3`` in a device cell are too).

A name that matches several nodes, or a host port that does not say which of a host's HCAs,
is *unclear*: the check says so and never guesses. A name that matches nothing is *absent*; a
device that is there without the planned port (a host without that adapter, a director without
that line board) is *port absent*, never an absent device.

A *device* is what a person cables: a host (all its HCAs), a director (all its boards), a switch;
:meth:`FabricNames.device_of` names the one a node belongs to, and each resolution says which
device its end is on, found or not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from topology.cableplan import PlanEnd, PlanPort, PortForm, parse_port
from topology.classify import parse_hca_description
from topology.model import Fabric, Guid, Node, NodeKind, PortRef, normalise_guid
from topology.nameformats import PLAN_CELL, UnfitName, unfit
from topology.systemname import Board, system_name

_GUID = re.compile(r"^(?:0x)?[0-9a-fA-F]{16}$")


class Found(StrEnum):
    FOUND = "found"
    ABSENT = "absent"  # no port of the named device is in the fabric
    PORT_ABSENT = "port_absent"  # the device is there, not this port (adapter, line board)
    UNCLEAR = "unclear"  # several nodes match, or the port does not say which


@dataclass(frozen=True, slots=True)
class Resolution:
    status: Found
    ref: PortRef | None = None
    reason: str = ""
    device: str | None = None  # the fabric device the end is on (FabricNames.device_of), if any


def is_aggregation(node: Node) -> bool:
    return node.kind is not NodeKind.SWITCH and "aggregation node" in node.description.casefold()


class FabricNames:
    """Lookups from plan names to a fabric's nodes, built once per fabric."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self.by_desc: dict[str, list[Guid]] = {}
        self.by_system: dict[str, list[Guid]] = {}
        self.boards: dict[tuple[str, str, int, int], Guid] = {}
        self.board_of: dict[Guid, Board] = {}
        self.by_host: dict[str, list[Guid]] = {}
        self.by_adapter: dict[tuple[str, str], list[Guid]] = {}
        self.hca_names: dict[Guid, tuple[str, str]] = {}
        self.host_of: dict[Guid, str] = {}
        self.unfit: dict[str, UnfitName] = {}  # names spell() kept out of a plan cell
        for g, node in fabric.nodes.items():
            self.by_desc.setdefault(node.description.strip().casefold(), []).append(g)
            if node.kind is NodeKind.SWITCH:
                system, board = system_name(node.description)
                self.by_system.setdefault(system.casefold(), []).append(g)
                if board is not None:
                    self.boards[(system.casefold(), board.kind, board.number, board.asic)] = g
                    self.board_of[g] = board
            elif not is_aggregation(node):
                host, adapter, _ = parse_hca_description(node.description)
                if host is not None:
                    self.by_host.setdefault(host.casefold(), []).append(g)
                    self.host_of[g] = host
                    if adapter is not None:
                        self.by_adapter.setdefault((host.casefold(), adapter.casefold()), []).append(g)
                        self.hca_names[g] = (host, adapter)

    def device_of(self, guid: Guid) -> str:
        """The device a node belongs to: the host of a named HCA, the director of a board, else
        the node itself. Names are prefixed by kind, so a host and a switch of one name differ."""
        board = self.board_of.get(guid)
        if board is not None:
            return f"director {board.system.casefold()}"
        host = self.host_of.get(guid)
        return f"host {host.casefold()}" if host is not None else guid

    # -- plan end -> port ---------------------------------------------------------------------
    def resolve(self, end: PlanEnd) -> Resolution:
        device = end.device.strip()
        key, port = device.casefold(), end.port
        if _GUID.match(device):
            guid = normalise_guid(device)
            if guid not in self.fabric.nodes:
                return Resolution(Found.ABSENT, reason=f"no node with GUID {guid} in the fabric")
            return self._on(guid, port, device)
        if port.form is PortForm.BLADE:
            return self._blade(key, device, port)
        if port.form is PortForm.ADAPTER:
            return self._adapter(key, device, port)
        nodes = set(self.by_system.get(key, ())) | set(self.by_desc.get(key, ()))
        if not nodes:
            hcas = self.by_host.get(key, [])
            if len(hcas) == 1:
                return self._on(hcas[0], port, device)
            if hcas:
                return Resolution(
                    Found.UNCLEAR,
                    reason=f"host {device} has {len(hcas)} HCAs and {port} does not say which"
                    " (spell the port as the adapter, e.g. mlx5_0)",
                    device=f"host {key}",
                )
            host, adapter, _ = parse_hca_description(device)
            if host is not None and adapter is not None:  # node01/mlx5_0 in the device cell
                return self._adapter(
                    host.casefold(), host, PlanPort(PortForm.ADAPTER, port.number, adapter=adapter)
                )
            return Resolution(Found.ABSENT, reason=f"no node named {device!r} in the fabric")
        if len(nodes) > 1:
            if all(g in self.board_of for g in nodes):
                return Resolution(
                    Found.UNCLEAR,
                    reason=f"{device} is a director of {len(nodes)} switch ASICs:"
                    " spell its ports Blade N_Port A/P",
                    device=self.device_of(next(iter(nodes))),
                )
            return Resolution(
                Found.UNCLEAR, reason=f"{len(nodes)} nodes are named {device!r}: {', '.join(sorted(nodes))}"
            )
        return self._on(next(iter(nodes)), port, device)

    def _blade(self, key: str, device: str, port: PlanPort) -> Resolution:
        assert port.blade is not None and port.asic is not None
        guid = self.boards.get((key, "L", port.blade, port.asic))
        if guid is not None:
            return self._on(guid, port, device)
        if key in self.by_system:
            return Resolution(
                Found.PORT_ABSENT,
                reason=f"director {device} has no line board L{port.blade:02d}/U{port.asic} in the fabric",
                device=self.device_of(self.by_system[key][0]),
            )
        return Resolution(Found.ABSENT, reason=f"no director named {device!r} in the fabric")

    def _adapter(self, key: str, device: str, port: PlanPort) -> Resolution:
        adapter = (port.adapter or "").casefold()
        hits = self.by_adapter.get((key, adapter)) or self.by_desc.get(f"{key} {adapter}", [])
        if len(hits) > 1:
            return Resolution(Found.UNCLEAR, reason=f"{len(hits)} HCAs are named {device} {port.adapter}")
        if not hits:
            if key in self.by_host:
                return Resolution(
                    Found.PORT_ABSENT,
                    reason=f"host {device} has no {port.adapter} in the fabric",
                    device=self.device_of(self.by_host[key][0]),
                )
            return Resolution(Found.ABSENT, reason=f"no host named {device!r} in the fabric")
        node = self.fabric.nodes[hits[0]]
        number = port.number
        if number is None:
            if node.nports != 1:
                return Resolution(
                    Found.UNCLEAR,
                    reason=f"{device} {port.adapter} has {node.nports} ports and the plan does not say which",
                    device=self.device_of(node.guid),
                )
            number = 1
        return self._number(node, number, device)

    def _on(self, guid: Guid, port: PlanPort, device: str) -> Resolution:
        node = self.fabric.nodes[guid]
        if port.form is PortForm.ADAPTER or port.number is None:
            return Resolution(
                Found.UNCLEAR,
                reason=f"{device}: {port} names an adapter, not a port",
                device=self.device_of(guid),
            )
        return self._number(node, port.number, device)

    def _number(self, node: Node, number: int, device: str) -> Resolution:
        if number < 1 or (node.nports and number > node.nports):
            return Resolution(
                Found.UNCLEAR,
                reason=f"{device} has no port {number} (ports 1..{node.nports})",
                device=self.device_of(node.guid),
            )
        return Resolution(Found.FOUND, PortRef(node.guid, number), device=self.device_of(node.guid))

    # -- port -> plan end ---------------------------------------------------------------------
    def spell(self, ref: PortRef) -> PlanEnd:
        """How a plan names ``ref``: system name and ``Port N``, director ``Blade N_Port A/P``,
        host and adapter (``dgx-0001``, ``mlx5_0``); the node GUID where a name would not come
        back to this very port (duplicate or missing descriptions), or where a plan cell cannot
        carry it (:data:`topology.nameformats.PLAN_CELL`; recorded in :attr:`unfit`)."""
        said = False
        for end in self._spellings(ref):
            bad = unfit(end.device, PLAN_CELL) or unfit(str(end.port), PLAN_CELL)
            if bad is not None:
                if not said:  # once per name (a host's HCAs share it), not once per spelling
                    note = f"{bad.why}; the plan names its nodes by GUID"
                    self.unfit.setdefault(bad.name, UnfitName(bad.name, bad.output, note))
                    said = True
                continue
            try:  # what a reader of the written plan will see
                end = PlanEnd(end.device, parse_port(str(end.port)))
            except ValueError:
                continue
            r = self.resolve(end)
            if r.status is Found.FOUND and r.ref == ref:
                return end
        return PlanEnd(ref.guid, PlanPort(PortForm.SWITCH, ref.port))

    def _spellings(self, ref: PortRef) -> list[PlanEnd]:
        node = self.fabric.nodes.get(ref.guid)
        if node is None:
            return []
        if node.kind is NodeKind.SWITCH:
            board = self.board_of.get(ref.guid)
            if board is not None:
                if board.kind != "L":
                    return []
                return [PlanEnd(board.system, PlanPort(PortForm.BLADE, ref.port, board.number, board.asic))]
            system, _ = system_name(node.description)
            return [PlanEnd(system, PlanPort(PortForm.SWITCH, ref.port))] if system else []
        out = []
        names = self.hca_names.get(ref.guid)
        if names is not None:
            host, adapter = names
            number = None if node.nports == 1 and ref.port == 1 else ref.port
            out.append(PlanEnd(host, PlanPort(PortForm.ADAPTER, number, adapter=adapter)))
        if node.description.strip():
            out.append(PlanEnd(node.description.strip(), PlanPort(PortForm.HOST, ref.port)))
        return out

    def internal(self, a: PortRef, b: PortRef) -> str | None:
        """Why a link is not a cable a plan lists (None when it is one): a director's backplane
        between its own boards, or a switch's SHARP aggregation node."""
        ba, bb = self.board_of.get(a.guid), self.board_of.get(b.guid)
        if ba is not None and bb is not None and ba.system.casefold() == bb.system.casefold():
            return f"inside director {ba.system}"
        for ref in (a, b):
            node = self.fabric.nodes.get(ref.guid)
            if node is not None and is_aggregation(node):
                return "to a SHARP aggregation node"
        return None
