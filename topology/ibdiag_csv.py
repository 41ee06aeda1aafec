"""``ibdiagnet2.db_csv``: its sections, and the Fabric its NODES, PORTS and LINKS describe.

The file is a run of CSV tables, each framed by ``START_<NAME>`` and ``END_<NAME>`` lines, a
header row first; ``N/A`` marks a value the tool could not read. :func:`parse_db_csv_fabric`
gives the same Fabric as ``ibnetdiscover`` of the same fabric (tests compare them on a real run);
what differs by nature is said in its docstring.

>>> text = "START_X\\nA,B\\n1,N/A\\nEND_X\\n"
>>> db_csv_sections(text)["X"].rows[0]
{'A': '1', 'B': 'N/A'}
"""

from __future__ import annotations

import csv
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from types import MappingProxyType

from topology.bounds import MAX_PORT, id_value, lid_value_problem, port_problem
from topology.errors import ParseError
from topology.model import Fabric, Guid, Lid, Link, Node, NodeKind, PortRef, normalise_guid
from topology.textfile import read_input_text

TOOL = "ibdiagnet db_csv"
_KIND = {"1": NodeKind.HCA, "2": NodeKind.SWITCH, "3": NodeKind.ROUTER}
# PortInfo LinkWidthActive bits -> lanes.
_WIDTH = {1: 1, 2: 4, 4: 8, 8: 12, 16: 2}
# LinkSpeedActv as ibdiagnet writes it (the file's own comment): byte 1 the base speeds, byte 2
# the extended speeds (LinkSpeedExtActive), byte 3 Mellanox's (FDR10). The fastest set wins.
_BASE_SPEED = {1: "SDR", 2: "DDR", 4: "QDR"}
_EXT_SPEED = {1: "FDR", 2: "EDR", 4: "HDR", 8: "NDR", 16: "XDR"}
_MLNX_SPEED = {1: "FDR10"}
# PortInfo PortState: the states between a link coming up and the SM making it Active.
_NOT_ACTIVE = {2: "Init", 3: "Armed"}


@dataclass(frozen=True)
class Section:
    """One table: its rows as header -> cell (stripped), and where it starts in the file."""

    name: str
    first_line: int  # line number of the header row
    rows: tuple[Mapping[str, str], ...]
    header: tuple[str, ...] = ()
    lines: tuple[int, ...] = ()  # line number of each row (a quoted field may span lines)

    def line_of(self, index: int) -> int:
        """Line number of ``rows[index]``."""
        return self.lines[index] if index < len(self.lines) else self.first_line + 1 + index

    def need(self, columns: Collection[str], source: str) -> None:
        """A ParseError naming the header line when it lacks one of ``columns`` (a renamed
        column would otherwise read as a value missing from every row)."""
        missing = [c for c in columns if c not in self.header]
        if missing:
            raise ParseError(
                TOOL,
                source,
                self.first_line,
                ",".join(self.header),
                f"{self.name}: no {', '.join(missing)} column in its header",
            )


