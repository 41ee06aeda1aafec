"""The ``ibnetdiscover -p`` ports report, one line at a time, for the line parser
(topology.ibnetdiscover): each line names a port by LID, number and GUID, its width and speed,
and its peer, or no peer (a port that is down).

``CA   134  1 0x7cfe9003003b4bde 4x EDR - SW  1719 10 0x7cfe9003009ce5b0 ( 'o0001 HCA-1' - 'ib-i1l1s01' )``
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from topology.bounds import lid_problem, port_problem, width_problem
from topology.model import NodeKind, PortRef, UnconnectedPort, normalise_guid

if TYPE_CHECKING:
    from topology.ibnetdiscover_build import Builder

_KIND_BY_SHORT = {"SW": NodeKind.SWITCH, "CA": NodeKind.HCA, "RT": NodeKind.ROUTER}
PORTS_REPORT = re.compile(
    r"^(CA|SW|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]+)\s+(\d+)x\s*(\S+)"
    # atomic first description: the line's end is checked once, not once per "' - '" in it
    r"(?:\s+-\s+(CA|SW|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]+)\s+\(\s*(?>'(.*?)'\s+-\s+')(.*)'\s*\)"
    r"|\s+'(.*)')\s*$"
)


def ports_report_line(b: Builder, m: re.Match[str], lineno: int, line: str) -> None:
    (kind, lid, port, gid, width, speed, rkind, rlid, rport, rgid, desc, rdesc, lone_desc) = m.groups()
    problem = lid_problem(lid) or port_problem(port) or width_problem(width)
    if rkind is not None:
        problem = problem or lid_problem(rlid) or port_problem(rport)
    if problem:
        raise b.error(lineno, line, problem)
    try:
        guid = normalise_guid(gid)
    except ValueError as exc:
        raise b.error(lineno, line, str(exc)) from exc
    local_desc = (desc if rkind else lone_desc) or ""
    b.reference(guid, _KIND_BY_SHORT[kind], local_desc.strip(), int(lid), int(port))
    b.far_lid(guid, _KIND_BY_SHORT[kind], int(port), int(lid))
    speed = speed.upper() if speed != "???" else "???"
    if rkind is None:
        b.unconnected.append(UnconnectedPort(PortRef(guid, int(port)), int(width), speed))
        return
    try:
        rguid = normalise_guid(rgid)
    except ValueError as exc:
        raise b.error(lineno, line, str(exc)) from exc
    b.reference(rguid, _KIND_BY_SHORT[rkind], (rdesc or "").strip(), int(rlid), int(rport))
    b.far_lid(rguid, _KIND_BY_SHORT[rkind], int(rport), int(rlid))
    b.sides.append((guid, int(port), rguid, int(rport), int(width), speed, lineno))
