"""Cable plans: the UFM Network Design Tool (NDT) CSV a cluster is cabled from.

Two real spellings are read by one parser:

* the five-column form UFM's NDT plugin takes, ``#StartDevice,StartPort,EndDevice,EndPort,LinkType``;
* the design spreadsheet exported as CSV: racks and U heights around the device columns, a
  leading empty column, a ``#Fields:`` prefix on the first header cell (or no ``#`` at all), a
  ``Speed`` column (``200000`` Mb/s) and a cable length, free text in trailing columns.

Columns are found by their header name (any order, any case, spaces ignored), so reordered or
extra columns read the same. Ports are spelled ``Port N`` (a switch), ``Blade N_Port A/P`` (line
board N, ASIC A, port P of a director), ``IB Port N`` (a host) or an adapter name (``mlx5_0``,
``HCA-1``, ``ibp12s0``). A host end comes in three real spellings (:func:`parse_end`): the port
cell is the HCA's NodeDescription, ``node0042 ibp11s0f0`` or ``node0042/ibp11s0f0``, with the
host in the device cell (UFM's NDT host plans write it so); the port cell is the bare adapter
(``ibp11s0f0``) with the host in the device cell; or the device cell is the NodeDescription
(``node0042 ibp11s0f0``, ``node0042/ibp11s0f0``) and the port cell ``IB Port N``. Rows whose LinkType is given and is not ``Data`` are not InfiniBand
cables and are skipped, as UFM does. A file that cannot be read raises a one-line
:class:`PlanParseError` naming file, line and column; a port cabled to two peers is kept as a
:class:`PlanConflict` (real design spreadsheets have them) for the check to report.

>>> plan = parse_cable_plan("#StartDevice,StartPort,EndDevice,EndPort,LinkType\\nsw1,Port 1,dir1,Blade 2_Port 1/3,Data\\n")
>>> str(plan.cables[0])
'sw1/Port 1 <-> dir1/Blade 2_Port 1/3'
>>> str(parse_end("node0042", "node0042 ibp11s0f0"))
'node0042/ibp11s0f0'
"""

from __future__ import annotations

import csv
import functools
import io
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from topology.errors import ParseError, excerpt
from topology.model import LANE_GBPS, SPEED_RANK
from topology.naming import adapter_index
from topology.textfile import InputFileError, decode_input, open_input_text, read_input_bytes

TOOL = "cable plan"
REQUIRED = ("startdevice", "startport", "enddevice", "endport")
# Header cell (lower case, no spaces/underscores, no leading '#' or '#Fields:') -> column role.
_HEADER_NAMES: Mapping[str, str] = {
    "startdevice": "startdevice",
    "startport": "startport",
    "enddevice": "enddevice",
    "endport": "endport",
    "linktype": "linktype",
    "speed": "speed",
    "cablelength": "length",
    "length": "length",
}
_DISPLAY = {
    "startdevice": "StartDevice",
    "startport": "StartPort",
    "enddevice": "EndDevice",
    "endport": "EndPort",
    "linktype": "LinkType",
    "speed": "Speed",
    "length": "Cable Length",
}
_PORT = re.compile(r"^(?:port\s*)?(\d+)$", re.IGNORECASE)
_BLADE = re.compile(r"^blade\s*(\d+)\s*_\s*port\s*(\d+)\s*/\s*(\d+)$", re.IGNORECASE)
_IB_PORT = re.compile(r"^ib\s*port\s*(\d+)$", re.IGNORECASE)
# An adapter as NodeDescriptions and netdev names spell it, with an optional port: mlx5_0,
# mlx5_0/1, HCA-1, ibp12s0f0 (the persistent netdev name UFM's docs use for host ends).
_ADAPTER = re.compile(
    r"^((?:mlx\d+|hfi\d+|bnxt_re|irdma|mthca|efa|erdma)_?\d+|HCA-\d+|ib[a-z]\w*|roce\w+)"
    r"(?:\s*(?:/|\s|port)\s*(\d+))?$",
    re.IGNORECASE,
)
_RATE_LANES = re.compile(r"^(\d+)\s*x\s*([A-Za-z0-9]+)$")
_RATE_GBPS = re.compile(r"^(\d+(?:\.\d+)?)\s*(?:g|gb|gbps|gb/s|gbit/s|g\s+\w.*)$", re.IGNORECASE)
_PORT_FORMS = (
    "Port N, Blade N_Port A/P, IB Port N, an adapter name such as mlx5_0,"
    " or the HCA's NodeDescription: node01 mlx5_0 with node01 the device"
)


