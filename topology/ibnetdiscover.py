"""Parse ``ibnetdiscover`` output (the topology file and the ``-p`` ports report) into a Fabric.

Pure functions of text: ``parse_ibnetdiscover(lines, source)`` and the thin file wrapper
``read_ibnetdiscover(path)``. Accepts every variant seen in real captures: old and new headers,
``Non-Chassis Nodes`` grouping lines, ibwarn lines mixed into stdout, CRLF, tabs or spaces,
port labels (``[1](1/1/1)``), ``-f`` suffixes (``s=4 w=2 v=4 e=4``), ``???`` speeds, loopback
cables, and partial files whose links point at nodes that have no record of their own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from topology.errors import ParseError
from topology.model import (
    Fabric,
    Guid,
    Lid,
    Link,
    Node,
    NodeKind,
    PortRef,
    UnconnectedPort,
    normalise_guid,
)

TOOL = "ibnetdiscover"

_KIND_BY_RECORD = {"Switch": NodeKind.SWITCH, "Ca": NodeKind.HCA, "Hca": NodeKind.HCA, "Rt": NodeKind.ROUTER}
_KIND_BY_PREFIX = {"S": NodeKind.SWITCH, "H": NodeKind.HCA, "R": NodeKind.ROUTER}
_KIND_BY_SHORT = {"SW": NodeKind.SWITCH, "CA": NodeKind.HCA, "RT": NodeKind.ROUTER}

_HEADER_ASSIGN = re.compile(r"^(vendid|devid|sysimgguid|switchguid|caguid|rtguid|hcaguids)\s*=\s*(\S+)")
_NODE = re.compile(r'^(Switch|Ca|Hca|Rt)\s+(\d+)\s+"(?:[SHR]-)?([0-9a-fA-F]+)"\s*#\s*"(.*?)"(.*)$')
_PORT = re.compile(
    r"^\[(\d+)\]((?:\([^)]*\))*)\s+"
    r'"(?:([SHR])-)?([0-9a-fA-F]+)"\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s*'
    r"(?:#(.*))?$"
)
_LID = re.compile(r"\blid\s+(\d+)")
_WIDTH_SPEED = re.compile(r"\b(\d+)x\s?([A-Za-z0-9?]+)")
_QUOTED = re.compile(r'"(.*?)"')
# ibwarn / libibnetdisc diagnostics that land in captured stdout.
_WARNING = re.compile(r"^(?:ibwarn\b|\S+\.c:\d+;|\S+:\s*ibwarn\b|ibnetdiscover:\s*ibwarn\b)")
_GROUPING = re.compile(r"^(?:Non-Chassis Nodes|Chassis\b.*|.*[Cc]hassis\s+\d+.*)\s*$")
_PORTS_REPORT = re.compile(
    r"^(CA|SW|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]+)\s+(\d+)x\s*(\S+)"
    r"(?:\s+-\s+(CA|SW|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]+)\s+\(\s*'(.*?)'\s+-\s+'(.*?)'\s*\)"
    r"|\s+'(.*?)')\s*$"
)


@dataclass
class _Side:
    """One port line: what one end says about its cable."""

    local: PortRef
    remote: PortRef
    width: int
    speed: str
    lineno: int


@dataclass
class _Builder:
    source: str
    lenient_conflicts: bool = False
    nodes: dict[Guid, Node] = field(default_factory=dict)
    node_line: dict[Guid, int] = field(default_factory=dict)
    referenced: dict[Guid, Node] = field(default_factory=dict)
    sides: list[_Side] = field(default_factory=list)
    unconnected: list[UnconnectedPort] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def error(self, lineno: int, line: str, problem: str) -> ParseError:
        return ParseError(TOOL, self.source, lineno, line, problem)

    def add_node(self, node: Node, lineno: int, line: str) -> None:
        if node.guid in self.nodes:
            first = self.node_line[node.guid]
            raise self.error(lineno, line, f"node {node.guid} listed twice (first at line {first})")
        self.nodes[node.guid] = node
        self.node_line[node.guid] = lineno

    def reference(self, guid: Guid, kind: NodeKind, description: str, lid: int | None, port: int) -> None:
        """Remember a node seen only as the far end of a cable (partial files)."""
        old = self.referenced.get(guid)
        nports = max(port, old.nports if old else 0)
        self.referenced[guid] = Node(
            guid=guid,
            kind=kind,
            description=description or (old.description if old else ""),
            nports=nports,
            lid=Lid(lid) if lid is not None else (old.lid if old else None),
        )

    def fabric(self) -> Fabric:
        links: dict[tuple[PortRef, PortRef], Link] = {}
        seen_from: dict[tuple[PortRef, PortRef], list[_Side]] = {}
        peer_of: dict[PortRef, tuple[PortRef, int]] = {}
        for side in self.sides:
            conflict = False
            for here, there in ((side.local, side.remote), (side.remote, side.local)):
                prev = peer_of.get(here)
                if prev is not None and prev[0] != there:
                    if self.lenient_conflicts:
                        # -p reports are often excerpts pasted from several runs: keep the first.
                        self.warnings.append(
                            f"line {side.lineno}: port {here} also cabled to {prev[0]} (line {prev[1]}); ignored"
                        )
                        conflict = True
                        break
                    raise ParseError(
                        TOOL,
                        self.source,
                        side.lineno,
                        "",
                        f"port {here} is cabled to {prev[0]} (line {prev[1]}) and to {there}",
                    )
            if conflict:
                continue
            for here, there in ((side.local, side.remote), (side.remote, side.local)):
                peer_of[here] = (there, side.lineno)
            key = (min(side.local, side.remote), max(side.local, side.remote))
            seen_from.setdefault(key, []).append(side)
        for key, sides in seen_from.items():
            width = min(s.width for s in sides)
            speeds = [s.speed for s in sides if s.speed != "???"]
            speed = min(speeds, key=_speed_rank) if speeds else "???"
            links[key] = Link(key[0], key[1], width, speed)
            self._check_both_ends_listed(key, sides)
        nodes = dict(self.referenced)
        nodes.update(self.nodes)
        return Fabric.build(nodes.values(), links.values(), self.unconnected, self.source)

    def _check_both_ends_listed(self, key: tuple[PortRef, PortRef], sides: list[_Side]) -> None:
        # A cable between two nodes that both have a record must be listed by both: if one
        # record lacks it, the file was cut inside that record (or edited by hand).
        if len(sides) > 1 or key[0] == key[1]:
            return
        side = sides[0]
        far = side.remote
        if far.guid in self.nodes and far.guid != side.local.guid:
            node = self.nodes[far.guid]
            raise ParseError(
                TOOL,
                self.source,
                side.lineno,
                "",
                f"cable {side.local} -> {far} is missing from the record of {node.description!r} "
                f"(line {self.node_line[far.guid]}): truncated or inconsistent output",
            )


def _speed_rank(speed: str) -> int:
    from topology.model import SPEED_ORDER

    return SPEED_ORDER.index(speed) if speed in SPEED_ORDER else len(SPEED_ORDER)


def _clean(line: str) -> str:
    return line.rstrip("\r\n").rstrip()


def parse_ibnetdiscover(lines: Iterable[str], source: str = "<input>") -> Fabric:
    """Parse ibnetdiscover text (topology file or ``-p`` report).

    Raises :class:`ParseError` naming the source, line number and problem for empty, truncated,
    garbled or non-ibnetdiscover input.
    """
    b = _Builder(source)
    header: dict[str, str] = {}
    current: Node | None = None
    saw_content = False
    fmt: str | None = None
    last_lineno = 0
    for lineno, raw in enumerate(lines, 1):
        last_lineno = lineno
        line = _clean(raw)
        stripped = line.strip()
        if not stripped:
            current = None
            continue
        if stripped.startswith("#"):
            continue
        if _WARNING.match(stripped):
            b.warnings.append(stripped)
            continue
        if fmt != "ports" and _GROUPING.match(stripped) and not stripped.startswith(("Switch", "Ca")):
            current = None
            continue
        if fmt in (None, "ports"):
            m = _PORTS_REPORT.match(stripped)
            if m:
                fmt = "ports"
                b.lenient_conflicts = True
                saw_content = True
                _ports_report_line(b, m, lineno, line)
                continue
            if fmt == "ports":
                raise b.error(lineno, line, "not an ibnetdiscover -p port line")
        m = _HEADER_ASSIGN.match(stripped)
        if m:
            fmt = "topology"
            header[m.group(1)] = m.group(2)
            current = None
            continue
        m = _NODE.match(stripped)
        if m:
            fmt = "topology"
            saw_content = True
            current = _node_record(b, m, header, lineno, line)
            header = {}
            continue
        m = _PORT.match(stripped)
        if m:
            if current is None:
                raise b.error(lineno, line, "port line outside a Switch/Ca record")
            _port_line(b, current, m, lineno, line)
            continue
        raise b.error(lineno, line, "unrecognised line")
    if not saw_content:
        raise b.error(last_lineno, "", "no Switch or Ca records (empty or not ibnetdiscover output)")
    return b.fabric()


def read_ibnetdiscover(path: str | Path) -> Fabric:
    """Parse a saved ibnetdiscover file (any line endings)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ParseError(TOOL, str(p), 0, "", exc.strerror or str(exc)) from exc
    return parse_ibnetdiscover(text.splitlines(), str(p))


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text, 0)
    except ValueError:
        return None


