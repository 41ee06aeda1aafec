"""A discovered fabric written as an ibsim net file: the twin the lab runs. Pure.

The generator's writer (:mod:`topology.generate_text`) writes a *design*; this writes what a
capture, an ibdiagnet run or a stored snapshot says a real fabric *is*, so that the real diag tools
read the same fabric back from the simulator: the same node GUIDs, system image GUIDs, vendor and
device ids, port counts, descriptions, cables (port for port), widths and speeds, and, through
OpenSM's ``guid2lid`` cache, the same LIDs.

What ibsim 0.10 cannot hold is written as near as it can and said in :attr:`TwinNet.notes` (each
note counts and names what it covers), never left silent:

* it has no NDR (nor XDR): those links run at HDR, widths as captured;
* a node description is at most 63 characters and cannot hold a double quote: longer ones are cut,
  quotes become apostrophes;
* an HCA's port GUID is always its node GUID plus the port number (the capture's port GUIDs are
  not kept by the model, so the twin's may differ);
* a node no cable joins to the node the tools attach to (a capture that is a part of a fabric)
  cannot be discovered there;
* a link whose width or speed the capture could not read (``???``) runs at the fabric's usual one;
* a port without a LID, or two ports with one LID, get LIDs from the twin's OpenSM.

Node ids are ``S-<guid>`` / ``H-<guid>`` / ``R-<guid>`` (ibnetdiscover's own), unique whatever the
descriptions are; :attr:`TwinNet.node_ids` maps each GUID to its id for the simulator's console.

>>> from topology.model import Fabric, Link, Node, NodeKind, PortRef, Guid, Lid
>>> sw, ca = Guid("0x0000000000000010"), Guid("0x0000000000000020")
>>> f = Fabric.build([Node(sw, NodeKind.SWITCH, "leaf-01", 36, Lid(1)),
...                   Node(ca, NodeKind.HCA, "cn01 mlx5_0", 1, Lid(2))],
...                  [Link(PortRef(sw, 3), PortRef(ca, 1), 4, "NDR")],
...                  lids={PortRef(sw, 0): Lid(1), PortRef(ca, 1): Lid(2)})
>>> net = twin_net(f)
>>> net.node_ids[ca], net.switches, net.hcas
('H-0000000000000020', 1, 1)
>>> net.guid2lid.splitlines()
['0x0000000000000010 1 1', '0x0000000000000021 2 2']
>>> net.notes[0].startswith("ibsim 0.10 has no NDR: 1 link(s) run at HDR")
True
"""

from __future__ import annotations

import hashlib
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from topology.model import UNASSIGNED_LIDS, Fabric, Guid, Link, NodeKind, PortRef

# ibsim 0.10: the speeds it knows (its annotation takes a prefix of these), the longest node
# description it keeps, and its built-in limits with the options that raise them.
SIM_SPEEDS = ("SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR")
FASTER_THAN_SIM = {"NDR": "HDR", "XDR": "HDR"}
_NOT_EXTENDED = ("SDR", "DDR", "QDR", "FDR10")
SIM_WIDTHS = (1, 2, 4, 8, 12)
MAX_DESCRIPTION = 63
_SIM_LIMITS = (("-N", 2048), ("-S", 256), ("-P", 13312), ("-L", 30720))
_MAX_SIM_LID = 49152  # ibsim's -L: one above the largest unicast LID (0xbfff)
_ID_PREFIX = {NodeKind.SWITCH: "S-", NodeKind.HCA: "H-", NodeKind.ROUTER: "R-"}
_RECORD = {NodeKind.SWITCH: "Switch", NodeKind.HCA: "Ca", NodeKind.ROUTER: "Rt"}
_SHOWN = 3  # examples a note names


@dataclass(frozen=True)
class TwinNet:
    """A fabric ready for the simulator."""

    net: str  # the ibsim net file
    guid2lid: str  # OpenSM's LID cache (port GUID, first and last LID): the capture's LIDs again
    node_ids: Mapping[Guid, str]  # the simulator's node id of each node
    limits: tuple[str, ...]  # ibsim's -N/-S/-P/-L options beyond its defaults
    attach: Guid | None  # the node the SM and the tools attach to (an HCA's port 1, else a switch)
    reachable: frozenset[Guid]  # the nodes cabled (through switches) to ``attach``
    switches: int
    hcas: int  # HCAs and routers
    sim_speeds: Mapping[str, str]  # speeds run otherwise in the simulator: captured -> simulated
    descriptions: Mapping[Guid, str]  # descriptions written otherwise: GUID -> as written
    notes: tuple[str, ...]


