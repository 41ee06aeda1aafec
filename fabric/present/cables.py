"""One cable for people: both ends, the module in each (vendor, part number, serial, length, type,
temperature, per-lane power), the FEC each port runs and each node's temperature."""

from __future__ import annotations

import time
from collections.abc import Sequence

from fabric.app.cables import CableDetail, CableEnd
from fabric.present.table import table
from topology.cables import CableInfo

NO_INVENTORY = (
    "no cable inventory: keep an ibdiagnet run's with 'ibfab counters collect --ibdiagnet DIR', "
    "or give --ibdiagnet DIR"
)


def _lanes(values: Sequence[float | None], unit: str) -> str | None:
    if not values:
        return None
    if all(v is None for v in values):
        return "not read"
    return " ".join("-" if v is None else f"{v:g}" for v in values) + f" {unit}"


def _module_rows(m: CableInfo | None) -> list[str | None]:
    if m is None:
        return ["no record"] + [None] * 9
    return [
        m.vendor,
        m.part_number,
        m.serial,
        m.cable_type,
        "unknown" if m.length_m is None else f"{m.length_m:g} m",
        "no sensor" if m.temperature_c is None else f"{m.temperature_c:g} C",
        _lanes(m.rx_power_dbm, "dBm"),
        _lanes(m.tx_power_dbm, "dBm"),
        _lanes(m.tx_bias_ma, "mA"),
        m.identifier,
    ]


_MODULE_FIELDS = (
    "vendor",
    "part number",
    "serial",
    "type",
    "length",
    "module temperature",
    "RX power per lane",
    "TX power per lane",
    "TX bias per lane",
    "form factor",
)


def _end_label(e: CableEnd) -> str:
    return f"{e.name}:{e.port}"


def render_cable(d: CableDetail) -> str:
    near, far = d.near, d.far
    if far is None:
        head = f"Port {_end_label(near)} ({near.guid}): nothing cabled to it in this fabric"
    else:
        head = f"Cable {_end_label(near)} <-> {_end_label(far)}  {d.width}x{d.speed}"
    lines = [head]
    if d.inventory is None:
        lines.append(NO_INVENTORY)
        return "\n".join(lines)
    ends = [near] if far is None else [near, far]
    rows: list[list[str | None]] = [[f] for f in _MODULE_FIELDS]
    rows.append(["FEC"])
    rows.append(["node temperature"])
    for e in ends:
        for row, value in zip(rows, _module_rows(e.module), strict=False):
            row.append(value)
        rows[-2].append(e.fec or "not read")
        rows[-1].append("not read" if e.node_temperature_c is None else f"{e.node_temperature_c} C")
    headers = ["", *(_end_label(e) if e.guid in e.name else f"{_end_label(e)} ({e.guid})" for e in ends)]
    lines.append(table(headers, rows, 60))
    when = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(d.inventory_taken_at))
        if d.inventory_taken_at is not None
        else "an unknown time"
    )
    lines.append(f"inventory: ibdiagnet run {d.inventory} at {when}")
    return "\n".join(lines)
