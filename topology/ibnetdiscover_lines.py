"""The general line parser for ``ibnetdiscover`` output: every variant (topology.ibnetdiscover's
module doc lists them), read line by line into the builder, with the line at fault named in
any error. Imported when it runs: the fast path (topology.ibnetdiscover_fast) reads the tool's
canonical files without it, and its patterns take a while to compile (9 ms, a fifth of what
``ibfab discover`` spends importing).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from topology.bounds import lid_problem, width_problem
from topology.ibnetdiscover_build import Builder, FarNode
from topology.ibnetdiscover_common import (
    LID,
    MAX_PORT,
    ORIGIN_LINE,
    origin_of,
    record_node,
)
from topology.ibnetdiscover_ports import PORTS_REPORT, ports_report_line
from topology.ibnetdiscover_seconds import SecondInProgress
from topology.model import (
    Fabric,
    Guid,
    Lid,
    Node,
    NodeKind,
    PortRef,
)

_KIND_BY_RECORD = {"Switch": NodeKind.SWITCH, "Ca": NodeKind.HCA, "Hca": NodeKind.HCA, "Rt": NodeKind.ROUTER}
_KIND_BY_PREFIX = {"S": NodeKind.SWITCH, "H": NodeKind.HCA, "R": NodeKind.ROUTER}

_HEADER_KEYS = frozenset({"vendid", "devid", "sysimgguid", "switchguid", "caguid", "rtguid", "hcaguids"})
_HEADER_ASSIGN = re.compile(r"^(vendid|devid|sysimgguid|switchguid|caguid|rtguid|hcaguids)\s*=\s*(\S+)")
_NODE = re.compile(r'^(Switch|Ca|Hca|Rt)\s*(\d+)\s*"(?:[SHR]-)?([0-9a-fA-F]+)"\s*#\s*"(.*?)"(.*)$')
_PORT = re.compile(
    r"^\[(\d+)\]((?:\([^)]*\))*)\s*"
    r'"(?:([SHR])-)?([0-9a-fA-F]+)"\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s*'
    r"(?:#(.*))?$"
)
# The same line in one match for the hot path: far description (last quoted string), far lid,
# width and speed. Lines it does not fit fall back to _PORT and the slower code.
_PORT_FAST = re.compile(
    r"^\[(\d+)\](?:\([^)]*\))*\s*"
    r'"(?:([SHR])-)?([0-9a-fA-F]+)"\[(\d+)\](?:\([0-9a-fA-F]+\))?\s*'
    r'#\s*(?:lid\s+(\d+)\s+lmc\s+\d+\s+)?(?:.*"(.*)")?\s*(?:lid\s+(\d+)\s+)?(?:(\d+)x\s?([A-Za-z0-9?]+)|\?+)(?:\s.*)?$'
)
# The common spelling of that line, tried first: no backtracking over the comment (same groups).
_PORT_STRICT = re.compile(
    r"^\[(\d+)\](?:\([^)]*\))*\s*"
    r'"(?:([SHR])-)?([0-9a-fA-F]+)"\[(\d+)\](?:\([0-9a-fA-F]+\))?\s*'
    r'#\s*(?:lid\s+(\d+)\s+lmc\s+\d+\s+)?"([^"]*)"\s*(?:lid\s+(\d+)\s+)?(\d+)x\s?([A-Za-z0-9?]+)\s*$'
)
_WIDTH_SPEED = re.compile(r"\b(\d+)x\s?([A-Za-z0-9?]+)|\?{3,}")
_QUOTED = re.compile(r'"(.*?)"')
_OWN_LID = re.compile(r"\s*lid\s+(\d+)\s+lmc\s+\d+")
# ibwarn / libibnetdisc diagnostics that land in captured stdout.
_WARNING = re.compile(r"^(?:ibwarn\b|\S+\.c:\d+;|\S+:\s*ibwarn\b|ibnetdiscover:\s*ibwarn\b)")
_GROUPING = re.compile(r"^(?:Non-Chassis Nodes|Chassis\b.*|.*[Cc]hassis\s+\d+.*)\s*$")
# A line that looks like part of ibnetdiscover output: a port line (not bash's "[1]+ Done"), a
# record or header line, a -p report line, or anything naming a port as "S-<guid>"[N]. Such a
# line must parse; any other line outside a record is a logger's, a shell's or a paste's, and
# is skipped.
_TOOL_LIKE = re.compile(
    r"^(?:\[\d+\](?![+-]\s)|\d+\]\s*\"|(?:Switch|Ca|Hca|Rt)(?:\s|\d|$)"
    r"|(?:vendid|devid|sysimgguid|switchguid|caguid|rtguid|hcaguids)\s*="
    r"|(?:CA|SW|RT)\s+\d+\s+\d+\s+0x)"
    r'|"[SHR]-[0-9a-fA-F]+"\s*\[\d'
)
# Terminal escape sequences: CSI (colours, cursor), OSC (window titles), and two-byte escapes.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
# One line break: CRLF, a doubled CR before LF (terminal logs), or LF.
_LINE_END = re.compile(r"(?<!\r)\r++\n")  # from a run's first CR only: linear in a run of CRs
_PORT_RANGE = f"a port number above {MAX_PORT} (port numbers are one byte)"


def text_lines(text: str) -> list[str]:
    """The lines of a whole text: CRLF and CR CR LF (terminal logs) are one line end each, a lone
    CR ends a line as elsewhere, and terminal escape sequences are dropped."""
    if "\r" in text:
        text = _LINE_END.sub("\n", text)
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text.splitlines()


def parse_lines(lines: Iterable[str], source: str) -> Fabric:
    b = Builder(source)
    header: dict[str, str] = {}
    current: Node | None = None
    saw_content = False
    fmt: str | None = None
    last_lineno = 0
    port_match = _PORT.match
    fast_match = _PORT_FAST.match
    strict_match = _PORT_STRICT.match
    guids = b.guids
    recorded = b.nodes
    referenced = b.referenced
    sides_append = b.sides.append
    cur_guid, cur_nports = Guid(""), 0
    second: SecondInProgress | None = None  # the record in progress, when its GUID an earlier one has
    own_lids = b.own_lids
    # The skipped line that ended the record in progress: a port line after it is an error there.
    broke: tuple[int, str] | None = None
    for lineno, raw in enumerate(lines, 1):
        last_lineno = lineno
        if "\x1b" in raw:
            raw = _ANSI.sub("", raw)
        # Port lines start with "[" (the fast pattern allows trailing blanks): no strip needed.
        stripped = raw if raw[:1] == "[" else raw.strip()
        if not stripped:
            current = broke = None
            continue
        first = stripped[0]
        if first == "[" and current is not None:
            # The hot path: a port line inside a record (inlined; ~100k per 16k-HCA fabric).
            # (the fast pattern's '.*"(.*)"' backtracks over every pair of quotes: a line with
            # many is left to the general parser, which reads it the same way)
            fm = strict_match(stripped) or (fast_match(stripped) if stripped.count('"') <= 8 else None)
            if fm is not None:
                port, prefix, rgid, rport, own_lid, desc, rlid, width, speed = fm.groups()
                if len(port) > 3 or len(rport) > 3:
                    raise b.error(lineno, raw, _PORT_RANGE)
                # (inlined: LIDs of up to 4 digits and widths of up to 2 are always in range)
                if (
                    (rlid is not None and len(rlid) > 4)
                    or (own_lid is not None and len(own_lid) > 4)
                    or (width is not None and len(width) > 2)
                ) and (problem := _numbers_problem(own_lid, rlid, width)):
                    raise b.error(lineno, raw, problem)
                pnum = int(port)
                if pnum > cur_nports > 0:
                    raise b.error(lineno, raw, f"port {pnum} beyond the {cur_nports} ports of its record")
                remote_guid = guids.get(rgid)
                if remote_guid is None:
                    try:
                        remote_guid = b.guid(rgid)
                    except ValueError as exc:
                        raise b.error(lineno, raw, str(exc)) from exc
                rpnum = int(rport)
                if second is not None:
                    second.port_line(pnum, PortRef(remote_guid, rpnum), own_lid)
                    continue
                if own_lid is not None:
                    own_lids.setdefault((cur_guid, pnum), int(own_lid))
                    if current.lid is None:
                        # An HCA's LID is printed on its port line (``# lid 647 lmc 0 "leaf" ...``).
                        n = current  # (a direct constructor call: dataclasses.replace is 4x slower)
                        current = b.nodes[cur_guid] = Node(
                            n.guid,
                            n.kind,
                            n.description,
                            n.nports,
                            Lid(int(own_lid)),
                            n.sysimgguid,
                            n.vendid,
                            n.devid,
                        )
                if remote_guid not in recorded:
                    # Only far ends without a record of their own (yet) need remembering;
                    # the few whose record comes later are dropped from this map at the end.
                    kind = _KIND_BY_PREFIX.get(prefix or "S", NodeKind.SWITCH)
                    rdesc = desc.strip() if desc else ""
                    if rlid:
                        b.far_lid(remote_guid, kind, rpnum, int(rlid))
                    if remote_guid not in referenced:  # first sight: b.reference, inlined
                        referenced[remote_guid] = FarNode(kind, rdesc, int(rlid) if rlid else None, rpnum)
                    else:
                        b.reference(remote_guid, kind, rdesc, int(rlid) if rlid else None, rpnum)
                # ``?????`` in place of width x speed: the tool could not read the port (MAD lost).
                sides_append(
                    (
                        cur_guid,
                        pnum,
                        remote_guid,
                        rpnum,
                        int(width) if width else 0,
                        speed.upper() if speed else "???",
                        lineno,
                    )
                )
                continue
        if first in "SCRH" and fmt == "topology":
            m = _NODE.match(stripped)
            if m:
                saw_content = True
                current, second = _node_record(b, m, header, lineno, raw)
                cur_guid, cur_nports = current.guid, current.nports
                header = {}
                broke = None
                continue
        if first == "#":
            if stripped.startswith(ORIGIN_LINE):
                b.origin = origin_of(stripped) or b.origin
            continue
        if first in "vdsc" and fmt == "topology" and "=" in stripped and '"' not in stripped:
            # vendid=/devid=/sysimgguid=/switchguid=/caguid= header lines (fast path)
            key, _, value = stripped.partition("=")
            if key in _HEADER_KEYS:
                words = value.split()
                header[key] = words[0] if words else ""
                current = None
                continue
        if _WARNING.match(stripped):
            b.diagnostics.append(stripped)
            continue
        if fmt != "ports" and _GROUPING.match(stripped) and not stripped.startswith(("Switch", "Ca")):
            current = None
            continue
        if fmt in (None, "ports"):
            m = PORTS_REPORT.match(stripped)
            if m:
                fmt = "ports"
                b.lenient_conflicts = True
                saw_content = True
                ports_report_line(b, m, lineno, raw)
                continue
            if fmt == "ports" and _TOOL_LIKE.search(stripped):
                raise b.error(lineno, raw, "not an ibnetdiscover -p port line")
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
            current, second = _node_record(b, m, header, lineno, raw)
            cur_guid, cur_nports = current.guid, current.nports
            header = {}
            broke = None
            continue
        m = port_match(stripped)
        if m:
            if current is None:
                if broke is not None:
                    raise b.error(broke[0], broke[1], "unrecognised line inside a Switch/Ca record")
                raise b.error(lineno, raw, "port line outside a Switch/Ca record")
            _port_line(b, current, second, m, lineno, raw)
            continue
        if _TOOL_LIKE.search(stripped):
            raise b.error(lineno, raw, "unrecognised line")
        # Not the tool's: a logger's banner, a shell prompt or command, a pasted remark.
        if current is not None:
            broke = (lineno, raw)
        current = None
        b.skipped.append(lineno)
    if not saw_content:
        raise b.error(last_lineno, "", "no Switch or Ca records (empty or not ibnetdiscover output)")
    return b.fabric()


def _node_record(
    b: Builder, m: re.Match[str], header: dict[str, str], lineno: int, line: str
) -> tuple[Node, SecondInProgress | None]:
    """The record's node, and where its port lines go when an earlier record has its GUID."""
    record, nports, gid, desc, rest = m.groups()
    try:
        sysimg = header.get("sysimgguid")
        node = record_node(
            _KIND_BY_RECORD[record],
            nports,
            b.guid(gid),
            desc,
            rest,
            b.guid(sysimg) if sysimg else None,
            header.get("vendid"),
            header.get("devid"),
        )
    except ValueError as exc:
        raise b.error(lineno, line, str(exc)) from exc
    return node, b.add_node(node, lineno)


