"""The cable inventory in ``ibdiagnet2.cables`` (``ibdiagnet --get_cable_info``): one record per
port with the module plugged into it: vendor, part number, serial, length, type, temperature,
and per-lane receive/transmit power and bias.

Readings a module cannot give are None, never a number: ``N/A``/``NA``; ``-999.999 mW`` and
``inf mW`` (no optical power to read); a passive copper cable's ``0C`` (it has no sensor).

>>> inv = parse_cables("Port=1 Lid=0x0018 GUID=0x0000000000000001 Port Name=x\\n"
...                    "Vendor: FS\\nPN: P1\\nSN: S1\\nLength: 2 m\\nTemperature: 41C\\n"
...                    "RX1 Power: 1.585 mW, 2.000 dBm\\nRX2 Power: -999.999 mW, 0.000 dBm\\n")
>>> c = inv[PortRef(Guid("0x0000000000000001"), 1)]
>>> (c.vendor, c.length_m, c.temperature_c, c.rx_power_dbm)
('FS', 2.0, 41.0, (2.0, None))
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from topology.bounds import lid_or_hex_problem, port_problem
from topology.errors import ParseError
from topology.model import Guid, PortRef, normalise_guid
from topology.textfile import read_input_text

TOOL = "ibdiagnet cables"
_HEADER = re.compile(
    r"^Port=(?P<port>\d+)\s+Lid=(?P<lid>0x[0-9a-fA-F]+|\d+)\s+GUID=(?P<guid>0x[0-9a-fA-F]+)"
    r"(?:\s+Port Name=(?P<name>.*))?$"
)
_LANE = re.compile(r"^(RX|TX)(\d{1,2}) (Power|Bias)$")  # a module has at most a few lanes
_POWER = re.compile(
    r"^(?P<mw>-?(?:\d+(?:\.\d+)?|inf|nan))\s*mW(?:,\s*(?P<dbm>-?(?:\d+(?:\.\d+)?|inf|nan))\s*dBm)?$", re.I
)
_LENGTH = re.compile(r"^(\d+(?:\.\d+)?)\s*m$")
_TEMPERATURE = re.compile(r"^(-?\d+(?:\.\d+)?)\s*C$")
_NOT_READ = frozenset({"", "N/A", "NA", "n/a"})


@dataclass(frozen=True, slots=True)
class CableInfo:
    ref: PortRef  # the GUID as the file gives it (a switch's node GUID, an HCA's port GUID)
    lid: int
    port_name: str
    vendor: str | None
    part_number: str | None
    serial: str | None
    revision: str | None
    identifier: str | None  # the module form factor: OSFP, QSFP56, ...
    cable_type: str | None  # "850 nm VCSEL", "Copper cable- unequalized", ...
    length_m: float | None
    temperature_c: float | None
    rx_power_dbm: tuple[float | None, ...]  # per lane, lane 1 first
    tx_power_dbm: tuple[float | None, ...]
    tx_bias_ma: tuple[float | None, ...]
    fields: Mapping[str, str]  # every field as written, for what is not typed above

    @property
    def copper(self) -> bool:
        return "copper" in (self.cable_type or "").casefold()


def _text(value: str | None) -> str | None:
    return None if value is None or value.strip() in _NOT_READ else value.strip()


def _power_dbm(value: str) -> float | None:
    m = _POWER.match(value.strip())
    if m is None:
        return None
    mw = float(m.group("mw"))
    # -999.999 mW and inf mW are what the tool prints when there is no reading.
    if not (mw > -999.0 and mw < float("inf")) or m.group("dbm") is None:
        return None
    dbm = float(m.group("dbm"))
    return dbm if abs(dbm) < 1000 else None


def _bias(value: str) -> float | None:
    m = re.match(r"^(-?\d+(?:\.\d+)?)\s*mA$", value.strip())
    return float(m.group(1)) if m else None


def _lanes(fields: Mapping[str, str], side: str, what: str, read: object) -> tuple[float | None, ...]:
    lanes: dict[int, float | None] = {}
    for key, value in fields.items():
        m = _LANE.match(key)
        if m and m.group(1) == side and m.group(3) == what:
            lanes[int(m.group(2))] = read(value)  # type: ignore[operator]
    return tuple(lanes.get(i) for i in range(1, max(lanes, default=0) + 1))


def _record(head: re.Match[str], fields: dict[str, str]) -> CableInfo:
    cable_type = _text(fields.get("Type"))
    length = _LENGTH.match((fields.get("Length") or "").strip())
    temp = _TEMPERATURE.match((fields.get("Temperature") or "").strip())
    temperature = float(temp.group(1)) if temp else None
    if temperature == 0.0 and "copper" in (cable_type or "").casefold():
        temperature = None  # a passive copper cable has no sensor
    return CableInfo(
        ref=PortRef(normalise_guid(head["guid"]), int(head["port"])),
        lid=int(head["lid"], 0),
        port_name=(head["name"] or "").strip(),
        vendor=_text(fields.get("Vendor")),
        part_number=_text(fields.get("PN")),
        serial=_text(fields.get("SN")),
        revision=_text(fields.get("Rev")),
        identifier=_text(fields.get("Identifier")),
        cable_type=cable_type,
        length_m=float(length.group(1)) if length else None,
        temperature_c=temperature,
        rx_power_dbm=_lanes(fields, "RX", "Power", _power_dbm),
        tx_power_dbm=_lanes(fields, "TX", "Power", _power_dbm),
        tx_bias_ma=_lanes(fields, "TX", "Bias", _bias),
        fields=MappingProxyType(dict(fields)),
    )


def parse_cables(text: str, source: str = "<cables>") -> Mapping[PortRef, CableInfo]:
    """Every port's module record, keyed by (GUID as written, port). Raises :class:`ParseError`
    for a field outside a port block or a line that is not ``Key: value``."""
    out: dict[PortRef, CableInfo] = {}
    head: re.Match[str] | None = None
    fields: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or set(line) == {"-"}:
            continue
        m = _HEADER.match(line)
        if m is not None:
            problem = lid_or_hex_problem(m["lid"]) or port_problem(m["port"]) or _guid_problem(m["guid"])
            if problem is not None:
                raise ParseError(TOOL, source, lineno, raw, problem)
            if head is not None:
                record = _record(head, fields)
                out[record.ref] = record
            head, fields = m, {}
            continue
        # "Key: value" split at the first colon (a lazy key pattern retried every position of
        # a long run of spaces before the colon: quadratic in the line)
        key, colon, value = line.partition(":")
        if not colon or not key or head is None:
            problem = (
                "field before any 'Port=N Lid=.. GUID=..' line"
                if colon and key
                else "not a 'Key: value' line"
            )
            raise ParseError(TOOL, source, lineno, raw, problem)
        fields.setdefault(key.strip(), value.strip())
    if head is not None:
        record = _record(head, fields)
        out[record.ref] = record
    return MappingProxyType(out)


def _guid_problem(text: str) -> str | None:
    try:
        normalise_guid(text)
    except ValueError as exc:
        return str(exc)
    return None


def by_node(
    cables: Mapping[PortRef, CableInfo], node_of_port: Mapping[Guid, Guid]
) -> dict[PortRef, CableInfo]:
    """The inventory keyed by node GUID and port (an HCA's records carry its port GUID; map it
    with db_csv PORTS, see :func:`topology.ibdiag_csv.node_of_port_guid`)."""
    return {PortRef(node_of_port.get(ref.guid, ref.guid), ref.port): c for ref, c in cables.items()}


def read_cables(path: str | Path) -> Mapping[PortRef, CableInfo]:
    return parse_cables(read_input_text(path, TOOL), str(path))
