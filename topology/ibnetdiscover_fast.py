"""The line parser's inner loop for ``ibnetdiscover`` files in the tool's own canonical spelling.

``parse_canonical(text, source)`` reads a whole file with a few C-level regex calls per record
(one for the record, one ``findall`` for its port lines) and fills the parser's one builder
(:class:`topology.ibnetdiscover_build.Builder`) in bulk: the same nodes, port lines and LIDs the
line parser would give it, so the Fabric is made by the same code (cables paired by
:func:`~topology.ibnetdiscover_build.cables`). It reads only what it can read completely: header
lines, ``Switch``/``Ca`` records, port lines ending in width x speed, blank and comment lines,
far ends that have records of their own. On anything else (CRLF, ``-p`` reports, ibwarn lines,
``???``, partial files, a port listed twice, a fault the builder finds) it returns None and the
caller runs the line parser, which either reads the variant or names the line at fault. So this
module never raises a parse error: it only decides whether the quick reading is complete.

The result is the line parser's Fabric (``tests/topology/test_ibnetdiscover_fast.py`` checks that
on every real capture, on generated fabrics and on perturbations of them).
"""

from __future__ import annotations

import functools
import operator
import re
from operator import itemgetter

from topology.ibnetdiscover_build import Builder, Listings, Unnumbered
from topology.ibnetdiscover_common import (
    ORIGIN_LINE,
    origin_of,
    record_node,
)
from topology.model import (
    Fabric,
    Guid,
    Node,
    NodeKind,
    normalise_guid,
)

# Both patterns use possessive quantifiers (*+, ++: the engine keeps no backtracking state) and
# the port lines ASCII digits only. That is about a quarter faster on 100k port lines, and it can
# only make the fast path stricter: a line they refuse falls back to the general parser.
#
# A record: the blank and comment lines before it, its header lines (in the tool's order; another
# order or spelling falls back), the node line, and the block of port lines under it.
_RECORD = re.compile(
    r"(?:[ \t]*+\n|#[^\n]*+\n)*+"
    # a header's value is its first word, as the general parser reads it (value.split()[0])
    r"(?:vendid=[ \t]*+(\S*+)[^\n]*+\n)?(?:devid=[ \t]*+(\S*+)[^\n]*+\n)?"
    r"(?:sysimgguid=[ \t]*+(?:0x([0-9a-f]{16})(?=[ \t\n])|(\S*+))[^\n]*+\n)?"
    r"(?:(?:switchguid|caguid)=[^\n]*+\n)?"
    r'(Switch|Ca)[ \t]++(\d++)[ \t]++"[SH]-([0-9a-f]{16})"[ \t]*+#[ \t]*+"([^"\n]*+)"([^\n]*+)\n'
    r"((?:\[[^\n]*+(?:\n|\Z))*+)"
)
# Blank and comment lines after the last record.
_GAP = re.compile(r"(?:[ \t]*\n|#[^\n]*\n)*[ \t]*")
# One port line: port, far end as a key (guid"[port), own lid (HCA lines), width x speed. Every
# line it matches is matched the same way by the general parser's first pattern (_PORT_STRICT),
# so both read the same values: one quoted far description, then only "lid N WxS" (a -f suffix
# such as "s=4 w=2" falls back).
# Numbers are bounded here (topology.bounds): a port of 1-3 digits, a width of 1-2, a LID in
# 0-49151 or 65535 (the alternatives below, tried in C); anything else falls back, and the
# line parser names the line.
_LID = r"(?:[0-3]?\d{1,4}|4[0-8]\d{3}|490\d\d|491[0-4]\d|4915[01]|65535)"
_PORT_LINE = re.compile(
    r"^\[(\d{1,3}+)\](?:\([^)\n]*+\))*+[ \t]++"
    r'"[SH]-([0-9a-f]{16}"\[\d{1,3}+)\](?:\([0-9a-f]++\))?[ \t]*+#[ \t]*+'
    rf'(?:lid[ \t]++({_LID})[ \t]++lmc[ \t]++\d++[ \t]++)?"[^"\n]*+"[ \t]*+lid[ \t]++{_LID}[ \t]++'
    r"(\d{1,2}+x[A-Z][A-Z0-9]*+)$",
    re.M | re.A,
)
_KIND = {"Switch": NodeKind.SWITCH, "Ca": NodeKind.HCA}


@functools.lru_cache(maxsize=4096)
def _sysimg(text: str) -> Guid:
    # Cached: the nodes of one chassis or one HCA card share it; real output drops leading zeros.
    return normalise_guid(text)