def db_csv_sections(
    text: str,
    source: str = "<db_csv>",
    wanted: Collection[str] | None = None,
    *,
    bad_rows: list[ParseError] | None = None,
) -> dict[str, Section]:
    """The ``START_X``..``END_X`` tables of ``text`` (only those ``wanted``, when given: a run of
    50,000 ports has a dozen tables of a row a port, and a reader needs two or three of them). A
    table cut off before its END line, wanted or not, is a :class:`ParseError` naming where it
    started. The text is walked a line at a time, never split whole into a list.

    A row that is not CSV (a bare carriage return outside quotes, a field over 128 KiB) is a
    ParseError naming its line; with ``bad_rows`` it is left out and its error added there."""
    out: dict[str, Section] = {}
    name: str | None = None
    keep = False
    start = 0
    body: list[str] = []
    for lineno, raw in enumerate(_lines(text), 1):
        line = raw.strip()
        if name is None:
            if line.startswith("START_"):
                name, start, body = line[6:], lineno + 1, []
                keep = wanted is None or name in wanted
            continue
        if line == f"END_{name}":
            if keep:
                out[name] = _section(name, start, body, source, bad_rows)
            name = None
        elif line.startswith("START_"):
            raise ParseError(
                TOOL, source, lineno, raw, f"section {name} (line {start - 1}) has no END_{name}"
            )
        elif keep:
            body.append(raw)
    if name is not None:
        raise ParseError(
            TOOL, source, start - 1, f"START_{name}", f"section {name} has no END_{name}: truncated"
        )
    return out


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text`` one at a time (CR LF or LF), without a list of them all."""
    at, end = 0, len(text)
    while at < end:
        nl = text.find("\n", at)
        if nl < 0:
            nl = end
        yield text[at : nl - 1 if nl > at and text[nl - 1] == "\r" else nl]
        at = nl + 1


def _section(
    name: str, start: int, body: list[str], source: str, bad_rows: list[ParseError] | None
) -> Section:
    reader = csv.reader(body)
    header: list[str] | None = None
    rows: list[Mapping[str, str]] = []
    lines: list[int] = []
    while True:
        at = reader.line_num  # lines read before this row
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            lineno = start + at
            error = ParseError(
                TOOL, source, lineno, body[at] if at < len(body) else "", f"{name}: {_csv_problem(exc)}"
            )
            if bad_rows is None or header is None:
                raise error from None
            bad_rows.append(error)
            continue
        if header is None:
            header = [h.strip() for h in row]
            continue
        if row:
            rows.append(MappingProxyType(dict(zip(header, (c.strip() for c in row), strict=False))))
            lines.append(start + at)
    if header is None:
        return Section(name, start, ())
    return Section(name, start, tuple(rows), tuple(header), tuple(lines))


def _csv_problem(exc: csv.Error) -> str:
    text = str(exc)
    if "new-line character" in text:
        return "a carriage return inside a row, outside quotes (not a row ibdiagnet writes)"
    if "field larger than field limit" in text:
        return f"a field longer than {csv.field_size_limit() // 1024} KiB (no ibdiagnet field is)"
    return f"not a CSV row ({text})"


def optional_int(text: str | None) -> int | None:
    """A db_csv number (decimal or ``0x`` hex); None for ``N/A``, empty or garbage."""
    if text is None:
        return None
    t = text.strip()
    if not t or t.upper() in ("N/A", "NA"):
        return None
    try:
        return int(t, 0)
    except ValueError:
        try:
            return int(t)  # leading zeros ("07") are decimal
        except ValueError:
            return None


def link_width(code: int | None) -> int:
    """Lanes of a LinkWidthActive code; 0 when unknown."""
    return _WIDTH.get(code or 0, 0)


def link_speed(code: int | None) -> str:
    """The speed token (``NDR``) of an ibdiagnet LinkSpeedActv value; ``???`` when unknown."""
    if not code:
        return "???"
    for shift, table in ((8, _EXT_SPEED), (16, _MLNX_SPEED), (0, _BASE_SPEED)):
        speed = table.get((code >> shift) & 0xFF)
        if speed is not None:
            return speed
    return "???"


def _need(sections: Mapping[str, Section], name: str, source: str) -> Section:
    section = sections.get(name)
    if section is None:
        raise ParseError(
            TOOL, source, 0, "", f"no {name} section (not an ibdiagnet2.db_csv, or a run that skipped it)"
        )
    return section


def _guid(row: Mapping[str, str], key: str, section: Section, i: int, source: str) -> Guid:
    try:
        return normalise_guid(row.get(key, ""))
    except ValueError as exc:
        raise ParseError(
            TOOL, source, section.line_of(i), str(row.get(key, "")), f"{section.name}: bad {key}"
        ) from exc


def _port(row: Mapping[str, str], key: str, section: Section, i: int, source: str) -> int:
    text = row.get(key, "")
    number = optional_int(text)
    problem = "not a number" if number is None else port_problem(str(number))
    if problem is not None:
        raise ParseError(TOOL, source, section.line_of(i), text, f"{section.name}: bad {key} ({problem})")
    assert number is not None
    return number


def _lid(row: Mapping[str, str], section: Section, i: int, source: str) -> int | None:
    """A port's LID (None: N/A or empty); a LID out of range or not a number is a ParseError."""
    text = row.get("LID", "")
    if text.strip().upper() in ("", "N/A", "NA"):
        return None
    number = optional_int(text)
    problem = "not a number" if number is None else lid_value_problem(number)
    if problem is not None:
        raise ParseError(TOOL, source, section.line_of(i), text, f"{section.name}: bad LID ({problem})")
    return number