def _node_record(b: _Builder, m: re.Match[str], header: dict[str, str], lineno: int, line: str) -> Node:
    record, nports, gid, desc, rest = m.groups()
    try:
        guid = normalise_guid(gid)
        sysimg = header.get("sysimgguid")
        node = Node(
            guid=guid,
            kind=_KIND_BY_RECORD[record],
            description=desc.strip(),
            nports=int(nports),
            lid=_lid(rest),
            sysimgguid=normalise_guid(sysimg) if sysimg else None,
            vendid=_int(header.get("vendid")),
            devid=_int(header.get("devid")),
        )
    except ValueError as exc:
        raise b.error(lineno, line, str(exc)) from exc
    b.add_node(node, lineno, line)
    return node


def _lid(text: str) -> Lid | None:
    m = _LID.search(text)
    return Lid(int(m.group(1))) if m else None


def _port_line(b: _Builder, current: Node, m: re.Match[str], lineno: int, line: str) -> None:
    port, _labels, prefix, rgid, rport, _rportguid, comment = m.groups()
    comment = comment or ""
    # The far end's description is the last quoted string; lid and width x speed follow it.
    quoted = _QUOTED.findall(comment)
    tail = comment[comment.rfind('"') + 1 :] if quoted else comment
    ws = _WIDTH_SPEED.search(tail)
    if ws is None:
        raise b.error(lineno, line, "port line without width x speed (e.g. 4xHDR)")
    try:
        remote_guid = normalise_guid(rgid)
    except ValueError as exc:
        raise b.error(lineno, line, str(exc)) from exc
    pnum, rpnum = int(port), int(rport)
    if current.nports and pnum > current.nports:
        raise b.error(lineno, line, f"port {pnum} beyond the {current.nports} ports of its record")
    kind = _KIND_BY_PREFIX.get(prefix or "S", NodeKind.SWITCH)
    rlid = _LID.search(tail)
    b.reference(
        remote_guid, kind, quoted[-1].strip() if quoted else "", int(rlid.group(1)) if rlid else None, rpnum
    )
    b.sides.append(
        _Side(
            local=PortRef(current.guid, pnum),
            remote=PortRef(remote_guid, rpnum),
            width=int(ws.group(1)),
            speed=ws.group(2).upper() if ws.group(2) != "???" else "???",
            lineno=lineno,
        )
    )


def _ports_report_line(b: _Builder, m: re.Match[str], lineno: int, line: str) -> None:
    (kind, lid, port, gid, width, speed, rkind, rlid, rport, rgid, desc, rdesc, lone_desc) = m.groups()
    try:
        guid = normalise_guid(gid)
    except ValueError as exc:
        raise b.error(lineno, line, str(exc)) from exc
    local_desc = (desc if rkind else lone_desc) or ""
    b.reference(guid, _KIND_BY_SHORT[kind], local_desc.strip(), int(lid), int(port))
    speed = speed.upper() if speed != "???" else "???"
    here = PortRef(guid, int(port))
    if rkind is None:
        b.unconnected.append(UnconnectedPort(here, int(width), speed))
        return
    rguid = normalise_guid(rgid)
    b.reference(rguid, _KIND_BY_SHORT[rkind], (rdesc or "").strip(), int(rlid), int(rport))
    b.sides.append(_Side(here, PortRef(rguid, int(rport)), int(width), speed, lineno))