def parse_canonical(text: str, source: str) -> Fabric | None:
    """The Fabric of ``text`` when every line of it is in the canonical spelling, else None."""
    if "\r" in text:
        return None
    nodes: dict[Guid, Node] = {}
    lids: dict[tuple[Guid, int], int] = {}  # every LID the records state: a switch's port 0, each HCA port
    hca_lids: list[tuple[Guid, str, str]] = []  # (GUID, port, LID) of single-port HCA records
    ports = _Ports()
    record_match, ports_of = _RECORD.match, _PORT_LINE.findall
    size, pos = len(text), 0
    while pos < size:
        m = record_match(text, pos)
        if m is None:
            tail = _GAP.match(text, pos)
            if tail is not None and tail.end() == size:
                break  # blank and comment lines to the end
            return None
        pos = m.end()
        vendid, devid, plain_sysimg, sysimg, record, nports_text, gtext, desc, rest, block = m.groups()
        guid = Guid("0x" + gtext)
        if guid in nodes:
            return None
        found_ports = ports_of(block)
        if len(found_ports) != block.count("\n") + (not block.endswith("\n") and bool(block)):
            return None  # a line under the record is not a plain port line
        port_lid: int | None = None
        if record == "Ca":
            # An HCA's LID is printed on its port lines (``# lid 647 lmc 0 "leaf" ...``).
            if len(found_ports) == 1 and found_ports[0][2]:
                hca_lids.append((guid, found_ports[0][0], found_ports[0][2]))  # made in bulk below
            else:
                for p in found_ports:
                    if p[2]:
                        lids.setdefault((guid, int(p[0])), int(p[2]))
            own = found_ports[0][2] if found_ports else ""
            port_lid = int(own) if own else next((int(p[2]) for p in found_ports if p[2]), None)
        try:
            sysimg_guid = Guid("0x" + plain_sysimg) if plain_sysimg else (_sysimg(sysimg) if sysimg else None)
            node = nodes[guid] = record_node(
                _KIND[record], nports_text, guid, desc, rest, sysimg_guid, vendid, devid, port_lid
            )
        except ValueError:
            return None  # a number out of range: the line parser says so, with the line
        nports = node.nports
        if record != "Ca" and node.lid is not None:
            lids[(guid, 0)] = node.lid
        ports.add(guid, gtext, nports, found_ports)
    listings = ports.listings()
    if not nodes or listings is None:
        return None
    if hca_lids:
        guids, numbers, values = zip(*hca_lids, strict=True)
        lids.update(zip(zip(guids, map(int, numbers), strict=True), map(int, values), strict=True))
    builder = Builder(
        source, nodes=nodes, own_lids=lids, origin=_origin(text), numbered=False, listings=listings
    )
    try:
        return builder.fabric()
    except Unnumbered:
        return None  # the line parser names the line


def _origin(text: str) -> tuple[str, str] | None:
    """(node GUID, port GUID) of the last "# Initiated from node N port P" line, read the way
    the general parser reads it (words 5 and 7 of a line starting with that phrase)."""
    end = len(text)
    while (i := text.rfind(ORIGIN_LINE, 0, end)) >= 0:
        if i == 0 or text[i - 1] == "\n":
            stop = text.find("\n", i)
            origin = origin_of(text[i : stop if stop >= 0 else len(text)])
            if origin is not None:
                return origin
        end = i  # not a line of its own, or not in that form: the general parser skips it too
    return None


class _Ports:
    """Every port line of the file in flat, parallel lists: built with C-level list operations
    per record, handed to the builder as columns at the end (this runs for every port of a
    16k-HCA fabric)."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, ...]] = []  # the port-line matches
        self.owner: list[Guid] = []  # the record each line is in
        self.prefix: list[str] = []  # its GUID text + '"[': the key prefix of its own ports
        self.limit: list[int] = []  # its port count (unknown: no limit)

    def add(self, guid: Guid, gtext: str, nports: int, lines: list[tuple[str, ...]]) -> None:
        n = len(lines)
        self.lines += lines
        self.owner += [guid] * n
        self.prefix += [gtext + '"['] * n
        self.limit += [nports or _NO_LIMIT] * n

    def listings(self) -> Listings | None:
        """Every port line as the builder's columns (no line numbers), its ends keyed as the
        port lines name a far end (``guid"[port``: no text made for the far ends), or None when a
        port is beyond its record's port count or any (one byte). A far end with no record of
        its own, or one that does not list the cable back, leaves the builder's short cut, which
        then steps aside (Unnumbered) for the line parser."""
        lines = self.lines
        numbers = [p[0] for p in lines]
        ints = list(map(int, numbers))
        if any(map(operator.gt, ints, self.limit)) or (ints and max(ints) > 255):
            return None
        views = list(map(_view, [p[3] for p in lines]))
        return Listings(
            near=list(map(operator.add, self.prefix, numbers)),
            far=[p[1] for p in lines],
            guids=self.owner,
            ports=ints,
            widths=list(map(itemgetter(0), views)),
            speeds=list(map(itemgetter(1), views)),
            lines=[0] * len(ints),
        )


_NO_LIMIT = 1 << 30


@functools.lru_cache(maxsize=256)
def _view(text: str) -> tuple[int, str]:
    """``4xNDR`` -> (4, "NDR")."""
    width, _, speed = text.partition("x")
    return int(width), speed
