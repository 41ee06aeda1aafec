"""The cable inventory of an ibdiagnet run: each port's module (``ibdiagnet2.cables``: vendor, part
number, serial, length, type, temperature, per-lane power), each port's FEC mode and each node's
temperature (``ibdiagnet2.db_csv``).

:func:`keep_inventory` keeps a run's ``.cables`` and ``db_csv`` texts in the store as raw
captures (kinds ``cables`` and ``port_state``); :func:`stored_inventory` reads the newest back.
:func:`cable_detail` is one cable with both of its ends, for the CLI (``ibfab topology cable``),
the TUI (:meth:`fabric.app.readmodel.service.FabricService.cable_detail`) and ``--json``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from fabric.app.discovery.ibdiag_files import ibdiagnet_files
from topology.cables import CableInfo, by_node, parse_cables
from topology.errors import UsageError
from topology.ibdiag_csv import node_of_port_guid, read_db_csv, run_time
from topology.ibdiag_state import IbdiagState, parse_db_csv_state
from topology.model import Guid, PortRef
from topology.textfile import read_input_text

if TYPE_CHECKING:
    from fabric.app.discovery.discover import Discovery
    from fabric.app.session import StoreAccess
    from fabric.store import Store

TOOL = "ibdiagnet"
CABLES_KIND, CABLES_PARSER = "cables", "cables/1"
STATE_KIND, STATE_PARSER = "port_state", "db_csv-state/1"


@dataclass(frozen=True)
class CableInventory:
    """What one ibdiagnet run read of the modules and ports; keys are node GUID and port."""

    source: str  # the run's db_csv
    taken_at: float | None  # when the run ran (None: it did not say)
    cables: Mapping[PortRef, CableInfo]  # empty when the run had no .cables (no --get_cable_info)
    state: IbdiagState

    def module(self, ref: PortRef) -> CableInfo | None:
        return self.cables.get(PortRef(ref.guid, ref.port))

    def fec(self, ref: PortRef) -> str | None:
        fec = self.state.fec.get(PortRef(ref.guid, ref.port))
        return fec.mode if fec is not None else None

    def temperature(self, guid: Guid) -> int | None:
        return self.state.temperature.get(guid)


def inventory_of(
    db_csv_text: str, source: str, cables_text: str | None, cables_source: str = "<cables>"
) -> CableInventory:
    """The inventory from a run's texts (the db_csv maps an HCA's port GUID to its node)."""
    cables: Mapping[PortRef, CableInfo] = MappingProxyType({})
    if cables_text is not None:
        cables = MappingProxyType(
            by_node(parse_cables(cables_text, cables_source), node_of_port_guid(db_csv_text, source))
        )
    return CableInventory(
        source, run_time(db_csv_text, source), cables, parse_db_csv_state(db_csv_text, source)
    )


def _read(path: Path) -> str:
    return read_input_text(path, TOOL)


def read_inventory(path: str | Path) -> CableInventory:
    """The inventory of the ibdiagnet run in ``path`` (a directory, or its db_csv)."""
    files = ibdiagnet_files(path)
    cables = _read(files.cables) if files.cables is not None else None
    return inventory_of(read_db_csv(files.db_csv), str(files.db_csv), cables, str(files.cables))


def keep_inventory(store: Store, path: str | Path) -> CableInventory:
    """Keep the run's ``.cables`` and ``db_csv`` texts in the store (raw captures, at the run's
    time); returns what they say. The newest kept run is what :func:`stored_inventory` reads."""
    from fabric.store import RawCapture

    files = ibdiagnet_files(path)
    text = read_db_csv(files.db_csv)
    cables = _read(files.cables) if files.cables is not None else None
    inv = inventory_of(text, str(files.db_csv), cables, str(files.cables))
    when = inv.taken_at if inv.taken_at is not None else files.db_csv.stat().st_mtime
    source = str(files.db_csv)
    store.save_capture(RawCapture(STATE_KIND, TOOL, text, when, source, (), STATE_PARSER))
    if cables is not None:
        store.save_capture(RawCapture(CABLES_KIND, TOOL, cables, when, source, (), CABLES_PARSER))
    return inv


def stored_inventory(store: Store) -> CableInventory | None:
    """The newest kept run's inventory (None when no run was kept)."""
    states = store.list_captures(kind=STATE_KIND, tool=TOOL)
    if not states:
        return None
    newest = states[-1]
    text = store.load_capture(newest.id).text
    kept = [
        c
        for c in store.list_captures(kind=CABLES_KIND, tool=TOOL)
        if c.source == newest.source and c.taken_at == newest.taken_at
    ]
    cables = store.load_capture(kept[-1].id).text if kept else None
    return inventory_of(text, newest.source, cables, f"{newest.source} (.cables)")


