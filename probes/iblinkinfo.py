"""``iblinkinfo`` output: every port of every switch (and HCA) with its port and physical state.

ibfab reads it for what ``ibnetdiscover`` cannot say: which ports are *disabled* now (an isolated
port has no link, so it is simply absent from a topology). Pure functions of text.

>>> text = '''Switch: 0x0c42a10300a00000 MF0;leaf-su01-r0:MQM9700/U1:
...            2    5[  ] ==( 4X        53.125 Gbps Active/Disabled)==>      "Port not available"
...            2    9[  ] ==(                Down/ Polling)==>             [  ] "" ( )'''
>>> [(p.ref.port, p.state, p.phys) for p in parse_iblinkinfo(text)]
[(5, 'Active', 'Disabled'), (9, 'Down', 'Polling')]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from topology.bounds import lid_problem, port_problem
from topology.errors import ParseError
from topology.model import Guid, PortRef, normalise_guid

TOOL = "iblinkinfo"
# "Switch: 0x... desc:" or "CA: desc:" (an HCA's GUID comes on its port line instead).
_SWITCH = re.compile(r"Switch:?\s+(0x[0-9a-fA-F]+)\b")
_CA = re.compile(r"CA:\s")
# [GUID] LID PORT[..] ==( [width speed] State/ Phys)==> ...   (no nested quantifiers: linear)
_PORT = re.compile(r"\s*(?:(0x[0-9a-fA-F]+)\s+)?(\d+)\s+(\d+)\[[^\]\n]*\]\s*==\(([^()\n]*)\)")


@dataclass(frozen=True, slots=True)
class PortLink:
    """One port as iblinkinfo shows it."""

    ref: PortRef
    state: str  # Active, Down, Init, Armed
    phys: str  # LinkUp, Polling, Disabled, Sleep, ...


def _guid(text: str, source: str, lineno: int, line: str) -> Guid:
    try:
        return normalise_guid(text)
    except ValueError as exc:
        raise ParseError(TOOL, source, lineno, line, str(exc)) from None


def parse_iblinkinfo(text: str, source: str = "<iblinkinfo>") -> list[PortLink]:
    """Every port line under a ``Switch:`` or ``CA:`` header; an HCA's GUID is read from its port
    line. A port line before any header is a :class:`ParseError`."""
    out: list[PortLink] = []
    node: Guid | None = None
    in_ca = False
    for lineno, line in enumerate(text.splitlines(), 1):
        head = line.lstrip()
        sw = _SWITCH.match(head)
        if sw:
            node, in_ca = _guid(sw.group(1), source, lineno, line), False
            continue
        if _CA.match(head):
            node, in_ca = None, True
            continue
        m = _PORT.match(line)
        if not m:
            continue
        guid_text, lid, port, status = m.groups()
        problem = lid_problem(lid) or port_problem(port)
        if problem is not None:
            raise ParseError(TOOL, source, lineno, line, problem)
        owner = _guid(guid_text, source, lineno, line) if guid_text else node
        if owner is None:
            if in_ca:
                continue  # an HCA printed without its GUID: nothing to key it by
            raise ParseError(TOOL, source, lineno, line, "a port line before any 'Switch:' or 'CA:' header")
        state, _, phys = status.rpartition("/")
        out.append(
            PortLink(PortRef(owner, int(port)), state.split()[-1] if state.split() else "", phys.strip())
        )
    return out


def disabled_ports(text: str, source: str = "<iblinkinfo>") -> frozenset[PortRef]:
    """The ports whose physical state is Disabled (by ibportstate, UFM or a switch's CLI)."""
    return frozenset(p.ref for p in parse_iblinkinfo(text, source) if p.phys == "Disabled")