def topology_key(fabric: Fabric) -> str:
    """A digest of what a twin copies (nodes, cables, LIDs): equal fabrics, equal keys, from any
    source; a cable moved, a node added or a LID changed gives another key."""
    h = hashlib.sha256()
    for g, n in fabric.nodes.items():
        h.update(
            f"N {g} {n.kind.value} {n.nports} {n.vendid} {n.devid} {n.sysimgguid} {n.description!r}\n".encode()
        )
    for lk in fabric.links:
        h.update(f"L {lk.a.guid} {lk.a.port} {lk.b.guid} {lk.b.port} {lk.width} {lk.speed}\n".encode())
    for ref, lid in sorted(fabric.lids.items()):
        h.update(f"I {ref.guid} {ref.port} {lid}\n".encode())
    return h.hexdigest()[:16]


def sim_description(text: str) -> str:
    """``text`` as the simulator can hold it: no double quote, at most 63 characters."""
    return text.replace('"', "'")[:MAX_DESCRIPTION]


def sim_link(lk: Link, usual: tuple[int, str]) -> tuple[int, str]:
    """(width, speed) the simulator runs ``lk`` at: a speed it lacks as its fastest, an unreadable
    width or speed as the fabric's ``usual``."""
    width = lk.width if lk.width in SIM_WIDTHS else usual[0]
    speed = FASTER_THAN_SIM.get(lk.speed, lk.speed)
    if speed not in SIM_SPEEDS:
        speed = usual[1]
    return width, speed


def attach_point(fabric: Fabric) -> PortRef | None:
    """Where the twin's SM and tools attach (ibsim attaches its clients to the first node of the
    net file): a switch's port 0 in the largest part of the fabric, as on a fabric whose SM runs on
    a managed switch, so that no HCA a check unplugs (a drained node) is the SM's own; an HCA's
    port 1 only where no switch is cabled (umad2sim shows clients an HCA's port 1 only)."""
    best: tuple[int, PortRef] | None = None
    seen: set[Guid] = set()
    for g in fabric.nodes:
        if g in seen or not fabric.neighbours(g):
            continue
        part = _reach(fabric, g)
        seen |= part
        switches = sorted(x for x in part if fabric.nodes[x].kind is NodeKind.SWITCH)
        ones = sorted(
            x for x in part if fabric.nodes[x].kind is not NodeKind.SWITCH and _cabled(fabric, PortRef(x, 1))
        )
        pick = PortRef(switches[0], 0) if switches else PortRef(ones[0], 1) if ones else None
        if pick is not None and (best is None or len(part) > best[0]):
            best = (len(part), pick)
    return best[1] if best else None


def _cabled(fabric: Fabric, ref: PortRef) -> bool:
    return any(p == ref.port for p, _, _ in fabric.neighbours(ref.guid))


def _reach(fabric: Fabric, start: Guid) -> set[Guid]:
    """The nodes cabled to ``start``, through switches only (an HCA forwards nothing)."""
    seen = {start}
    todo = deque([start])
    while todo:
        g = todo.popleft()
        if g != start and fabric.nodes[g].kind is not NodeKind.SWITCH:
            continue
        for _, far, _ in fabric.neighbours(g):
            if far.guid not in seen and far.guid in fabric.nodes:
                seen.add(far.guid)
                todo.append(far.guid)
    return seen