class PlanParseError(ParseError):
    """A cable plan that cannot be read; ``column`` is 1-based (0 when the whole line is at fault)."""

    def __init__(self, source: str, lineno: int, line: str, problem: str, column: int = 0) -> None:
        self.column = column
        super().__init__(TOOL, source, lineno, line, f"column {column}: {problem}" if column else problem)
        self.args = (str(self).replace(f": {TOOL} output: ", f": {TOOL}: ", 1),)


class PortForm(StrEnum):
    SWITCH = "switch"  # Port N
    BLADE = "blade"  # Blade N_Port A/P
    HOST = "host"  # IB Port N
    ADAPTER = "adapter"  # mlx5_0, HCA-1, ibp12s0


@dataclass(frozen=True, slots=True)
class PlanPort:
    """A port as the plan spells it. ``number`` is None only for an adapter given without a port."""

    form: PortForm
    number: int | None
    blade: int | None = None
    asic: int | None = None
    adapter: str | None = None

    @property
    def key(self) -> tuple[object, ...]:
        """What makes two spellings the same port (``Port 7`` and ``7``; ``MLX5_0`` and ``mlx5_0``)."""
        return (self.form, self.number, self.blade, self.asic, (self.adapter or "").casefold())

    def __str__(self) -> str:
        if self.form is PortForm.BLADE:
            return f"Blade {self.blade}_Port {self.asic}/{self.number}"
        if self.form is PortForm.HOST:
            return f"IB Port {self.number}"
        if self.form is PortForm.ADAPTER:
            return f"{self.adapter}" + (f"/{self.number}" if self.number is not None else "")
        return f"Port {self.number}"


EndKey = tuple[str, tuple[object, ...]]


@dataclass(frozen=True, slots=True)
class PlanEnd:
    device: str
    port: PlanPort

    @property
    def key(self) -> EndKey:
        return (self.device.casefold(), self.port.key)

    def __str__(self) -> str:
        return f"{self.device}/{self.port}"


@dataclass(frozen=True, slots=True)
class PlannedRate:
    """The speed a plan asks for: lanes and per-lane speed (``4xHDR``), or a total rate only
    (``200000`` Mb/s, ``200G``), or a speed name only (``HDR``). Unknown parts are None."""

    text: str
    width: int | None
    speed: str | None
    gbps: float | None

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class PlannedCable:
    start: PlanEnd
    end: PlanEnd
    rate: PlannedRate | None
    length: str  # as written (a spreadsheet's metres, or empty)
    source: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"

    def __str__(self) -> str:
        return f"{self.start} <-> {self.end}"


@dataclass(frozen=True, slots=True)
class PlanConflict:
    """One port the plan cables to several peers: which cables, on which lines."""

    end: PlanEnd
    cables: tuple[PlannedCable, ...]

    def __str__(self) -> str:
        places = ", ".join(
            f"{c.end if c.start.key == self.end.key else c.start} ({c.where})" for c in self.cables
        )
        return f"the plan cables {self.end} to {places}"


@dataclass(frozen=True)
class CablePlan:
    cables: tuple[PlannedCable, ...]
    sources: tuple[str, ...]
    skipped_rows: int = 0  # rows of another LinkType (not InfiniBand data cables)
    conflicts: tuple[PlanConflict, ...] = ()


