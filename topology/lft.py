"""Unicast forwarding tables (LFTs) of every switch as one switch x LID array. Pure.

Every saved or live form ibfab meets is read here, into one :class:`Lfts`:

* ``ibroute <lid>`` (one or many, concatenated) and ``dump_lfts`` / ``dump_fts`` (by LID or by
  directed route): ``Unicast lids [0x0-0x26] of switch Lid 2 guid 0x... (desc):`` then
  ``0x0001 001 : (Channel Adapter portguid 0x...: 'n1 mlx5_0')`` and ``38 valid lids dumped``
  (``-n``: no destination, ``-a``: invalid entries too, ``0x0000 255 : (path #0 - illegal port)``);
* OpenSM's ``opensm-lfts.dump`` (``0x0001 001 # Channel Adapter portguid ...``) and
  ``opensm.fdbs`` (``dump_ucast_routes: Switch 0x...`` then ``0x0001 : 001  : 01   : yes``);
* an ibdiagnet run's ``ibdiagnet2.fdbs`` (``osm_ucast_mgr_dump_ucast_routes: Switch 0x...``,
  ``0x0001 : UNREACHABLE``, ``PLFT_NUM: n`` before a private table, which is not the LFT).

The tables are held as a ``uint8`` array, one row per switch and one column per LID (0 up to the
largest LID listed): the out port, 0 for the switch itself, :data:`NO_ROUTE` (255) where no route
is set. A dump of 1,280 switches x 18,000 LIDs (2 GB of text) is read in chunks with numpy: the
fixed-width entry lines every tool writes are decoded as columns, the few other lines (headers,
trailers, tool chatter, an entry spaced unusually) one by one.

Bad input is one :class:`ParseError` naming the file, the line and what is wrong: a line that is
no part of a table, an entry before any switch, a LID outside 1-49151 (0xBFFF, the unicast range),
a port beyond the switch's port count (when the counts are given) or beyond 254, a table of the
``Unicast lids`` forms not closed by its ``lids dumped`` line (cut short), a count of valid LIDs
that is not what the table lists, a switch listed twice with different routes or several dump
formats in one file (mixed dumps).

>>> t = parse_lfts('''Unicast lids [0x0-0x3] of switch Lid 2 guid 0x0000000000000010 (leaf-1):
...   Lid  Out   Destination
...        Port     Info
... 0x0001 001 : (Channel Adapter portguid 0x0000000000000002: 'n1 mlx5_0')
... 0x0003 005 : (Channel Adapter portguid 0x0000000000000004: 'n2 mlx5_0')
... 2 valid lids dumped
... ''', "ibroute")
>>> t.format, t.switches, t.port(t.switches[0], 3), t.port(t.switches[0], 2)
('ibroute', ('0x0000000000000010',), 5, None)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from topology.lft_reader import parse_chunks, reader_of
from topology.lft_tables import (
    DUMP_FTS,
    IBDIAGNET_FDBS,
    IBROUTE,
    MAX_SWITCH_PORT,
    MAX_UNICAST_LID,
    NO_ROUTE,
    OPENSM_FDBS,
    OPENSM_LFTS,
    TOOL,
    Destination,
    Lfts,
)
from topology.model import Guid
from topology.textfile import InputFileError

__all__ = [
    "DUMP_FTS",
    "IBDIAGNET_FDBS",
    "IBROUTE",
    "MAX_SWITCH_PORT",
    "MAX_UNICAST_LID",
    "NO_ROUTE",
    "OPENSM_FDBS",
    "OPENSM_LFTS",
    "TOOL",
    "Destination",
    "Lfts",
    "parse_lfts",
    "read_lfts",
]


def parse_lfts(
    text: str | bytes, source: str = "<lft dump>", *, port_counts: Mapping[Guid, int] | None = None
) -> Lfts:
    """The tables in ``text`` (any of the forms above). ``port_counts`` (a switch's number of
    ports, from the topology) refuses a route out of a port the switch does not have."""
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    return parse_chunks(reader_of(data), source, port_counts, len(data))


def read_lfts(path: str | Path, *, port_counts: Mapping[Guid, int] | None = None) -> Lfts:
    """:func:`parse_lfts` of a file, read in chunks (memory bounded by a chunk and the array,
    whatever the size of the dump); ``-`` reads stdin."""
    name = str(path)
    try:
        if name == "-":
            import sys

            return parse_chunks(sys.stdin.buffer.readinto, name, port_counts)  # type: ignore[union-attr]
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            return parse_chunks(fh.readinto, name, port_counts, size or None)
    except IsADirectoryError as exc:
        raise InputFileError(TOOL, name, 0, "is a directory, not a file") from exc
    except OSError as exc:
        raise InputFileError(TOOL, name, 0, exc.strerror or str(exc)) from exc