def parse_db_csv_fabric(text: str, source: str = "<db_csv>") -> Fabric:
    """The Fabric of an ``ibdiagnet2.db_csv``: nodes from NODES, LIDs, widths and speeds from
    PORTS, cables from LINKS (each listed once; a cable's width and speed are the narrower and
    slower of its two ends' views, as ibnetdiscover's reader keeps them).

    LIDs (``Fabric.lids``) are those of switch ports 0 and of cabled HCA ports, as ibnetdiscover
    states them; ports up but not Active (PortState Init or Armed) are ``Fabric.inactive``.

    What cannot match ``ibnetdiscover`` of the same fabric: the port the discovery ran from
    (``origin``; ibdiagnet does not say which HCA port it used), and port labels (``1/1/1``),
    which the model does not keep from either tool.
    """
    sections = db_csv_sections(text, source, ("NODES", "PORTS", "LINKS"))
    nodes_s, ports_s, links_s = (_need(sections, n, source) for n in ("NODES", "PORTS", "LINKS"))
    nodes_s.need(("NodeGUID", "NodeType"), source)
    ports_s.need(("NodeGuid", "PortNum"), source)
    links_s.need(("NodeGuid1", "PortNum1", "NodeGuid2", "PortNum2"), source)
    ports: dict[tuple[Guid, int], tuple[int, str, int | None]] = {}
    stated_lids: dict[PortRef, Lid] = {}
    inactive: dict[PortRef, str] = {}
    for i, row in enumerate(ports_s.rows):
        guid = _guid(row, "NodeGuid", ports_s, i, source)
        number = _port(row, "PortNum", ports_s, i, source)
        lid = _lid(row, ports_s, i, source)
        if lid is not None:
            stated_lids[PortRef(guid, number)] = Lid(lid)
        state = _NOT_ACTIVE.get(optional_int(row.get("PortState")) or 0)
        if state is not None:
            inactive[PortRef(guid, number)] = state
        ports[(guid, number)] = (
            link_width(optional_int(row.get("LinkWidthActv"))),
            link_speed(optional_int(row.get("LinkSpeedActv"))),
            lid or None,
        )
    nodes: list[Node] = []
    seen: set[Guid] = set()
    for i, row in enumerate(nodes_s.rows):
        guid = _guid(row, "NodeGUID", nodes_s, i, source)
        if guid in seen:
            raise ParseError(TOOL, source, nodes_s.line_of(i), guid, "NODES: node listed twice")
        seen.add(guid)
        kind = _KIND.get(row.get("NodeType", ""))
        if kind is None:
            raise ParseError(
                TOOL, source, nodes_s.line_of(i), row.get("NodeType", ""), "NODES: unknown NodeType"
            )
        nports = optional_int(row.get("NumPorts")) or 0
        if nports > MAX_PORT:
            raise ParseError(
                TOOL,
                source,
                nodes_s.line_of(i),
                row.get("NumPorts", ""),
                f"NODES: {port_problem(str(nports))}",
            )
        sysimg = row.get("SystemImageGUID", "")
        nodes.append(
            Node(
                guid,
                kind,
                row.get("NodeDesc", "").strip(),
                nports,
                _node_lid(ports, guid, kind, nports),
                _guid(row, "SystemImageGUID", nodes_s, i, source) if optional_int(sysimg) else None,
                id_value(optional_int(row.get("VendorID"))),
                id_value(optional_int(row.get("DeviceID"))),
            )
        )
    links: set[Link] = set()
    switches = {n.guid for n in nodes if n.kind is NodeKind.SWITCH}
    # A switch's LID is its port 0's (its other ports show 0); an HCA's, each cabled port's.
    lids = {ref: lid for ref, lid in stated_lids.items() if ref.port == 0 and ref.guid in switches}
    for i, row in enumerate(links_s.rows):
        a = PortRef(_guid(row, "NodeGuid1", links_s, i, source), _port(row, "PortNum1", links_s, i, source))
        b = PortRef(_guid(row, "NodeGuid2", links_s, i, source), _port(row, "PortNum2", links_s, i, source))
        for end in (a, b):
            if end.guid not in seen:
                raise ParseError(
                    TOOL, source, links_s.line_of(i), str(end), "LINKS: cable to a node not in NODES"
                )
        wa, sa, _ = ports.get((a.guid, a.port), (0, "???", None))
        wb, sb, _ = ports.get((b.guid, b.port), (0, "???", None))
        links.add(Link(a, b, _narrower(wa, wb), _slower(sa, sb)))
        lids.update(
            (end, stated_lids[end]) for end in (a, b) if end.guid not in switches and end in stated_lids
        )
    cabled = {end for lk in links for end in (lk.a, lk.b)}
    return Fabric.build(
        nodes,
        links,
        source=source,
        lids=lids,
        inactive={ref: state for ref, state in inactive.items() if ref in cabled},
    )