@functools.lru_cache(maxsize=4096)
def parse_rate(text: str) -> PlannedRate | None:
    """``4xHDR``, ``HDR``, ``200000`` (Mb/s, as NDT spreadsheets write it), ``200G``, ``200 Gb/s``;
    None for an empty or ``N/A`` cell. Raises ValueError for anything else."""
    t = text.strip()
    if not t or t.upper() in ("N/A", "NA", "-"):
        return None
    m = _RATE_LANES.match(t)
    if m and m.group(2).upper() in SPEED_RANK:
        width, speed = int(m.group(1)), m.group(2).upper()
        return PlannedRate(t, width, speed, width * LANE_GBPS[speed])
    if t.upper() in SPEED_RANK:
        return PlannedRate(t, None, t.upper(), None)
    if t.isdigit():
        value = int(t)
        # Spreadsheets give the total rate in Mb/s (200000 for 4xHDR); a small number is Gb/s.
        return PlannedRate(t, None, None, value / 1000.0 if value >= 1000 else float(value))
    m = _RATE_GBPS.match(t)
    if m:
        return PlannedRate(t, None, None, float(m.group(1)))
    raise ValueError(f"speed {excerpt(t)} is not a rate (4xHDR, HDR, 200000 Mb/s or 200G)")


def parse_port(text: str) -> PlanPort:
    """A port as written in a plan; raises ValueError naming the accepted spellings."""
    t = " ".join(text.split())
    port = _port(t)
    if port is None:
        raise ValueError(f"{t!r} is not a port ({_PORT_FORMS})")
    return port


# Cached: a plan spells the same ports ("Port 1", "mlx5_0") on many rows, and shares the objects.
@functools.lru_cache(maxsize=65536)
def _port(t: str) -> PlanPort | None:
    """:func:`parse_port` of a cell whose whitespace is folded; None when it is no port."""
    if m := _PORT.match(t):
        return PlanPort(PortForm.SWITCH, int(m.group(1)))
    if m := _BLADE.match(t):
        return PlanPort(PortForm.BLADE, int(m.group(3)), blade=int(m.group(1)), asic=int(m.group(2)))
    if m := _IB_PORT.match(t):
        return PlanPort(PortForm.HOST, int(m.group(1)))
    if m := _ADAPTER.match(t):
        return PlanPort(PortForm.ADAPTER, int(m.group(2)) if m.group(2) else None, adapter=m.group(1))
    return None


def parse_end(device: str, port: str) -> PlanEnd:
    """One end of a cable from its device and port cells; raises ValueError naming the accepted
    spellings. The port cell may be the HCA's NodeDescription, ``<host> <adapter>`` or
    ``<host>/<adapter>``, whose host is the device cell's (UFM's NDT host plans: device
    ``node0042``, port ``node0042 ibp11s0f0``); the adapter may be any name a NodeDescription
    gives, as the host before it says what it is."""
    device = device.strip()  # inner spaces kept: NodeDescriptions have runs of them
    folded = " ".join(port.split())
    plain = _port(folded)
    if plain is not None:
        return PlanEnd(device, plain)
    described = _described_port(device, folded)
    if described is None:
        raise ValueError(f"{folded!r} is not a port ({_PORT_FORMS})")
    return described


def _described_port(device: str, text: str) -> PlanEnd | None:
    """The adapter end a NodeDescription in the port cell names (``text`` has its whitespace
    folded); None when the cell is no NodeDescription. Raises ValueError when it is the
    NodeDescription of another host than the device cell's."""
    sep = " " if " " in text else "/"
    host, _, adapter = text.partition(sep)
    if not host or not adapter or "/" in host:
        return None
    if host.casefold() != device.casefold():
        if adapter_index(adapter) is None:
            return None  # not a NodeDescription: the caller's "not a port" stands
        raise ValueError(
            f"{text!r} is the NodeDescription of host {host!r}, not of this row's device {device!r}"
        )
    port = _port(adapter)  # (already folded: a part of a folded cell)
    if port is not None:
        return PlanEnd(device, port)
    if " " in adapter or "/" in adapter:
        return None
    return PlanEnd(device, _bare_adapter(adapter))


@functools.lru_cache(maxsize=4096)
def _bare_adapter(adapter: str) -> PlanPort:
    return PlanPort(PortForm.ADAPTER, None, adapter=adapter)


def _header_role(cell: str) -> str | None:
    t = cell.strip().lstrip("\ufeff")
    if t.startswith("#"):
        t = t[1:]
    if t.lower().startswith("fields:"):
        t = t[7:]
    return _HEADER_NAMES.get(re.sub(r"[\s_]+", "", t).lower())


def parse_cable_plan(text: str, source: str = "<plan>") -> CablePlan:
    """Parse one plan given as text (any line endings). Raises :class:`PlanParseError`."""
    return parse_cable_plan_lines(io.StringIO(text.lstrip("\ufeff"), newline=""), source)


