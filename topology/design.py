"""The records of a synthetic fabric: what to build (:class:`FabricSpec`), what to break
(:class:`FaultSpec`), and the result (:class:`Design`: switches, HCAs, cables as intended and as
built, the faults planted). Built by :mod:`topology.generate`, broken by
:mod:`topology.generate_faults`, written by :mod:`topology.generate_text`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from topology.model import SPEED_ORDER, Guid, Link, PortRef

KINDS = ("leafspine", "rail")
# Switch model by radix: (model, PCI device id, default speed).
SWITCH_MODELS: Mapping[int, tuple[str, int, str]] = MappingProxyType(
    {36: ("MSB7800", 0xCB84, "EDR"), 40: ("MQM8700", 0xCF08, "HDR"), 64: ("MQM9700", 0xD2F0, "NDR")}
)
# HCA device id by fabric speed (ConnectX-5 / -6 / -7).
HCA_DEVIDS: Mapping[str, int] = MappingProxyType({"EDR": 0x1017, "HDR": 0x101B, "NDR": 0x1021})
VENDOR_ID = 0x2C9
FABRIC_SPEEDS = ("EDR", "HDR", "NDR")

SPEC_KEYS = {
    "leafspine": (
        "leaves",
        "spines",
        "hosts",
        "hcas",
        "radix",
        "speed",
        "cables",
        "side",
        "side_hosts",
        "side_spines",
        "service",
        "ufm",
        "directors",
        "pods",
        "fabric_boards",
        "line_boards",
    ),
    "rail": (
        "units",
        "nodes",
        "hcas",
        "spines",
        "core",
        "radix",
        "speed",
        "cables",
        "side",
        "side_hosts",
        "side_spines",
        "service",
        "ufm",
    ),
}


@dataclass(frozen=True, slots=True)
class FabricSpec:
    """What to build. ``cables`` is the number of cables from each leaf to each spine (0 = auto)."""

    kind: str
    spines: int
    radix: int
    speed: str
    leaves: int = 0  # leafspine
    hosts: int = 0  # leafspine: hosts per leaf
    units: int = 0  # rail: scalable units
    nodes: int = 0  # rail: nodes per unit
    hcas: int = 0  # rail: HCAs (= rails) per node; leafspine: HCAs per host, all on its leaf (0: one)
    core: int = 0  # rail: core switches (0 = two tiers)
    cables: int = 0
    side: int = 0  # leaves of a management side group (0: none)
    side_hosts: int = 0  # hosts per side leaf
    side_spines: int = 0  # spines of the side group
    service: int = 0  # service leaves with a login and a storage node each (topology.generate_service)
    ufm: int = 0  # UFM servers with two HCAs on compute leaves
    directors: int = 0  # leafspine: director chassis as the spine tier (topology.generate_director)
    pods: int = 0  # leafspine with directors: blocks of leaves, each on its own line boards
    fabric_boards: int = 0  # fabric boards per director (0: the default)
    line_boards: int = 0  # line boards per director (0: one per pod; more: uncabled outside)

    @property
    def host_hcas(self) -> int:
        """HCAs per host: a rail node's rails; a leafspine host's (one unless ``hcas`` says)."""
        return max(1, self.hcas)

    def text(self) -> str:
        """The canonical spec string (parses back to an equal spec)."""
        optional = (
            "cables",
            "side",
            "side_hosts",
            "side_spines",
            "hcas",
            "service",
            "ufm",
            "directors",
            "pods",
            "fabric_boards",
            "line_boards",
        )
        vals = {k: getattr(self, k) for k in SPEC_KEYS[self.kind] if k not in optional or getattr(self, k)}
        return self.kind + ":" + ",".join(f"{k}={v}" for k, v in vals.items())


@dataclass(frozen=True, slots=True)
class DesignSwitch:
    guid: Guid
    name: str  # the short node id (ibsim console, net file)
    description: str  # NodeDescription: MF0;leaf-su01-r3:MQM9700/U1
    role: str  # leaf | spine | core | side-leaf | side-spine | service-leaf (a director's line boards are spines, its fabric boards cores)
    unit: int | None
    rail: int | None
    nports: int
    devid: int
    sysimgguid: Guid | None = None  # a director board's chassis; None: the switch's own GUID

    @property
    def image(self) -> Guid:
        """The system image GUID the switch reports."""
        return self.sysimgguid or self.guid


@dataclass(frozen=True, slots=True)
class DesignHca:
    guid: Guid
    port_guid: Guid
    host: str
    index: int  # the N of mlx5_N, which is also the rail on rail fabrics
    unit: int
    devid: int
    present: bool = True
    role: str = "compute"  # compute | service (a login, storage or UFM server)

    @property
    def description(self) -> str:
        return f"{self.host} mlx5_{self.index}"


@dataclass(frozen=True, slots=True)
class PlantedFault:
    """An anomaly planted on purpose, as discovery should report it."""

    kind: str  # the anomaly kind discovery reports: rail_miswire, missing_link, missing_hca, ...
    fault: str  # the fault spec that planted it
    guids: tuple[Guid, ...]
    ports: tuple[PortRef, ...]
    description: str


@dataclass(frozen=True, slots=True)
class Design:
    spec: FabricSpec
    faults: tuple[str, ...]
    switches: tuple[DesignSwitch, ...]
    hcas: tuple[DesignHca, ...]
    cables: tuple[Link, ...]  # as intended
    built: tuple[Link, ...]  # as built: faults applied
    planted: tuple[PlantedFault, ...]
    # What the ibnetdiscover text writes otherwise than built (faults of the subnet manager's
    # making, which a simulator's own SM would undo): a node's LID, an HCA's GUID (another's).
    lids: tuple[tuple[Guid, int], ...] = ()
    guids: tuple[tuple[Guid, Guid], ...] = ()

    @property
    def speed(self) -> str:
        return self.spec.speed

    def present_hcas(self) -> list[DesignHca]:
        return [h for h in self.hcas if h.present]

    def switch(self, name: str) -> DesignSwitch:
        for s in self.switches:
            if s.name == name:
                return s
        raise KeyError(name)


@dataclass(frozen=True, slots=True)
class FaultSpec:
    kind: str  # miswire | missing-link | missing-hca | degraded-width | degraded-speed | no-lid | dup-...
    target: str  # host or switch name
    args: tuple[str, ...]
    text: str


def lower_speed(speed: str) -> str:
    """The next slower speed token: ``lower_speed('HDR') == 'EDR'``."""
    i = SPEED_ORDER.index(speed)
    return SPEED_ORDER[max(0, i - 1 if SPEED_ORDER[i - 1] != "FDR10" else i - 2)]