def _numbers_problem(own_lid: str | None, far_lid: str | None, width: str | None) -> str | None:
    """Why a port line's LIDs or width are out of range (topology.bounds), or None."""
    return (
        (own_lid and lid_problem(own_lid))
        or (far_lid and lid_problem(far_lid))
        or (width and width_problem(width))
        or None
    )


def _port_line(
    b: Builder, current: Node, second: SecondInProgress | None, m: re.Match[str], lineno: int, line: str
) -> None:
    port, _labels, prefix, rgid, rport, _rportguid, comment = m.groups()
    comment = comment or ""
    own = _OWN_LID.match(comment)  # an HCA's own LID comes first: ``lid 647 lmc 0 "leaf" ...``
    own_lid = own.group(1) if own else None
    # The far end's description is the last quoted string; lid and width x speed follow it.
    q2 = comment.rfind('"')
    if q2 >= 0:
        q1 = comment.rfind('"', 0, q2)
        desc = comment[q1 + 1 : q2].strip() if q1 >= 0 else ""
        tail = comment[q2 + 1 :]
    else:
        desc, tail = "", comment
    ws = _WIDTH_SPEED.search(tail)
    if ws is None:
        raise b.error(lineno, line, "port line without width x speed (e.g. 4xHDR)")
    try:
        remote_guid = b.guid(rgid)
    except ValueError as exc:
        raise b.error(lineno, line, str(exc)) from exc
    if len(port) > 3 or len(rport) > 3 or int(port) > MAX_PORT or int(rport) > MAX_PORT:
        raise b.error(lineno, line, _PORT_RANGE)
    pnum, rpnum = int(port), int(rport)
    if current.nports and pnum > current.nports:
        raise b.error(lineno, line, f"port {pnum} beyond the {current.nports} ports of its record")
    if second is not None:
        second.port_line(pnum, PortRef(remote_guid, rpnum), own_lid)
        return
    if own_lid is not None:
        b.own_lids.setdefault((current.guid, pnum), int(own_lid))
        node = b.nodes[current.guid]
        if node.lid is None:
            b.nodes[current.guid] = dataclasses.replace(node, lid=Lid(int(own_lid)))
    rlid = LID.search(tail)
    if problem := _numbers_problem(None, rlid.group(1) if rlid else None, ws.group(1)):
        raise b.error(lineno, line, problem)
    kind = _KIND_BY_PREFIX.get(prefix or "S", NodeKind.SWITCH)
    if rlid and remote_guid not in b.nodes:
        b.far_lid(remote_guid, kind, rpnum, int(rlid.group(1)))
    b.reference(remote_guid, kind, desc, int(rlid.group(1)) if rlid else None, rpnum)
    width, speed = ws.group(1), ws.group(2)
    b.sides.append(
        (
            current.guid,
            pnum,
            remote_guid,
            rpnum,
            int(width) if width else 0,
            speed.upper() if speed else "???",
            lineno,
        )
    )
