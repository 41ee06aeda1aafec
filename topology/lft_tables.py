"""The unicast forwarding tables (LFTs) of a fabric as one switch x LID array, and the limits of
their entries. Pure. Read by :mod:`topology.lft` (every dump form) and built by the lab and the
tests from ``{switch: {LID: port}}`` mappings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topology.model import Guid

NO_ROUTE = 255  # the LFT's "no port" (OSM_NO_PATH)
MAX_UNICAST_LID = 0xBFFF  # 49151: LIDs above are multicast
MAX_SWITCH_PORT = 254  # a switch port number is a byte; 255 means no route
TOOL = "lft"

# The dump formats, as :attr:`Lfts.format` names them.
IBROUTE = "ibroute"  # ibroute by LID, dump_lfts by LID
DUMP_FTS = "dump_fts"  # dump_fts / dump_lfts -D: switches by directed route
OPENSM_LFTS = "opensm-lfts.dump"
OPENSM_FDBS = "opensm.fdbs"
IBDIAGNET_FDBS = "ibdiagnet2.fdbs"


@dataclass(frozen=True, slots=True)
class Destination:
    """What a dump says is at a LID (the tools resolve it when they dump; fdbs forms do not)."""

    kind: str  # "Channel Adapter", "Switch", "Router"
    port_guid: Guid
    description: str


@dataclass(frozen=True, eq=False)
class Lfts:
    """The unicast forwarding tables of a fabric: ``ports[i, lid]`` is the port switch
    ``switches[i]`` sends LID ``lid`` out of (0: itself, :data:`NO_ROUTE`: none)."""

    source: str
    format: str
    switches: tuple[Guid, ...]
    ports: np.ndarray[Any, np.dtype[np.uint8]]
    switch_lids: tuple[int | None, ...] = ()  # the header's "Lid N" (None: by DR, or an fdbs form)
    names: tuple[str, ...] = ()  # the switch as its header describes it ('' when it does not)
    header_lines: tuple[int, ...] = ()  # where each switch's table starts in the source
    destinations: Mapping[int, Destination] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what was read but is not the LFT (private tables)
    _rows: dict[Guid, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._rows.update({g: i for i, g in enumerate(self.switches)})

    @property
    def top(self) -> int:
        """The largest LID a column exists for."""
        return int(self.ports.shape[1]) - 1

    def row(self, switch: Guid) -> int | None:
        return self._rows.get(switch)

    def port(self, switch: Guid, lid: int) -> int | None:
        """The out port of ``switch`` for ``lid``; None when the switch has no table or no route."""
        i = self._rows.get(switch)
        if i is None or not 0 <= lid <= self.top:
            return None
        p = int(self.ports[i, lid])
        return None if p == NO_ROUTE else p

    def entries(self) -> int:
        """Routes set (entries other than :data:`NO_ROUTE`)."""
        return int(np.count_nonzero(self.ports != NO_ROUTE))

    def line_of(self, switch: Guid) -> int:
        i = self._rows.get(switch)
        return self.header_lines[i] if i is not None and i < len(self.header_lines) else 0

    def to_mapping(self) -> dict[Guid, dict[int, int]]:
        """``{switch: {LID: port}}``, the form of :data:`topology.routes.ForwardingTables`."""
        out: dict[Guid, dict[int, int]] = {}
        for i, g in enumerate(self.switches):
            row = self.ports[i]
            lids = np.flatnonzero(row != NO_ROUTE)
            out[g] = dict(zip(lids.tolist(), row[lids].tolist(), strict=True))
        return out

    @classmethod
    def from_mapping(cls, tables: Mapping[Guid, Mapping[int, int]], source: str = "<tables>") -> Lfts:
        """The array form of ``{switch: {LID: port}}`` tables (a port of 255 is no route)."""
        switches = tuple(tables)
        top = max((max(t, default=0) for t in tables.values()), default=0)
        ports = np.full((len(switches), top + 1), NO_ROUTE, np.uint8)
        for i, g in enumerate(switches):
            t = tables[g]
            if t:
                ports[i, np.fromiter(t.keys(), np.int64, len(t))] = np.fromiter(t.values(), np.int64, len(t))
        return cls(source, "mapping", switches, ports)