def _examples(items: list[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def twin_net(fabric: Fabric) -> TwinNet:
    """The net file, LID cache and limits that make ibsim + OpenSM show ``fabric``."""
    ids = {g: _ID_PREFIX[n.kind] + g[2:] for g, n in fabric.nodes.items()}
    counted = Counter(
        (lk.width, lk.speed) for lk in fabric.links if lk.width in SIM_WIDTHS and lk.speed in SIM_SPEEDS
    )
    usual = counted.most_common(1)[0][0] if counted else (4, "QDR")
    at = attach_point(fabric)
    attach = at.guid if at is not None else None
    reachable = frozenset(_reach(fabric, attach)) if attach is not None else frozenset()

    sim_speeds: dict[str, str] = {}
    odd_links: list[str] = []
    runs: dict[Link, tuple[int, str]] = {}
    for lk in fabric.links:
        width, speed = sim_link(lk, usual)
        runs[lk] = (width, speed)
        if lk.speed in FASTER_THAN_SIM:
            sim_speeds[lk.speed] = speed
        elif (width, speed) != (lk.width, lk.speed):
            odd_links.append(f"{lk.a} <-> {lk.b} ({lk.width}x{lk.speed})")
    descriptions = {g: sim_description(n.description) for g, n in fabric.nodes.items()}
    changed = {g: d for g, d in descriptions.items() if d != fabric.nodes[g].description}

    ports: dict[Guid, list[tuple[int, PortRef, Link]]] = {}
    for lk in fabric.links:
        if lk.a.guid in fabric.nodes and lk.b.guid in fabric.nodes:
            ports.setdefault(lk.a.guid, []).append((lk.a.port, lk.b, lk))
            ports.setdefault(lk.b.guid, []).append((lk.b.port, lk.a, lk))
    top = max((w for w, _ in runs.values()), default=4)
    fastest = max((SIM_SPEEDS.index(s) for _, s in runs.values()), default=2)
    out = [
        f"# ibfab twin of {fabric.source or 'a discovered fabric'}",
        "# written by topology.twin_net: every cabled port annotated with its width and speed",
        f"width={15 if top > 4 else 3}",
        "speed=7",
        f"extspeed={7 if fastest >= SIM_SPEEDS.index('FDR') else 0}",
        "",
    ]
    # The source's LIDs, in the ports themselves (OpenSM keeps a LID a port already has, as it
    # does on a running subnet) and in its guid2lid cache.
    guid2lid, lid_notes, lids = _guid2lid(fabric)
    order = sorted(fabric.nodes, key=lambda g: (g != attach, fabric.nodes[g].kind is not NodeKind.SWITCH, g))
    for g in order:
        node = fabric.nodes[g]
        guid_line = "switchguid" if node.kind is NodeKind.SWITCH else "caguid"
        # Both every time: ibsim resets the vendor id after each node but carries the device id
        # on; a source that states neither gets 0 (the comparison says why).
        out.append(f"vendid=0x{node.vendid or 0:x}")
        out.append(f"devid=0x{node.devid or 0:x}")
        if node.sysimgguid is not None:
            out.append(f"sysimgguid={node.sysimgguid}")
        out.append(f"{guid_line}={g}")
        tail = (
            f" enhanced port 0 lid {lids.get(PortRef(g, 0), 0)} lmc 0" if node.kind is NodeKind.SWITCH else ""
        )
        out.append(f'{_RECORD[node.kind]} {node.nports} "{ids[g]}" # "{descriptions[g]}"{tail}')
        for port, far, lk in sorted(ports.get(g, ()), key=lambda row: row[0]):
            width, speed = runs[lk]
            # An annotation of a speed below FDR leaves the extended speeds at the file's default;
            # e=0 turns them off, or the link would train at the fastest extended speed.
            ext = " e=0" if speed in _NOT_EXTENDED else ""
            ann = f"lid 0 {width}x{speed}"
            if node.kind is NodeKind.SWITCH:
                out.append(f'[{port}] "{ids[far.guid]}"[{far.port}]{ext}  # "{ids[far.guid]}" {ann}')
            else:
                own = lids.get(PortRef(g, port), 0)
                out.append(
                    f'[{port}] "{ids[far.guid]}"[{far.port}]{ext}  # lid {own} lmc 0 "{ids[far.guid]}" {ann}'
                )
        out.append("")

    notes = _notes(fabric, sim_speeds, odd_links, changed, reachable, attach, usual) + lid_notes
    switches = sum(1 for n in fabric.nodes.values() if n.kind is NodeKind.SWITCH)
    top_lid = max(fabric.lids.values(), default=0)
    need = {
        "-N": len(fabric.nodes),
        "-S": switches,
        "-P": sum(n.nports + (1 if n.kind is NodeKind.SWITCH else 0) for n in fabric.nodes.values()),
        "-L": max(len(fabric.nodes), top_lid) + 1,
    }
    return TwinNet(
        net="\n".join(out) + "\n",
        guid2lid=guid2lid,
        node_ids=MappingProxyType(ids),
        limits=sim_limit_options(need),
        attach=attach,
        reachable=reachable,
        switches=switches,
        hcas=len(fabric.nodes) - switches,
        sim_speeds=MappingProxyType(sim_speeds),
        descriptions=MappingProxyType(changed),
        notes=notes,
    )


def sim_limit_options(need: Mapping[str, int]) -> tuple[str, ...]:
    """ibsim's ``-N -S -P -L`` options for what a fabric needs (nodes, switches, ports, LIDs),
    each only where its default is too small, with room to spare."""
    opts: list[str] = []
    for flag, default in _SIM_LIMITS:
        if need[flag] > default:
            value = _MAX_SIM_LID if flag == "-L" else need[flag] + need[flag] // 16
            opts += [flag, str(value)]
    return tuple(opts)


def _guid2lid(fabric: Fabric) -> tuple[str, tuple[str, ...], dict[PortRef, int]]:
    """OpenSM's guid2lid lines for the capture's LIDs, by the twin's port GUIDs (a switch's is its
    node GUID, an HCA port's the node GUID plus the port number, as ibsim makes them), the notes
    on LIDs it cannot keep, and the LID of each port that keeps one."""
    owners: dict[int, list[PortRef]] = {}
    for ref, lid in fabric.lids.items():
        node = fabric.nodes.get(ref.guid)
        if node is None or lid in UNASSIGNED_LIDS:
            continue
        if (node.kind is NodeKind.SWITCH) != (ref.port == 0):
            continue
        owners.setdefault(int(lid), []).append(ref)
    lines = []
    shared = []
    kept: dict[PortRef, int] = {}
    for number, refs in sorted(owners.items()):
        if len(refs) > 1:
            shared.append(f"LID {number} ({len(refs)} ports)")
            continue
        ref = refs[0]
        kept[ref] = number
        port_guid = int(ref.guid, 16) + ref.port
        lines.append(f"0x{port_guid:016x} {number} {number}")
    notes = []
    unassigned = [
        f"{r.guid}/{r.port}"
        for r, lid in fabric.lids.items()
        if lid in UNASSIGNED_LIDS and r.guid in fabric.nodes
    ]
    if unassigned:
        notes.append(
            f"{len(unassigned)} port(s) have no LID in the source ({_examples(sorted(unassigned))}): "
            "the twin's OpenSM gives them one"
        )
    if shared:
        notes.append(
            f"{len(shared)} LID(s) are held by more than one port in the source ({_examples(shared)}): "
            "the twin's OpenSM gives those ports LIDs of its own"
        )
    return "".join(line + "\n" for line in lines), tuple(notes), kept


def _notes(
    fabric: Fabric,
    sim_speeds: Mapping[str, str],
    odd_links: list[str],
    changed: Mapping[Guid, str],
    reachable: frozenset[Guid],
    attach: Guid | None,
    usual: tuple[int, str],
) -> tuple[str, ...]:
    notes = []
    for speed, sim in sorted(sim_speeds.items()):
        n = sum(1 for lk in fabric.links if lk.speed == speed)
        notes.append(
            f"ibsim 0.10 has no {speed}: {n} link(s) run at {sim} in the twin, so the tools read {sim} "
            "there (widths and other speeds as captured)"
        )
    if odd_links:
        notes.append(
            f"{len(odd_links)} link(s) whose width or speed the source could not read run at "
            f"{usual[0]}x{usual[1]}, the fabric's usual: {_examples(odd_links)}"
        )
    if changed:
        notes.append(
            f"{len(changed)} node description(s) are longer than ibsim's {MAX_DESCRIPTION} characters or hold a "
            f"double quote and are written cut: {_examples([repr(fabric.nodes[g].description) for g in sorted(changed)])}"
        )
    if any(n.kind is not NodeKind.SWITCH and n.nports for n in fabric.nodes.values()):
        notes.append(
            "ibsim gives an HCA port the GUID node GUID + port number; the source's port GUIDs are not copied"
        )
    if attach is None:
        notes.append("the source has no cable: nothing can attach to the twin")
    else:
        apart = [g for g in fabric.nodes if g not in reachable]
        if apart:
            names = [fabric.nodes[g].description or g for g in sorted(apart)]
            notes.append(
                f"{len(apart)} node(s) no cable joins to {fabric.nodes[attach].description or attach} "
                f"(the source holds a part of a fabric): the twin's tools cannot reach them: {_examples(names)}"
            )
    if fabric.unconnected:
        notes.append(
            f"{len(fabric.unconnected)} port(s) the source lists without a cable are simply not cabled in the twin "
            "(ibnetdiscover without -p does not list them)"
        )
    return tuple(notes)