# -- one cable ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CableEnd:
    """One end of a cable: the port, the module in it, the FEC it runs, its node's temperature."""

    guid: Guid
    port: int
    name: str
    module: CableInfo | None  # None: the inventory has no record of this port
    fec: str | None
    node_temperature_c: int | None

    def to_dict(self) -> dict[str, Any]:
        m = self.module
        return {
            "guid": self.guid,
            "port": self.port,
            "name": self.name,
            "fec": self.fec,
            "node_temperature_c": self.node_temperature_c,
            "module": None if m is None else module_to_dict(m),
        }


@dataclass(frozen=True, slots=True)
class CableDetail:
    """A port and, when it is cabled, the cable and its far end; the inventory it was read with."""

    near: CableEnd
    far: CableEnd | None  # None: nothing is cabled to this port in the fabric
    width: int | None
    speed: str | None
    inventory: str | None  # the run the module data is from; None when there is no inventory
    inventory_taken_at: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "near": self.near.to_dict(),
            "far": None if self.far is None else self.far.to_dict(),
            "width": self.width,
            "speed": self.speed,
            "inventory": self.inventory,
            "inventory_taken_at": self.inventory_taken_at,
        }


def module_to_dict(m: CableInfo) -> dict[str, Any]:
    return {
        "vendor": m.vendor,
        "part_number": m.part_number,
        "serial": m.serial,
        "revision": m.revision,
        "identifier": m.identifier,
        "type": m.cable_type,
        "copper": m.copper,
        "length_m": m.length_m,
        "temperature_c": m.temperature_c,
        "rx_power_dbm": list(m.rx_power_dbm),
        "tx_power_dbm": list(m.tx_power_dbm),
        "tx_bias_ma": list(m.tx_bias_ma),
    }


def cable_detail(d: Discovery, ref: PortRef, inv: CableInventory | None) -> CableDetail:
    """The cable at ``ref`` in the fabric of ``d``, with what ``inv`` read of both ends."""
    names = d.classification.nodes

    def end(r: PortRef) -> CableEnd:
        name = names[r.guid].name if r.guid in names else r.guid
        if inv is None:
            return CableEnd(r.guid, r.port, name, None, None, None)
        return CableEnd(r.guid, r.port, name, inv.module(r), inv.fec(r), inv.temperature(r.guid))

    for port, far, lk in d.fabric.neighbours(ref.guid):
        if port == ref.port:
            return CableDetail(
                end(ref),
                end(far),
                lk.width,
                lk.speed,
                inv.source if inv else None,
                inv.taken_at if inv else None,
            )
    return CableDetail(end(ref), None, None, None, inv.source if inv else None, inv.taken_at if inv else None)


_NODE_PORT = re.compile(r"^(?P<node>.+)[/:](?P<port>\d+)$")


def cable_at(d: Discovery, port: str, ibdiagnet: str | None, stored: StoreAccess) -> CableDetail:
    """``ibfab topology cable NODE/PORT``: the cable there, with the modules of the ``ibdiagnet``
    run when given, else of the newest inventory kept in the store (none: the ends only)."""
    from fabric.advise.candidates import resolve_port

    m = _NODE_PORT.match(port.strip())
    if m is None:
        raise UsageError(f"{port!r}: expected NODE/PORT, e.g. leaf-su01-r0/5 or 0x0c42a10300a00000/5")
    ref = resolve_port(d.fabric, d.classification, f"{m['node']}:{m['port']}")
    inv = None
    if ibdiagnet:
        inv = read_inventory(ibdiagnet)
    else:
        found = stored.read()
        if found is not None:
            with found as store:
                inv = stored_inventory(store)
    return cable_detail(d, ref, inv)