def parse_cable_plan_lines(lines: Iterable[str], source: str = "<plan>") -> CablePlan:
    """Parse one plan given as a stream of lines with their line ends (an open file with
    ``newline=""``): memory of a row at a time beyond the plan's cables. Raises
    :class:`PlanParseError`."""
    last = [""]  # the line the csv reader took last: what an error quotes

    def tracked() -> Iterator[str]:
        for line in lines:
            last[0] = line
            yield line

    reader = csv.reader(tracked())
    columns: dict[str, int] | None = None
    where: tuple[int, ...] = ()
    cables: list[PlannedCable] = []
    skipped = 0
    first_line = ""
    first_lineno = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise PlanParseError(source, reader.line_num, last[0].rstrip("\r\n"), str(exc)) from exc
        lineno = reader.line_num
        if not any(c.strip() for c in row):
            continue
        if columns is None:
            raw = last[0].rstrip("\r\n")
            first_line, first_lineno = first_line or raw, first_lineno or lineno
            roles = {_header_role(c): i for i, c in reversed(list(enumerate(row)))}
            roles.pop(None, None)
            if "startdevice" not in roles and "enddevice" not in roles:
                continue  # a title line above the header
            missing = [_DISPLAY[r] for r in REQUIRED if r not in roles]
            if missing:
                raise PlanParseError(source, lineno, raw, f"header has no {' or '.join(missing)} column")
            columns = {r: i for r, i in roles.items() if r is not None}
            where = tuple(columns.get(r, -1) for r in _ROLES)
            continue
        cells = _cells(row, where)
        if not (cells[0] or cells[1] or cells[2] or cells[3]):
            continue  # notes and totals below or beside the table
        cable = _row(cells, columns, source, lineno, last[0].rstrip("\r\n"))
        if cable is None:
            skipped += 1
            continue
        cables.append(cable)
    if columns is None:
        raise PlanParseError(
            source,
            first_lineno,
            first_line,
            "no header naming the StartDevice, StartPort, EndDevice and EndPort columns"
            " (empty or not a cable plan)",
        )
    return _plan(cables, (source,), skipped)


_ROLES = (*REQUIRED, "linktype", "speed", "length")  # the order of a row's cells for _row


def _cells(row: list[str], where: Sequence[int]) -> list[str]:
    """The row's cells in :data:`_ROLES` order (stripped; empty where the column is absent)."""
    n = len(row)
    return [row[i].strip() if 0 <= i < n else "" for i in where]


def _row(
    cells: list[str], columns: Mapping[str, int], source: str, lineno: int, raw: str
) -> PlannedCable | None:
    """The cable on a row (its cells in :data:`_ROLES` order); None for a row of another link type."""
    start_device, start_port, end_device, end_port, link_type, speed, length = cells
    if link_type and link_type.casefold() != "data":
        return None
    for role, value in zip(REQUIRED, cells, strict=False):
        if not value:
            raise PlanParseError(source, lineno, raw, f"{_DISPLAY[role]} is empty", columns[role] + 1)
    ends = []
    for device, port, role in ((start_device, start_port, "startport"), (end_device, end_port, "endport")):
        try:
            ends.append(parse_end(_shared(device), port))
        except ValueError as exc:
            raise PlanParseError(source, lineno, raw, f"{_DISPLAY[role]} {exc}", columns[role] + 1) from exc
    if ends[0].key == ends[1].key:
        raise PlanParseError(source, lineno, raw, f"cable from {ends[0]} to itself", columns["endport"] + 1)
    try:
        rate = parse_rate(speed)
    except ValueError as exc:
        raise PlanParseError(source, lineno, raw, str(exc), columns["speed"] + 1) from exc
    return PlannedCable(ends[0], ends[1], rate, _shared(length), source, lineno)


def _shared(text: str) -> str:
    """One string object for every row that spells a device (or a length) the same: a host's
    name is on each of its cables' rows."""
    return sys.intern(text)


