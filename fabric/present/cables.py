"""One cable for people: both ends, the module in each (vendor, part number, serial, length, type,
temperature, per-lane power), the FEC each port runs and each node's temperature."""

from __future__ import annotations

from collections.abc import Sequence

from fabric.app.discovery.cables import CableDetail, CableEnd
from fabric.present.overview import when
from fabric.present.table import ellipsis, table
from topology.cables import CableInfo

NO_INVENTORY = (
    "no cable inventory stored: keep one from an ibdiagnet run made with --get_cable_info "
    "('ibfab counters collect --ibdiagnet DIR'), or read a run directly with "
    "'ibfab topology cable --ibdiagnet DIR'"
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


def render_cable(d: CableDetail, width: int | None = None) -> str:
    """The cable with both ends side by side; where that is wider than ``width`` columns (an
    80-column terminal), one end under the other."""
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
    columns = [_end_column(e) for e in ends]
    labels = [*_MODULE_FIELDS, "FEC", "node temperature"]
    side_by_side = table(
        ["", *(_end_heading(e) for e in ends)],
        [[label, *(c[i] for c in columns)] for i, label in enumerate(labels)],
        60,
    )
    if width is None or max(map(len, side_by_side.splitlines())) <= width:
        lines.append(side_by_side)
    else:
        room = max(16, width - 20)  # the label column and the gap take 20
        for e, column in zip(ends, columns, strict=True):
            rows = list(zip(labels, column, strict=True))
            lines.append(table(["", ellipsis(_end_heading(e), room)], rows, room))
    taken = when(d.inventory_taken_at) if d.inventory_taken_at is not None else "an unknown time"
    lines.append(f"inventory: ibdiagnet run {d.inventory} at {taken}")
    return "\n".join(lines)


def _end_heading(e: CableEnd) -> str:
    return _end_label(e) if e.guid in e.name else f"{_end_label(e)} ({e.guid})"


def _end_column(e: CableEnd) -> list[str | None]:
    """What the inventory says of one end, in the order of the field labels."""
    return [
        *_module_rows(e.module),
        e.fec or "not read",
        "not read" if e.node_temperature_c is None else f"{e.node_temperature_c} C",
    ]


# The counter history beside a node's or a cable's ports: a label, then the sparkline.
SERIES_LABEL_WIDTH = 34
_SERIES_NAMES = {"symbol_errors": "symbol errors", "link_downed": "link downs", "xmit_data": "xmit Gb/s"}


def series_label(port: int, counter: str, peak: float) -> str:
    """``port   3 xmit Gb/s     max 197`` in at most SERIES_LABEL_WIDTH characters, the peak
    always whole (a lab's 3.5e-05 Gb/s was cut off after ``max``)."""
    name = _SERIES_NAMES.get(counter, counter)[:13]
    if counter == "xmit_data":  # Gb/s: a real link's hundreds, a lab's traces
        value = "0" if peak <= 0 else f"{peak:.1f}" if peak >= 0.1 else f"{peak:.2g}"
    else:  # counts per sample
        value = f"{peak:.0f}" if peak < 1e6 else f"{peak:.2g}"
    return f"port {port:>3} {name:<13} max {value}"[:SERIES_LABEL_WIDTH]
