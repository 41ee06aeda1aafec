"""A switch's system name and board from its NodeDescription (``MF0;dir-1:MCS8500/L05/U2``).

Its own module so that discovery (topology.chassis: a director's name, a board's kind) reads
these names without importing the cable-plan readers (topology.plannames, topology.cableplan),
which discovery does not use: they are a tenth of ``ibfab discover``'s imports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# [prefix;]system:path, e.g. MF0;dsm07-01ib1:MCS8500/L05/U2 or MF0;leaf-01:MQM8700/U1.
_SYSTEM = re.compile(r"^(?:[^;:]*;)?([^;:]+):(\S*)$")
_BOARD = re.compile(r"/([LS])(\d+)/U(\d+)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Board:
    """A switch ASIC on a director's line (``L``) or spine (``S``) board."""

    system: str
    kind: str
    number: int
    asic: int


def system_name(description: str) -> tuple[str, Board | None]:
    """(system name, board) of a switch NodeDescription; board None for a one-ASIC switch.

    >>> system_name("MF0;dir-1:MCS8500/L05/U2")
    ('dir-1', Board(system='dir-1', kind='L', number=5, asic=2))
    >>> system_name("Quantum-2 Mellanox Technologies")
    ('Quantum-2 Mellanox Technologies', None)
    """
    m = _SYSTEM.match(description.strip())
    if m is None:
        return description.strip(), None
    system = m.group(1).strip()
    b = _BOARD.search(m.group(2))
    board = Board(system, b.group(1).upper(), int(b.group(2)), int(b.group(3))) if b else None
    return system, board
