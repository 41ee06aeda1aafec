"""Synthetic fabrics: leaf-spine fat trees and rail-optimised (DGX SuperPOD-like) fabrics.

A *spec* says what to build, *faults* say what to break, and :func:`build_design` returns a
:class:`Design`: the intended switches, HCAs and cables, the cables as built (faults applied) and
the anomalies a discovery tool should report. The writers in :mod:`topology.generate_text` turn a
design into an ibsim net file or into real-looking ``ibnetdiscover`` output.

Spec grammar (``BASE[:KEY=VALUE,...]``; BASE is a kind or a preset whose values the keys override)::

    leafspine:leaves=4,spines=2,hosts=8,radix=40,speed=HDR
    leafspine:leaves=4,spines=2,hosts=4,hcas=8,radix=64   (hosts of 8 HCAs, all on their leaf)
    rail:units=2,nodes=4,hcas=8,spines=4,core=0,radix=64,speed=NDR
    rail-small            rail-small:speed=HDR
    rail-3tier:side=3     (a side group: see below)

``service=L`` adds L service leaves (``svc-leaf-NN``, two cables to one spine) each carrying a
login node and a storage node with other HCA counts than the compute nodes, and ``ufm=N`` N UFM
servers with two HCAs on compute leaves (topology.generate_service).

``directors=D`` makes the spine tier of a leafspine fabric D director chassis, and ``pods=P``
splits its leaves into P pods, each cabled to its own line board of every chassis
(``fabric_boards`` per chassis, default 2; ``line_boards`` adds uncabled ones; see
topology.generate_director)::

    leafspine:leaves=8,hosts=4,directors=2,pods=4

``side=L`` adds a management side group to either kind: L leaves (``mgmt-leaf-NN``) with
``side_hosts`` single-HCA hosts each (``mgmt-NNNN mlx5_0``, default 4), ``side_spines`` spines of
its own (``mgmt-spine-NN``, default 2), and each of those spines cabled once to two switches of
the compute fabric's top tier (its cores, or its spines on a two-tier fabric).

Fault grammar (``KIND:ARGS``, colon separated)::

    miswire:HOST:A:B                   swap the leaf cables of HCAs mlx5_A and mlx5_B of HOST
    missing-link:SWITCH[:PORT]         drop one switch-to-switch cable (first uplink, or the one on PORT)
    missing-hca:HOST:N                 HCA mlx5_N of HOST is absent (dead card)
    no-lid:HOST:N | no-lid:SWITCH      the SM gave it no LID: the text writes 65535 (an HCA), 0 (a switch)
    dup-lid:HOST:N:HOST2:M | dup-lid:SWITCH:SWITCH2   the second is written with the first's LID
    dup-guid:HOST:N:HOST2:M            HOST2's mlx5_M is written with the GUID of HOST's mlx5_N

The last three are what a subnet manager (or a card's firmware) makes: only the ibnetdiscover
text (:func:`to_ibnetdiscover`) shows them; the lab's OpenSM assigns its own LIDs, so the lab
refuses them.

On a leafspine fabric a host's HCAs take consecutive ports of its leaf (mlx5_0 first).
    degraded-width:SWITCH:PORT[:W]     the cable on PORT trains at W lanes (1 or 2; default 1)
    degraded-speed:SWITCH:PORT[:SPEED] the cable on PORT trains at SPEED (default one step below)

>>> d = build_design(parse_fabric_spec("rail:units=1,nodes=2,hcas=2,spines=1,radix=64"))
>>> [s.name for s in d.switches], [h.description for h in d.hcas][:2]
(['leaf-su01-r0', 'leaf-su01-r1', 'spine-01'], ['dgx-0001 mlx5_0', 'dgx-0001 mlx5_1'])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from topology.design import (
    FABRIC_SPEEDS,
    HCA_DEVIDS,
    KINDS,
    SPEC_KEYS,
    SWITCH_MODELS,
    VENDOR_ID,
    Design,
    DesignHca,
    DesignSwitch,
    FabricSpec,
    FaultSpec,
    PlantedFault,
    lower_speed,
)
from topology.errors import ParseError, UsageError
from topology.generate_director import build_directors, director_plan
from topology.generate_faults import plant
from topology.generate_service import SERVICE_ROLE, add_service, compute_hcas
from topology.generate_text import ibsim_limits, to_ibnetdiscover, to_ibsim_net
from topology.model import Guid, Link, PortRef

_LEAF_GUID, _SPINE_GUID, _CORE_GUID = 0x0C42A10300A00000, 0x0C42A10300A10000, 0x0C42A10300A20000
_SIDE_LEAF_GUID, _SIDE_SPINE_GUID = 0x0C42A10300A30000, 0x0C42A10300A40000
_HCA_GUID = 0x1070FD0300100000

PRESETS: Mapping[str, str] = MappingProxyType(
    {
        "rail-small": "rail:units=2,nodes=4,hcas=8,spines=4,radix=64,speed=NDR",
        "rail-3tier": "rail:units=2,nodes=4,hcas=4,spines=2,core=2,radix=64,speed=NDR",
        "fattree-small": "leafspine:leaves=4,spines=2,hosts=8,radix=40,speed=HDR",
        "superpod-1su": "rail:units=1,nodes=32,hcas=8,spines=4,radix=64,speed=NDR",
        "superpod-4su": "rail:units=4,nodes=32,hcas=8,spines=16,radix=64,speed=NDR",
        "superpod-64su": "rail:units=64,nodes=32,hcas=8,spines=8,core=256,radix=64,speed=NDR",
    }
)
DEFAULT_PRESET = "rail-small"


# -- parsing ------------------------------------------------------------------------------------
def parse_fabric_spec(text: str) -> FabricSpec:
    """Parse ``BASE[:KEY=VALUE,...]``; raises UsageError naming the problem."""
    raw = text.strip() or DEFAULT_PRESET
    base, _, rest = raw.partition(":")
    values: dict[str, str] = {}
    if base in PRESETS:
        kind, _, preset_rest = PRESETS[base].partition(":")
        values.update(_pairs(preset_rest, raw))
    elif base in KINDS:
        kind = base
    else:
        known = ", ".join((*KINDS, *PRESETS))
        raise UsageError(f"fabric spec {raw!r}: unknown kind or preset {base!r} (known: {known})")
    values.update(_pairs(rest, raw))
    for key in values:
        if key not in SPEC_KEYS[kind]:
            raise UsageError(
                f"fabric spec {raw!r}: {kind} has no {key!r} (keys: {', '.join(SPEC_KEYS[kind])})"
            )
    ints: dict[str, int] = {}
    for key, val in values.items():
        if key == "speed":
            continue
        if not val.isdigit():
            raise UsageError(f"fabric spec {raw!r}: {key}={val!r} is not a whole number")
        ints[key] = int(val)
    radix = ints.pop("radix", 64 if kind == "rail" else 40)
    if radix not in SWITCH_MODELS:
        raise UsageError(f"fabric spec {raw!r}: radix {radix} unknown (use 36, 40 or 64)")
    speed = values.get("speed", SWITCH_MODELS[radix][2]).upper()
    if speed not in FABRIC_SPEEDS:
        raise UsageError(f"fabric spec {raw!r}: speed {speed!r} unknown (use {', '.join(FABRIC_SPEEDS)})")
    need: tuple[str, ...] = (
        ("leaves", "spines", "hosts") if kind == "leafspine" else ("units", "hcas", "spines")
    )
    if ints.get("directors"):  # the chassis are the spine tier
        if ints.setdefault("spines", 0):
            raise UsageError(f"fabric spec {raw!r}: directors are the spine tier; leave out spines")
        need = ("leaves", "hosts")
    defaults = {
        "leafspine": {"leaves": 4, "spines": 2, "hosts": 8},
        "rail": {"units": 1, "hcas": 8, "spines": 4},
    }
    for key in need:
        ints.setdefault(key, defaults[kind][key])
        if ints[key] < 1:
            raise UsageError(f"fabric spec {raw!r}: {key} must be at least 1")
    if kind == "rail":
        ints.setdefault("nodes", 32)
        if ints["nodes"] < 1:
            raise UsageError(f"fabric spec {raw!r}: nodes must be at least 1")
    if kind == "leafspine" and ints.get("hcas", 1) < 1:
        raise UsageError(f"fabric spec {raw!r}: hcas must be at least 1")
    if kind == "leafspine" and ints.get("hcas") == 1:
        del ints["hcas"]  # one HCA per host is the leafspine default: one spelling of the spec
    if ints.get("side"):
        ints.setdefault("side_hosts", 4)
        ints.setdefault("side_spines", 2)
        if ints["side_hosts"] < 1 or ints["side_spines"] < 1:
            raise UsageError(
                f"fabric spec {raw!r}: a side group needs side_hosts and side_spines of at least 1"
            )
        if ints["side_hosts"] + ints["side_spines"] > radix or ints["side"] + 2 > radix:
            raise UsageError(f"fabric spec {raw!r}: the side group does not fit radix {radix}")
    if (ints.get("pods") or ints.get("fabric_boards") or ints.get("line_boards")) and not ints.get(
        "directors"
    ):
        raise UsageError(f"fabric spec {raw!r}: pods, fabric_boards and line_boards come with directors")
    spec = FabricSpec(kind=kind, radix=radix, speed=speed, **ints)
    if spec.directors:
        director_plan(spec, raw)  # port checks
    else:
        _plan(spec, raw)  # radix checks
    return spec


def _pairs(text: str, raw: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, eq, val = item.partition("=")
        if not eq or not key.strip() or not val.strip():
            raise UsageError(f"fabric spec {raw!r}: {item!r} is not KEY=VALUE")
        out[key.strip().lower()] = val.strip()
    return out


_FAULT_ARITY = {
    "miswire": (3, 3),
    "missing-link": (1, 2),
    "missing-hca": (2, 2),
    "degraded-width": (2, 3),
    "degraded-speed": (2, 3),
    "no-lid": (1, 2),
    "dup-lid": (2, 4),
    "dup-guid": (4, 4),
}


def parse_fault(text: str) -> FaultSpec:
    """Parse one fault spec such as ``miswire:dgx-0002:1:2`` (syntax only; targets are checked later)."""
    parts = [p.strip() for p in text.strip().split(":")]
    kind = parts[0].lower()
    if kind not in _FAULT_ARITY:
        raise UsageError(f"fault {text!r}: unknown kind {parts[0]!r} (known: {', '.join(_FAULT_ARITY)})")
    lo, hi = _FAULT_ARITY[kind]
    if not lo <= len(parts) - 1 <= hi or not all(parts[1:]):
        raise UsageError(f"fault {text!r}: {kind} takes {lo}{'' if lo == hi else f' to {hi}'} arguments")
    return FaultSpec(kind, parts[1], tuple(parts[2:]), text.strip())


# -- building -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Plan:
    down: int  # host ports per leaf
    per_group: int  # leaves per spine group
    k: int  # cables from each leaf to each spine of its group
    c: int  # cables from each spine to each core of its plane (3-tier)
    cores_per_plane: int


def _plan(spec: FabricSpec, raw: str) -> _Plan:
    r, s = spec.radix, spec.spines
    if spec.kind == "leafspine":
        down, leaves_per_group = spec.hosts * spec.host_hcas, spec.leaves
    else:
        down = spec.nodes
        leaves_per_group = spec.hcas if spec.core else spec.units * spec.hcas
    k = spec.cables or max(1, down // s)
    if down + k * s > r:
        raise UsageError(
            f"fabric spec {raw!r}: a leaf needs {down} host ports + {k * s} uplinks but has radix {r}"
        )
    spine_down = leaves_per_group * k
    if not spec.core:
        if spine_down > r:
            raise UsageError(f"fabric spec {raw!r}: a spine needs {spine_down} ports but has radix {r}")
        return _Plan(down, leaves_per_group, k, 0, 0)
    if spec.core % s:
        raise UsageError(f"fabric spec {raw!r}: core={spec.core} must be a multiple of spines={s}")
    cpp = spec.core // s
    c = min(max(1, spine_down // cpp), (r - spine_down) // cpp)
    if c < 1:
        raise UsageError(f"fabric spec {raw!r}: a spine has no ports left for {cpp} core uplinks (radix {r})")
    if spec.units * c > r:
        raise UsageError(f"fabric spec {raw!r}: a core needs {spec.units * c} ports but has radix {r}")
    return _Plan(down, leaves_per_group, k, c, cpp)


def build_design(spec: FabricSpec, faults: Sequence[str | FaultSpec] = ()) -> Design:
    """The intended fabric for ``spec`` with ``faults`` planted (UsageError on a bad fault)."""
    plan = _plan(spec, spec.text()) if not spec.directors else _Plan(spec.hosts, 0, 0, 0, 0)
    model, sw_devid, _ = SWITCH_MODELS[spec.radix]
    hca_devid = HCA_DEVIDS[spec.speed]
    switches: list[DesignSwitch] = []
    hcas: list[DesignHca] = []
    cables: list[Link] = []
    speed, r = spec.speed, spec.radix

    def switch(base: int, idx: int, name: str, role: str, unit: int | None, rail: int | None) -> Guid:
        guid = Guid(f"0x{base + idx:016x}")
        desc = f"MF0;{name}:{model}/U1"
        switches.append(DesignSwitch(guid, name, desc, role, unit, rail, r, sw_devid))
        return guid

    def cable(a: Guid, pa: int, b: Guid, pb: int) -> None:
        cables.append(Link(PortRef(a, pa), PortRef(b, pb), 4, speed))

    rail = spec.kind == "rail"
    groups = (spec.units if spec.core else 1) if rail else 1
    # leaves[group] = list of (leaf guid, [(host, index, unit)] in port order)
    leaf_groups: list[list[tuple[Guid, list[tuple[str, int, int]]]]] = [[] for _ in range(groups)]
    if rail:
        for u in range(spec.units):
            group = leaf_groups[u if spec.core else 0]
            for rl in range(spec.hcas):
                name = f"leaf-su{u + 1:02d}-r{rl}"
                g = switch(_LEAF_GUID, u * spec.hcas + rl, name, "leaf", u + 1, rl)
                hosts = [(f"dgx-{u * spec.nodes + n + 1:04d}", rl, u + 1) for n in range(spec.nodes)]
                group.append((g, hosts))
    else:
        for li in range(spec.leaves):
            g = switch(_LEAF_GUID, li, f"leaf-{li + 1:02d}", "leaf", None, None)
            leaf_groups[0].append(
                (
                    g,
                    [
                        (f"cn{li * spec.hosts + h + 1:04d}", i, 1)
                        for h in range(spec.hosts)
                        for i in range(spec.host_hcas)
                    ],
                )
            )
    # HCAs: numbered host by host so that GUIDs of one host are adjacent.
    slots: dict[tuple[str, int], tuple[Guid, int]] = {}
    for group in leaf_groups:
        for leaf, hosts in group:
            for port, (host, idx, _unit) in enumerate(hosts, 1):
                slots[(host, idx)] = (leaf, port)
    units_of = {h: u for group in leaf_groups for _, hosts in group for h, _, u in hosts}
    for n, (host, idx) in enumerate(sorted(slots, key=lambda hi: (hi[0], hi[1]))):
        guid = _HCA_GUID + 2 * n
        hca = DesignHca(
            Guid(f"0x{guid:016x}"), Guid(f"0x{guid + 1:016x}"), host, idx, units_of[host], hca_devid
        )
        hcas.append(hca)
        leaf, port = slots[(host, idx)]
        cable(leaf, port, hca.guid, 1)
    # Spines per group, leaves cabled evenly to every spine of their group.
    spine_guids: list[list[Guid]] = []
    if spec.directors:
        build_directors(spec, [leaf for leaf, _ in leaf_groups[0]], switches, cable)
    for gi, group in enumerate(leaf_groups if not spec.directors else ()):
        spines = []
        for j in range(spec.spines):
            name = f"spine-su{gi + 1:02d}-{j + 1:02d}" if spec.core else f"spine-{j + 1:02d}"
            unit = gi + 1 if spec.core else None
            spines.append(switch(_SPINE_GUID, gi * spec.spines + j, name, "spine", unit, None))
        spine_guids.append(spines)
        for li, (leaf, _) in enumerate(group):
            for j, sg in enumerate(spines):
                for c in range(plan.k):
                    cable(leaf, plan.down + 1 + j * plan.k + c, sg, 1 + li * plan.k + c)
    if spec.core:
        spine_down = plan.per_group * plan.k
        for j in range(spec.spines):  # plane j: spine j of every group, cores_per_plane cores
            for q in range(plan.cores_per_plane):
                qi = j * plan.cores_per_plane + q
                core = switch(_CORE_GUID, qi, f"core-{qi + 1:02d}", "core", None, None)
                for gi in range(groups):
                    for c in range(plan.c):
                        sp = spine_down + 1 + q * plan.c + c
                        cable(spine_guids[gi][j], sp, core, 1 + gi * plan.c + c)
    if spec.side:
        _side_group(spec, switches, hcas, cables, switch, cable)
    if spec.service or spec.ufm:
        add_service(spec, switches, hcas, cables, switch, cable)
    design = Design(spec, (), tuple(switches), tuple(hcas), tuple(cables), tuple(cables), ())
    return plant(design, [f if isinstance(f, FaultSpec) else parse_fault(f) for f in faults])


def _side_group(
    spec: FabricSpec,
    switches: list[DesignSwitch],
    hcas: list[DesignHca],
    cables: list[Link],
    switch: Any,
    cable: Any,
) -> None:
    """A management side group (see the module docstring), appended to the lists."""
    top_role = "core" if spec.core else "spine"
    top = [s for s in switches if s.role == top_role]
    used: dict[Guid, int] = {}
    for lk in cables:
        for end in (lk.a, lk.b):
            used[end.guid] = max(used.get(end.guid, 0), end.port)
    spines = [
        switch(_SIDE_SPINE_GUID, j, f"mgmt-spine-{j + 1:02d}", "side-spine", None, None)
        for j in range(spec.side_spines)
    ]
    hca_devid = HCA_DEVIDS[spec.speed]
    n = len(hcas)
    # A management host has one HCA: another shape than multi-HCA compute nodes (a service host,
    # topology.hostroles); beside single-HCA compute nodes nothing tells it apart.
    side_role = SERVICE_ROLE if compute_hcas(spec) > 1 else "compute"
    for li in range(spec.side):
        leaf = switch(_SIDE_LEAF_GUID, li, f"mgmt-leaf-{li + 1:02d}", "side-leaf", None, None)
        for h in range(spec.side_hosts):
            guid = _HCA_GUID + 2 * n
            n += 1
            host = f"mgmt-{li * spec.side_hosts + h + 1:04d}"
            hca = DesignHca(
                Guid(f"0x{guid:016x}"), Guid(f"0x{guid + 1:016x}"), host, 0, 0, hca_devid, role=side_role
            )
            hcas.append(hca)
            cable(leaf, h + 1, hca.guid, 1)
        for j, sp in enumerate(spines):
            cable(leaf, spec.side_hosts + 1 + j, sp, li + 1)
    for j, sp in enumerate(spines):
        for q in range(2):
            up = top[(2 * j + q) % len(top)]
            port = used[up.guid] + 1
            if port > spec.radix:
                raise UsageError(
                    f"fabric spec {spec.text()!r}: {up.name} has no port left for the side group"
                )
            used[up.guid] = port
            cable(sp, spec.side + 1 + q, up.guid, port)


def generate(spec: str = DEFAULT_PRESET, faults: Sequence[str] = ()) -> Design:
    """Parse ``spec`` and ``faults`` and build the design."""
    return build_design(parse_fabric_spec(spec), [parse_fault(f) for f in faults])


# -- JSON ---------------------------------------------------------------------------------------
def design_to_dict(design: Design) -> dict[str, Any]:
    def link(lk: Link) -> list[Any]:
        return [lk.a.guid, lk.a.port, lk.b.guid, lk.b.port, lk.width, lk.speed]

    out: dict[str, Any] = {
        "format": "ibfab-design/1",
        "spec": design.spec.text(),
        "faults": list(design.faults),
        "switches": [dataclasses.asdict(s) for s in design.switches],
        "hcas": [dataclasses.asdict(h) for h in design.hcas],
        "cables": [link(lk) for lk in design.cables],
        "built": [link(lk) for lk in design.built],
        "planted": [
            {
                "kind": p.kind,
                "fault": p.fault,
                "guids": list(p.guids),
                "ports": [[ref.guid, ref.port] for ref in p.ports],
                "description": p.description,
            }
            for p in design.planted
        ],
    }
    # Only when a fault set them: every other design's JSON stays as it was.
    if design.lids:
        out["lids"] = [[g, lid] for g, lid in design.lids]
    if design.guids:
        out["guids"] = [[g, w] for g, w in design.guids]
    return out


def design_from_dict(data: Mapping[str, Any], source: str = "design.json") -> Design:
    """Inverse of :func:`design_to_dict`; raises ParseError on a malformed record."""
    try:
        if data.get("format") != "ibfab-design/1":
            raise ValueError(f"unknown format {data.get('format')!r}")

        def link(row: Sequence[Any]) -> Link:
            a, pa, b, pb, w, s = row
            return Link(PortRef(Guid(a), int(pa)), PortRef(Guid(b), int(pb)), int(w), str(s))

        return Design(
            spec=parse_fabric_spec(str(data["spec"])),
            faults=tuple(str(f) for f in data["faults"]),
            switches=tuple(DesignSwitch(**s) for s in data["switches"]),
            hcas=tuple(DesignHca(**h) for h in data["hcas"]),
            cables=tuple(link(r) for r in data["cables"]),
            built=tuple(link(r) for r in data["built"]),
            lids=tuple((Guid(g), int(lid)) for g, lid in data.get("lids", [])),
            guids=tuple((Guid(g), Guid(w)) for g, w in data.get("guids", [])),
            planted=tuple(
                PlantedFault(
                    kind=p["kind"],
                    fault=p["fault"],
                    guids=tuple(Guid(g) for g in p["guids"]),
                    ports=tuple(PortRef(Guid(g), int(n)) for g, n in p["ports"]),
                    description=p["description"],
                )
                for p in data["planted"]
            ),
        )
    except (KeyError, TypeError, ValueError, UsageError) as exc:
        raise ParseError("design", source, 0, "", f"not an ibfab design: {exc}") from exc


__all__ = [
    "DEFAULT_PRESET",
    "FABRIC_SPEEDS",
    "HCA_DEVIDS",
    "KINDS",
    "PRESETS",
    "SWITCH_MODELS",
    "VENDOR_ID",
    "Design",
    "DesignHca",
    "DesignSwitch",
    "FabricSpec",
    "FaultSpec",
    "PlantedFault",
    "build_design",
    "design_from_dict",
    "design_to_dict",
    "generate",
    "ibsim_limits",
    "lower_speed",
    "parse_fabric_spec",
    "parse_fault",
    "to_ibnetdiscover",
    "to_ibsim_net",
]
