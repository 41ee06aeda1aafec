"""Plant faults in a generated design: rewire the as-built cables and record what was planted.

Each fault changes only the cables it names, and records the anomaly that topology-vs-intent
checks should report (see :class:`topology.generate.PlantedFault`). The subnet manager's faults
(``no-lid``, ``dup-lid``, ``dup-guid``) change no cable: they are what the ibnetdiscover text
writes (:attr:`Design.lids`, :attr:`Design.guids`), resolved once every fault is applied.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from topology.design import Design, DesignHca, DesignSwitch, FaultSpec, PlantedFault, lower_speed
from topology.errors import UsageError
from topology.generate_text import assign_lids
from topology.model import SPEED_ORDER, Guid, Link, PortRef

# The LID the text writes for a port the SM has not configured: the permissive LID on an HCA
# (what ``ibstat`` shows as "Base lid: 65535" on such a port), 0 on a switch.
UNASSIGNED_HCA_LID, UNASSIGNED_SWITCH_LID = 0xFFFF, 0

# Speeds ibsim 0.10 can train a link at (NDR runs as HDR in the simulator).
SIM_SPEEDS = ("SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR")


class _Cabling:
    """The as-built cables, indexed by both ends, with a record of which ends faults touched."""

    def __init__(self, design: Design) -> None:
        self.design = design
        self.by_end: dict[PortRef, Link] = {}
        for lk in design.built:
            self.by_end[lk.a] = lk
            self.by_end[lk.b] = lk
        self.touched: dict[PortRef, str] = {}
        # (node, the LID to write: a number, or the node whose LID it takes), per fault
        self.lids: list[tuple[FaultSpec, Guid, int | Guid]] = []
        self.guids: list[tuple[FaultSpec, Guid, Guid]] = []  # (HCA, the HCA whose GUID it takes)
        self.names = {s.guid: s.name for s in design.switches}
        self.names.update({h.guid: h.description for h in design.hcas})
        self.switches = {s.name: s for s in design.switches}
        self.hcas = {(h.host, h.index): h for h in design.hcas}
        self.hosts = {h.host for h in design.hcas}

    def where(self, ref: PortRef) -> str:
        return f"{self.names.get(ref.guid, ref.guid)} port {ref.port}"

    def switch(self, fault: FaultSpec) -> DesignSwitch:
        sw = self.switches.get(fault.target)
        if sw is None:
            raise UsageError(f"fault {fault.text!r}: no switch named {fault.target!r}")
        return sw

    def hca(self, fault: FaultSpec, index: str) -> DesignHca:
        if fault.target not in self.hosts:
            raise UsageError(f"fault {fault.text!r}: no host named {fault.target!r}")
        hca = self.hcas.get((fault.target, _int(fault, index)))
        if hca is None:
            raise UsageError(f"fault {fault.text!r}: {fault.target} has no HCA mlx5_{index}")
        return hca

    def take(self, fault: FaultSpec, ref: PortRef) -> Link:
        lk = self.by_end.get(ref)
        if lk is None:
            raise UsageError(f"fault {fault.text!r}: {self.where(ref)} has no cable")
        for end in (lk.a, lk.b):
            if end in self.touched:
                raise UsageError(
                    f"fault {fault.text!r}: {self.where(end)} is already changed by {self.touched[end]!r}"
                )
        for end in (lk.a, lk.b):
            self.touched[end] = fault.text
            del self.by_end[end]
        return lk

    def put(self, lk: Link) -> None:
        self.by_end[lk.a] = lk
        self.by_end[lk.b] = lk

    def links(self) -> tuple[Link, ...]:
        return tuple(sorted(set(self.by_end.values()), key=lambda lk: lk.key))


def _int(fault: FaultSpec, text: str) -> int:
    if not text.isdigit():
        raise UsageError(f"fault {fault.text!r}: {text!r} is not a number")
    return int(text)


def plant(design: Design, faults: Sequence[FaultSpec]) -> Design:
    """Return ``design`` with ``faults`` applied to the as-built cables and recorded as planted."""
    if not faults:
        return design
    cab = _Cabling(design)
    planted: list[PlantedFault] = []
    absent: set[Guid] = set()
    for fault in faults:
        handler = _HANDLERS[fault.kind]
        planted.extend(handler(cab, fault, absent))
    hcas = tuple(dataclasses.replace(h, present=False) if h.guid in absent else h for h in design.hcas)
    built = dataclasses.replace(
        design,
        faults=tuple(f.text for f in faults),
        hcas=hcas,
        built=cab.links(),
        planted=tuple(planted),
    )
    return _written(built, cab, absent)


def _written(design: Design, cab: _Cabling, absent: set[Guid]) -> Design:
    """``design`` with the LIDs and GUIDs its faults make the text write (after every fault, so a
    shared LID is the one the other node is finally given)."""
    for fault, guid, _ in (*cab.lids, *cab.guids):
        if guid in absent:
            raise UsageError(f"fault {fault.text!r}: {cab.names[guid]} is absent (another fault removes it)")
    assigned = assign_lids(design)
    lids: dict[Guid, int] = {}
    for fault, guid, value in cab.lids:
        if guid in lids:
            raise UsageError(f"fault {fault.text!r}: {cab.names[guid]}'s LID is already set by another fault")
        if isinstance(value, str):
            if value in absent:
                raise UsageError(f"fault {fault.text!r}: {cab.names[value]} is absent")
            value = lids.get(value, assigned[value])
        lids[guid] = value
    return dataclasses.replace(design, lids=tuple(lids.items()), guids=tuple((g, w) for _, g, w in cab.guids))


def _miswire(cab: _Cabling, fault: FaultSpec, absent: set[Guid]) -> list[PlantedFault]:
    if cab.design.spec.kind != "rail":
        raise UsageError(f"fault {fault.text!r}: miswire needs a rail fabric (hosts with several HCAs)")
    first, second = (cab.hca(fault, i) for i in fault.args)
    if first.index == second.index:
        raise UsageError(f"fault {fault.text!r}: swap needs two different HCAs")
    out: list[PlantedFault] = []
    ends = []
    for hca in (first, second):
        lk = cab.take(fault, PortRef(hca.guid, 1))
        ends.append(lk.other(hca.guid))
    for hca, leaf_end in ((first, ends[1]), (second, ends[0])):
        cab.put(Link(PortRef(hca.guid, 1), leaf_end, 4, cab.design.speed))
        out.append(
            PlantedFault(
                "rail_miswire",
                fault.text,
                (hca.guid, leaf_end.guid),
                (PortRef(hca.guid, 1), leaf_end),
                f"{hca.description} (rail {hca.index}) is cabled to {cab.where(leaf_end)},"
                " a leaf of another rail",
            )
        )
    return out


def _missing_link(cab: _Cabling, fault: FaultSpec, absent: set[Guid]) -> list[PlantedFault]:
    sw = cab.switch(fault)
    roles = {s.guid: s.role for s in cab.design.switches}
    if fault.args:
        ref = PortRef(sw.guid, _int(fault, fault.args[0]))
        lk = cab.by_end.get(ref)
        if lk is not None and lk.other(sw.guid).guid not in roles:
            raise UsageError(f"fault {fault.text!r}: {cab.where(ref)} goes to an HCA; use missing-hca")
    else:
        order = ("leaf", "spine", "core")
        level = {**{r: i for i, r in enumerate(order)}, "side-leaf": 0, "side-spine": 1, "service-leaf": 0}
        mine = level[sw.role]
        # The first uplink; for the top tier, the first downlink.
        candidates = [
            end
            for end, lk in sorted(cab.by_end.items())
            if end.guid == sw.guid and lk.other(sw.guid).guid in roles and end not in cab.touched
        ]
        ups = [e for e in candidates if level[roles[cab.by_end[e].other(sw.guid).guid]] > mine]
        pick = ups or candidates
        if not pick:
            raise UsageError(f"fault {fault.text!r}: {sw.name} has no switch-to-switch cable left")
        ref = pick[0]
    lk = cab.take(fault, ref)
    far = lk.other(sw.guid)
    return [
        PlantedFault(
            "missing_link",
            fault.text,
            (sw.guid, far.guid),
            (ref, far),
            f"cable {cab.where(ref)} <-> {cab.where(far)} is missing",
        )
    ]


def _missing_hca(cab: _Cabling, fault: FaultSpec, absent: set[Guid]) -> list[PlantedFault]:
    hca = cab.hca(fault, fault.args[0])
    lk = cab.take(fault, PortRef(hca.guid, 1))
    leaf_end = lk.other(hca.guid)
    absent.add(hca.guid)
    # A rail host lacks a rail (the rail check's missing_link); elsewhere the host lacks an HCA
    # its peers have (topology.hostfaults).
    return [
        PlantedFault(
            "missing_link" if cab.design.spec.kind == "rail" else "missing_hca",
            fault.text,
            (hca.guid, leaf_end.guid),
            (PortRef(hca.guid, 1), leaf_end),
            f"{hca.description} is absent: {cab.where(leaf_end)} has no cable",
        )
    ]


def _degraded(cab: _Cabling, fault: FaultSpec, absent: set[Guid]) -> list[PlantedFault]:
    sw = cab.switch(fault)
    ref = PortRef(sw.guid, _int(fault, fault.args[0]))
    lk = cab.take(fault, ref)
    width, speed = lk.width, lk.speed
    sim_speed = "HDR" if speed == "NDR" else speed
    if fault.kind == "degraded-width":
        width = _int(fault, fault.args[1]) if len(fault.args) > 1 else 1
        if width not in (1, 2):
            raise UsageError(f"fault {fault.text!r}: degraded width must be 1 or 2 lanes")
    else:
        speed = fault.args[1].upper() if len(fault.args) > 1 else lower_speed(sim_speed)
        if speed not in SIM_SPEEDS or SPEED_ORDER.index(speed) >= SPEED_ORDER.index(sim_speed):
            slower = ", ".join(s for s in SIM_SPEEDS if SPEED_ORDER.index(s) < SPEED_ORDER.index(sim_speed))
            raise UsageError(f"fault {fault.text!r}: speed must be slower than {sim_speed} ({slower})")
    new = Link(lk.a, lk.b, width, speed)
    cab.put(new)
    far = lk.other(sw.guid)
    return [
        PlantedFault(
            "degraded_link",
            fault.text,
            (sw.guid, far.guid),
            (ref, far),
            f"{cab.where(ref)} <-> {cab.where(far)} trains at {width}x{speed} "
            f"instead of {lk.width}x{lk.speed}",
        )
    ]


def _node(cab: _Cabling, fault: FaultSpec, names: tuple[str, ...]) -> tuple[Guid, str]:
    """A switch by name, or an HCA by host and index: (its GUID, its name)."""
    if len(names) == 1:
        sw = cab.switches.get(names[0])
        if sw is None:
            raise UsageError(f"fault {fault.text!r}: no switch named {names[0]!r} (an HCA is HOST:N)")
        return sw.guid, sw.name
    host, index = names
    named = FaultSpec(fault.kind, host, (index,), fault.text)
    hca = cab.hca(named, index)
    return hca.guid, hca.description


def _no_lid(cab: _Cabling, fault: FaultSpec, absent: set[Guid]) -> list[PlantedFault]:
    guid, name = _node(cab, fault, (fault.target, *fault.args))
    is_switch = len(fault.args) == 0
    lid = UNASSIGNED_SWITCH_LID if is_switch else UNASSIGNED_HCA_LID
    cab.lids.append((fault, guid, lid))
    port = PortRef(guid, 0 if is_switch else 1)
    return [
        PlantedFault(
            "unconfigured_ports", fault.text, (guid,), (port,), f"{name} has no LID from the SM (lid {lid})"
        )
    ]


def _dup_lid(cab: _Cabling, fault: FaultSpec, absent: set[Guid]) -> list[PlantedFault]:
    names = (fault.target, *fault.args)
    if len(names) not in (2, 4):
        raise UsageError(f"fault {fault.text!r}: dup-lid takes two switches or HOST:N:HOST2:M")
    half = len(names) // 2
    (first, first_name), (second, second_name) = (
        _node(cab, fault, names[:half]),
        _node(cab, fault, names[half:]),
    )
    if first == second:
        raise UsageError(f"fault {fault.text!r}: a node cannot share a LID with itself")
    cab.lids.append((fault, second, first))
    return [
        PlantedFault(
            "duplicate_lid",
            fault.text,
            (first, second),
            (),
            f"{second_name} is written with the LID of {first_name}",
        )
    ]


def _dup_guid(cab: _Cabling, fault: FaultSpec, absent: set[Guid]) -> list[PlantedFault]:
    (first, first_name), (second, second_name) = (
        _node(cab, fault, (fault.target, fault.args[0])),
        _node(cab, fault, fault.args[1:]),
    )
    if first == second:
        raise UsageError(f"fault {fault.text!r}: two different HCAs are needed")
    if any(second == g or first == g for _, g, _ in cab.guids):
        raise UsageError(f"fault {fault.text!r}: an HCA in it already shares a GUID by another fault")
    cab.guids.append((fault, second, first))
    return [
        PlantedFault(
            "duplicate_guid",
            fault.text,
            (first,),
            (),
            f"{second_name} is written with the GUID of {first_name}",
        )
    ]


_HANDLERS = {
    "miswire": _miswire,
    "missing-link": _missing_link,
    "missing-hca": _missing_hca,
    "degraded-width": _degraded,
    "degraded-speed": _degraded,
    "no-lid": _no_lid,
    "dup-lid": _dup_lid,
    "dup-guid": _dup_guid,
}
