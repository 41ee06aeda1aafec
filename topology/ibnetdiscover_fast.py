"""The line parser's inner loop for ``ibnetdiscover`` files in the tool's own canonical spelling.

``parse_canonical(text, source)`` reads a whole file with two C-level regex passes (one over the
records, one ``findall`` over all their port lines) and fills the parser's one builder
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
from collections.abc import Iterator, Sequence
from itertools import accumulate, chain, compress, repeat
from operator import itemgetter
from typing import TypeVar, cast

from topology.ibnetdiscover_build import Builder, Listings, Unnumbered
from topology.ibnetdiscover_common import (
    ORIGIN_LINE,
    origin_of,
    record_node,
)
from topology.model import Fabric, Guid, Node, NodeKind, normalise_guid

T = TypeVar("T")

# Both patterns use possessive quantifiers (*+, ++: the engine keeps no backtracking state) and
# the port lines ASCII digits only. That is about a quarter faster on 100k port lines, and it can
# only make the fast path stricter: a line they refuse falls back to the general parser.
#
# A record: the blank and comment lines before it, its header lines (in the tool's order; another
# order or spelling falls back), the node line, and the block of port lines under it.
_RECORD = re.compile(
    r"^(?:(?:[ \t]*+\n|#[^\n]*+\n)*+"
    # a header's value is its first word, as the general parser reads it (value.split()[0])
    r"(?:vendid=[ \t]*+(\S*+)[^\n]*+\n)?(?:devid=[ \t]*+(\S*+)[^\n]*+\n)?"
    r"(?:sysimgguid=[ \t]*+(?:0x([0-9a-f]{16})(?=[ \t\n])|(\S*+))[^\n]*+\n)?"
    r"(?:(?:switchguid|caguid)=[^\n]*+\n)?"
    r'(Switch|Ca)[ \t]++(\d++)[ \t]++"[SH]-([0-9a-f]{16})"[ \t]*+#[ \t]*+"([^"\n]*+)"([^\n]*+)\n'
    r"((?:\[[^\n]*+(?:\n|\Z))*+)"
    # or a run of blank and comment lines that no record follows; or nothing, where neither
    # starts. Every alternative is anchored at a line start (a failed attempt elsewhere costs one
    # step) and takes one record or one whole run of gap lines, so the matches tile the text
    # without a search ahead (a search would try each later position up to the end of a long run
    # of blanks: quadratic on adversarial text), and a run a record fails after is taken whole
    # by the gap, never tried again line by line. A record takes the gap before it (one match,
    # not two: half the matches of a file whose records are one blank line apart). The first
    # empty match ends the records (_tiles).
    r")|^(?P<gap>(?:[ \t]*+\n|#[^\n]*+\n)++)|(?P<no_record>)",
    re.M,
)
# Blank and comment lines after the last record.
_GAP = re.compile(r"(?:[ \t]*\n|#[^\n]*\n)*[ \t]*")
# One port line: port, far end as a key (guid"[port), own lid (HCA lines), width x speed. Every
# line it keeps is matched the same way by the general parser's first pattern (_PORT_STRICT),
# so both read the same values: one quoted far description, then only "lid N WxS" (a -f suffix
# such as "s=4 w=2" falls back).
# Numbers are bounded here (topology.bounds): a port of 1-3 digits, a width of 1-2, a LID in
# 0-49151 or 65535 (the alternatives below, tried in C); anything else falls back, and the
# line parser names the line.
# The far end's 16 GUID characters are not checked one by one here (a tenth of the matching):
# the line is kept only if its far key is a record's own port key, whose GUID the record line
# checked (16 lower-case hex digits), else the builder's short cut steps aside (a far end with
# no record of its own). So a line whose far GUID is not in that form never reaches the Fabric.
# The runs up to a closing quote or parenthesis ([^"], [^)]: one comparison a character, where
# [^"\n] is a set, a quarter of the matching) may run past the end of the line; a match that
# does takes the next line's start with it, and the count of one match per port line (in
# parse_canonical) refuses the text.
_LID = r"(?:[0-3]?\d{1,4}|4[0-8]\d{3}|490\d\d|491[0-4]\d|4915[01]|65535)"
_PORT_LINE = re.compile(
    r"^\[(\d{1,3}+)\](?:\([^)]*+\))*+[ \t]++"
    r'"[SH]-([^"]{16}"\[\d{1,3}+)\](?:\([0-9a-f]++\))?[ \t]*+#[ \t]*+'
    rf'(?:lid[ \t]++({_LID})[ \t]++lmc[ \t]++\d++[ \t]++)?"[^"]*+"[ \t]*+lid[ \t]++{_LID}[ \t]++'
    r"(\d{1,2}+x[A-Z][A-Z0-9]*+)$",
    re.M | re.A,
)
_KIND = {"Switch": NodeKind.SWITCH, "Ca": NodeKind.HCA}


@functools.lru_cache(maxsize=4096)
def _sysimg(text: str) -> Guid:
    # Cached: the nodes of one chassis or one HCA card share it; real output drops leading zeros.
    return normalise_guid(text)


def parse_canonical(text: str, source: str) -> Fabric | None:
    """The Fabric of ``text`` when every line of it is in the canonical spelling, else None.

    Read in columns: one per field of the records and one per field of all their port lines (in
    file order), each made by a C-level map, zip or join over the whole file. Nothing runs per
    port line in Python, and per record little more than its node's construction: this runs for
    every record and port of a 16k-HCA fabric."""
    if "\r" in text:
        return None
    records = _tiles(text)
    if not records:
        return None
    vendids, devids, plain_sysimgs, sysimgs, kinds, nports, gtexts, descs, tails, blocks = zip(
        *map(_GROUPS, records), strict=True
    )
    guids = cast("list[Guid]", list(map("0x".__add__, gtexts)))
    if len(set(guids)) != len(guids):
        return None  # a GUID two records have
    # Every line under a record must be a port line: one match per line, or the line parser reads it.
    counts = list(map(str.count, blocks, repeat("\n")))
    counts[-1] += not blocks[-1].endswith("\n") and bool(blocks[-1])  # the text's last line, unended
    # One findall over all the blocks joined (a call per record costs more than the matching).
    # Each intermediate is dropped as soon as its columns are made: the blocks and their join
    # are another copy of the text, the matches' tuples a third of the peak memory at 16k HCAs.
    joined = "".join(blocks)
    del records, blocks
    found = _PORT_LINE.findall(joined)
    del joined
    if len(found) != sum(counts):
        return None
    numbers, fars, own_lids, views = zip(*found, strict=True) if found else ((), (), (), ())
    del found
    starts = list(accumulate(counts, initial=0))  # each record's first port line
    is_ca = list(map("Ca".__eq__, kinds))
    # An HCA's LID is printed on its port lines (``# lid 647 lmc 0 "leaf" ...``): its node's is
    # the first one stated.
    port_lids: list[int | None] = [None] * len(guids)
    for i in compress(range(len(guids)), is_ca):
        for lid in own_lids[starts[i] : starts[i + 1]]:
            if lid:
                port_lids[i] = int(lid)
                break
    try:
        sysimg_guids = [
            Guid("0x" + plain) if plain else (_sysimg(other) if other else None)
            for plain, other in zip(plain_sysimgs, sysimgs, strict=True)
        ]
        made = list(
            map(
                record_node,
                map(_KIND.__getitem__, kinds),
                nports,
                guids,
                descs,
                tails,
                sysimg_guids,
                vendids,
                devids,
                port_lids,
            )
        )
    except ValueError:
        return None  # a number out of range: the line parser says so, with the line
    # Port numbers by lookup (a quarter of the cost of int() per line); the pattern allows up to
    # three digits, so one not in the table (256 and up, a leading zero) is over a byte or not
    # in the tool's spelling: the line parser reads it.
    port_numbers = list(map(_PORT_NUMBER.get, numbers))
    if None in port_numbers:
        return None
    ports = cast("list[int]", port_numbers)
    limits = [node.nports or _NO_LIMIT for node in made]  # a port count of 0: unknown, no limit
    if any(map(operator.gt, ports, _per_line(limits, counts))):
        return None  # a port beyond its record's port count
    builder = Builder(
        source,
        nodes=dict(zip(guids, made, strict=True)),
        own_lids=_lids(guids, made, is_ca, counts, starts, ports, own_lids),
        origin=_origin(text),
        numbered=False,
        listings=_listings(gtexts, guids, counts, numbers, fars, ports, views),
    )
    try:
        return builder.fabric()
    except Unnumbered:
        return None  # the line parser names the line


_GROUPS = operator.itemgetter(*range(1, 11))  # a record's ten groups
_NO_LIMIT = 1 << 30
_PORT_NUMBER = {str(n): n for n in range(256)}  # a port number is one byte


def _tiles(text: str) -> list[re.Match[str]] | None:
    """The records of ``text`` when records, blank and comment lines cover all of it (blanks
    without a line end at the very end too), else None."""
    records: list[re.Match[str]] = []
    end = 0
    for m in _RECORD.finditer(text):
        kind = m.lastgroup
        if kind == "no_record":
            break
        end = m.end()
        if kind != "gap":
            records.append(m)
    tail = _GAP.match(text, end)
    return records if tail is not None and tail.end() == len(text) else None


def _per_line(values: Sequence[T], counts: Sequence[int]) -> Iterator[T]:
    """Each record's value once per port line of its: a column beside the port lines'."""
    return chain.from_iterable(map(repeat, values, counts))


def _lids(
    guids: list[Guid],
    made: list[Node],
    is_ca: list[bool],
    counts: list[int],
    starts: list[int],
    ports: list[int],
    own_lids: Sequence[str],
) -> dict[tuple[Guid, int], int]:
    """Every LID the records state, in the order the line parser has them: a switch's on its
    port 0 and an HCA's on each of its ports, record by record, except that HCAs with one port
    line (most of a large fabric) come last, in bulk."""
    lids: dict[tuple[Guid, int], int] = {}
    single = [ca and n == 1 for ca, n in zip(is_ca, counts, strict=True)]
    for i in compress(range(len(guids)), map(operator.not_, single)):
        if not is_ca[i]:
            lid = made[i].lid
            if lid is not None:
                lids[(guids[i], 0)] = lid
            continue
        for j in range(starts[i], starts[i + 1]):
            if own_lids[j]:
                lids.setdefault((guids[i], ports[j]), int(own_lids[j]))
    firsts = list(compress(starts, single))  # their one port line
    keys = zip(compress(guids, single), map(ports.__getitem__, firsts), strict=True)
    values = map(own_lids.__getitem__, firsts)
    lids.update((key, int(lid)) for key, lid in zip(keys, values, strict=True) if lid)
    return lids


def _listings(
    gtexts: Sequence[str],
    guids: list[Guid],
    counts: list[int],
    numbers: Sequence[str],
    fars: Sequence[str],
    ports: list[int],
    views: Sequence[str],
) -> Listings:
    """Every port line as the builder's columns (no line numbers), its ends keyed as the port
    lines name a far end (``guid"[port``: no text made for the far ends). A far end with no
    record of its own, or one that does not list the cable back, leaves the builder's short
    cut, which then steps aside (Unnumbered) for the line parser."""
    prefixes = list(map(operator.add, gtexts, repeat('"[')))  # the key prefix of a record's own ports
    view_of = {view: _view(view) for view in set(views)}
    width_speed = list(map(view_of.__getitem__, views))
    return Listings(
        near=list(map(operator.add, _per_line(prefixes, counts), numbers)),
        far=list(fars),
        guids=list(_per_line(guids, counts)),
        ports=ports,
        widths=list(map(itemgetter(0), width_speed)),
        speeds=list(map(itemgetter(1), width_speed)),
        lines=[0] * len(ports),
    )


def _view(text: str) -> tuple[int, str]:
    """``4xNDR`` -> (4, "NDR")."""
    width, _, speed = text.partition("x")
    return int(width), speed


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