def merge_plans(plans: Iterable[CablePlan]) -> CablePlan:
    """One plan from several files (the switch-to-switch and switch-to-host plans of a site)."""
    plans = list(plans)
    return _plan(
        [c for p in plans for c in p.cables],
        tuple(s for p in plans for s in p.sources),
        sum(p.skipped_rows for p in plans),
    )


def _plan(cables: Iterable[PlannedCable], sources: tuple[str, ...], skipped: int) -> CablePlan:
    """The plan with each cable once (a cable may be listed from both ends) and its conflicts:
    ports the plan cables to two different peers (real design spreadsheets have them).

    One map from each port to its cables (a cable alone, a list once there are more) does both:
    a cable whose port already has a cable to the same far port is a second listing. Keys share
    their parts (a device's folded name, a port's key): a plan of 1.5 M cables is ~3 M ports."""
    kept: list[PlannedCable] = []
    by_port: dict[EndKey, PlannedCable | list[PlannedCable]] = {}
    folded: dict[str, str] = {}
    port_keys: dict[PlanPort, tuple[object, ...]] = {}

    def key(end: PlanEnd) -> EndKey:
        device = folded.get(end.device)
        if device is None:
            device = folded[end.device] = end.device.casefold()
        port = port_keys.get(end.port)
        if port is None:
            port = port_keys[end.port] = end.port.key
        return (device, port)

    for cable in cables:
        ka, kb = key(cable.start), key(cable.end)
        there = by_port.get(ka)
        if there is not None and any(
            kb == key(c.start) or kb == key(c.end) for c in (there if isinstance(there, list) else (there,))
        ):
            continue  # the same cable listed again (from its other end, or twice)
        kept.append(cable)
        for k in (ka, kb):
            seen = by_port.get(k)
            if seen is None:
                by_port[k] = cable
            elif isinstance(seen, list):
                seen.append(cable)
            else:
                by_port[k] = [seen, cable]
    conflicts = tuple(
        PlanConflict(_end_of(group[0], k), tuple(group))
        for k, group in by_port.items()
        if isinstance(group, list)
    )
    return CablePlan(tuple(kept), sources, skipped, conflicts)


def _end_of(cable: PlannedCable, key: EndKey) -> PlanEnd:
    return cable.start if cable.start.key == key else cable.end


def read_cable_plan(path: str | Path) -> CablePlan:
    """Read a plan file (UTF-8, or Latin-1 as spreadsheets on Windows save it) a row at a time:
    memory of the plan's cables, whatever the size of the file (stdin is read whole)."""
    name = str(path)
    if name == "-":
        return parse_cable_plan(read_plan_text(path), name)
    try:
        with open_input_text(path, TOOL) as lines:
            return parse_cable_plan_lines(lines, name)
    except UnicodeDecodeError:
        pass  # not UTF-8 (a NUL byte was refused as binary already): read it again as Latin-1
    try:
        with open_input_text(path, TOOL, encoding="latin-1") as lines:
            return parse_cable_plan_lines(lines, name)
    except UnicodeDecodeError as exc:  # only a file that starts as UTF-16 gets here
        raise InputFileError(TOOL, name, 0, f"not UTF-16 text ({exc.reason})") from exc


def read_plan_text(path: str | Path) -> str:
    """A plan file's text whole (UTF-8, or Latin-1 as spreadsheets on Windows save it), to keep
    it in the store as it was read."""
    data = read_input_bytes(path, TOOL)
    try:
        return decode_input(data, str(path), TOOL, strict=True)
    except InputFileError:
        if b"\0" in data:
            raise  # binary, not a spreadsheet's Latin-1
        return data.decode("latin-1")


# -- writing ---------------------------------------------------------------------------------------
HEADER = "#StartDevice,StartPort,EndDevice,EndPort,LinkType"


def format_cable_plan(rows: Iterable[tuple[PlanEnd, PlanEnd, str]], with_speed: bool = True) -> str:
    """The five-column NDT form UFM reads, plus a ``Speed`` column (``4xHDR``) when ``with_speed``
    (UFM ignores extra columns; ibfab checks each cable's width and speed against it)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    out.write(HEADER + (",Speed" if with_speed else "") + "\n")
    for a, b, speed in rows:
        cells = [a.device, str(a.port), b.device, str(b.port), "Data"]
        writer.writerow([*cells, speed] if with_speed else cells)
    return out.getvalue()