def _node_lid(
    ports: Mapping[tuple[Guid, int], tuple[int, str, int | None]], guid: Guid, kind: NodeKind, nports: int
) -> Lid | None:
    # A switch's LID is its port 0's; an HCA's is that of its first port with one (as
    # ibnetdiscover prints it on the first port line of the record).
    numbers = [0] if kind is NodeKind.SWITCH else range(1, nports + 1)
    for n in numbers:
        entry = ports.get((guid, n))
        if entry is not None and entry[2]:
            return Lid(entry[2])
    return None


def _narrower(a: int, b: int) -> int:
    known = [w for w in (a, b) if w]
    return min(known) if known else 0


def _slower(a: str, b: str) -> str:
    from topology.model import SPEED_RANK

    known = [s for s in (a, b) if s in SPEED_RANK]
    return min(known, key=SPEED_RANK.__getitem__) if known else "???"


def read_db_csv(path: str | Path) -> str:
    """The text of a db_csv file, bounded (a ParseError naming it when it cannot be read)."""
    return read_input_text(path, TOOL)


def read_db_csv_fabric(path: str | Path) -> Fabric:
    return parse_db_csv_fabric(read_db_csv(path), str(path))


def node_of_port_guid(text: str, source: str = "<db_csv>") -> dict[Guid, Guid]:
    """Port GUID -> node GUID from PORTS (ibdiagnet2.cables names HCA ports by port GUID)."""
    out: dict[Guid, Guid] = {}
    section = db_csv_sections(text, source, ("PORTS",), bad_rows=[]).get("PORTS")
    for row in section.rows if section else ():
        try:
            out[normalise_guid(row.get("PortGuid", ""))] = normalise_guid(row.get("NodeGuid", ""))
        except ValueError:
            continue
    return out


_RUN_DATE = re.compile(
    r"^(?P<when>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:\s+(?P<zone>[A-Za-z]+))?(?:\s*(?P<offset>[+-]\d\d:?\d\d))?$"
)


def run_time(text: str, source: str = "<db_csv>") -> float | None:
    """When the run started, from RUN_INFO's ``Date`` (``2025-03-31 23:43:18 UTC +0000``), as a
    Unix time. None when the file does not say, or says it without a time zone (a local time of
    an unknown place is not a time).

    >>> run_time("START_RUN_INFO\\nDate\\n2025-03-31 23:43:18 UTC +0000\\nEND_RUN_INFO\\n")
    1743464598.0
    """
    section = db_csv_sections(text, source, ("RUN_INFO",), bad_rows=[]).get("RUN_INFO")
    date = section.rows[0].get("Date", "") if section and section.rows else ""
    m = _RUN_DATE.match(date.strip())
    if m is None:
        return None
    when = datetime.fromisoformat(m["when"].replace(" ", "T"))
    if m["offset"]:
        offset = m["offset"].replace(":", "")
        sign = -1 if offset[0] == "-" else 1
        zone = timezone(sign * timedelta(hours=int(offset[1:3]), minutes=int(offset[3:5])))
    elif (m["zone"] or "").upper() in ("UTC", "GMT", "Z"):
        zone = UTC
    else:
        return None
    return when.replace(tzinfo=zone).timestamp()
