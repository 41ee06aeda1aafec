"""The chunked reader of LFT dumps behind :func:`topology.lft.parse_lfts` and
:func:`topology.lft.read_lfts`: whole lines fed chunk by chunk, the fixed-width entry lines decoded
as numpy columns, every other line (headers, trailers, chatter, an unusually spaced entry) one by
one, into a growing switch x LID array. The forms it reads and the errors it gives are described
in :mod:`topology.lft`."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from topology.errors import ParseError
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
from topology.model import Guid, normalise_guid
from topology.textfile import MAX_LINE_BYTES, InputFileError

_FAMILY = {IBROUTE: "ibroute", DUMP_FTS: "ibroute", OPENSM_LFTS: "opensm-lfts.dump"}

_CHUNK = 32 << 20  # bytes read and decoded at once
_PAD = 16  # spare bytes after a chunk, so fixed offsets past a short last line stay in bounds

# "Unicast lids [0x0-0x26] of switch Lid 2 guid 0x0c42... (MF0;leaf-01:MQM8700/U1):" (ibroute),
# "... of switch DR path slid 0; dlid 0; 0,1,9,13 guid 0x... (desc):" (dump_fts),
# "Unicast lids [0-38] of switch Lid 2 guid 0x... ('desc'):" (opensm-lfts.dump).
# The first "guid 0x..." is the switch's; atomic, so that a long line is read once.
_HEADER = re.compile(
    r"^Unicast lids \[[^\]]*+\] of switch (?:Lid (\d++) |(DR path ))?(?>.*?\bguid (0x[0-9A-Fa-f]++)\b)(.*+)$"
)
_FDBS_HEADER = re.compile(r"^(osm_ucast_mgr_)?dump_ucast_routes: Switch (0x[0-9A-Fa-f]++)\s*+$")
_TRAILER = re.compile(r"^(\d++) (valid )?lids dumped\s*+$")
_PLFT = re.compile(r"^PLFT_NUM:\s*+(\d++)\s*+$")
# An entry spaced otherwise than the tools write it: "0x1 1", "0x0001 : 001 : 01 : yes",
# "0x0001 : UNREACHABLE". The fdbs form must carry its hops and "optimal" columns ("yes", or
# OpenSM's "No 2 hop path possible via port 2!"): a line cut after the port is not an entry.
_ENTRY_IBROUTE = re.compile(r"^0x([0-9A-Fa-f]++)[ \t]++(\d++)(?:[ \t]++[:#].*+|[ \t]*+)$")
_ENTRY_FDBS = re.compile(
    r"^0x([0-9A-Fa-f]++)[ \t]*+:[ \t]*+(?:(\d++)[ \t]*+:[ \t]*+\d++[ \t]*+:[ \t]*+\S[^\n]*+|(UNREACHABLE)[ \t]*+)$",
    re.IGNORECASE,
)
_SKIP = re.compile(
    r"^(?:\s*+$|\s*+Lid\s++Out|\s*+Port\s++Info|LID\s*+:\s*+Port|ibwarn:|\*\*\* WARNING|#|[^:]*sim_connect)"
)
# "(Channel Adapter portguid 0x...: 'n1 mlx5_0')" / "# Switch portguid 0x...: 'desc'"
_DESTINATION = re.compile(
    r"(Channel Adapter|Switch|Router) portguid (0x[0-9A-Fa-f]++): '(.*)'\)?\s*+$",
)


def parse_chunks(
    read: Callable[[memoryview], int],
    source: str,
    port_counts: Mapping[Guid, int] | None,
    size_hint: int | None = None,
) -> Lfts:
    """Feed whole lines to the reader. ``read(view)`` fills the view (at most its length) and
    returns how many bytes it put there (0 at the end). Each chunk is read in after what was left
    of the last one (a line not yet ended), with :data:`_PAD` spare bytes after it. A chunk is
    no larger than the input when its size is known (``size_hint``): a small dump does not pay
    for a 32 MB buffer."""
    reader = _Reader(source, port_counts)
    chunk = _CHUNK if size_hint is None else max(1, min(_CHUNK, size_hint + 1))
    buf = bytearray(chunk + _PAD)
    held = 0  # bytes of an unfinished line at the start of buf
    first = True
    while True:
        if held + chunk + _PAD > len(buf):
            buf.extend(bytes(held + chunk + _PAD - len(buf)))
        got = read(memoryview(buf)[held : held + chunk])
        if first and got:
            first = False
            if bytes(buf[:2]) in (b"\xff\xfe", b"\xfe\xff"):
                raise InputFileError(TOOL, source, 0, "UTF-16 text: save the dump as UTF-8 (or plain ASCII)")
            if buf[:3] == b"\xef\xbb\xbf":
                buf[:got] = buf[3:got] + b"   "
                got -= 3
        if not got:
            break
        size = held + got
        cut = buf.rfind(b"\n", 0, size) + 1
        if cut == 0:
            if size > MAX_LINE_BYTES:
                raise InputFileError(
                    TOOL, source, reader.lines + 1, f"line {reader.lines + 1} is longer than 1 MiB"
                )
            held = size
            continue
        buf[size : size + _PAD] = b" " * _PAD
        reader.feed(buf, cut)
        held = size - cut
        buf[:held] = buf[cut:size]
    if held:
        buf[held : held + 1] = b"\n"
        buf[held + 1 : held + 1 + _PAD] = b" " * _PAD
        reader.feed(buf, held + 1, unterminated=True)
    return reader.finish()


def reader_of(data: bytes) -> Callable[[memoryview], int]:
    at = 0

    def read(view: memoryview) -> int:
        nonlocal at
        n = min(len(view), len(data) - at)
        view[:n] = data[at : at + n]
        at += n
        return n

    return read


def _hex_digit(col: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The value of each byte as a hex digit (0-15), 16 or more where it is not one."""
    v = col - np.uint8(48)  # '0'-'9' -> 0-9; any other byte -> 10 or more
    low = (col | np.uint8(32)) - np.uint8(87)  # 'a'-'f' / 'A'-'F' -> 10-15; below 'a' wraps to 170+
    return np.where(v < 10, v, low)


_BLANK_END = np.zeros(256, bool)
for _c in b" \r\n\t":
    _BLANK_END[_c] = True
_WIDTH = 13  # bytes of an entry line's start that the fast path reads: "0x0001 : 001 "


@dataclass
class _Section:
    guid: Guid
    header_line: int
    lid: int | None
    name: str
    family: str  # "ibroute", "opensm-lfts.dump", "fdbs"
    entries: int = 0
    closed: bool = False  # its "lids dumped" line was read
    valid_count: int | None = None
    plft: int = 0  # the private table the next entries belong to (0: the LFT)


class _Reader:
    """Reads a dump's lines chunk by chunk into a growing switch x LID array."""

    def __init__(self, source: str, port_counts: Mapping[Guid, int] | None) -> None:
        self.source = source
        self.port_counts = port_counts
        self.lines = 0  # lines read before the current chunk
        self.format: str | None = None
        self.sections: list[_Section] = []
        self.ports = np.full((64, 1024), NO_ROUTE, np.uint8)
        self.top = 0
        self.destinations: dict[int, Destination] = {}
        self.plft_switches: set[Guid] = set()
        self.last_entry: tuple[int, bytes] | None = None  # the last entry line (number, text)
        self._scratch: np.ndarray[Any, Any] | None = None
        self._cut = False  # the line being read is the last, with no line end

    # -- errors ---------------------------------------------------------------------------------
    def _error(self, lineno: int, line: bytes | str, problem: str) -> ParseError:
        text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
        return ParseError(TOOL, self.source, lineno, text.rstrip("\r\n"), problem)

    # -- one chunk of whole lines ---------------------------------------------------------------
    def feed(self, buf: bytearray, size: int, *, unterminated: bool = False) -> None:
        """Read the lines in ``buf[:size]`` (whole lines; :data:`_PAD` readable bytes follow)."""
        if not size:
            return
        arr = np.frombuffer(buf, np.uint8)
        if self._scratch is None or len(self._scratch) < size:
            self._scratch = np.empty(len(buf), bool)  # reused: a fresh 32 MB each chunk is page faults
        newline = np.equal(arr[:size], 10, out=self._scratch[:size])
        ends = np.flatnonzero(newline)
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        long = np.flatnonzero(ends - starts > MAX_LINE_BYTES)
        if len(long):
            n = self.lines + int(long[0]) + 1
            raise InputFileError(TOOL, self.source, n, f"line {n} is longer than 1 MiB")
        data = memoryview(buf)
        skip = 0
        while self.format is None and skip < len(starts):
            # the first header says which dump this is: lines up to it one by one
            line = bytes(data[starts[skip] : ends[skip]])
            self._line(skip, line)
            skip += 1
        fast, lids, ports = self._fast_entries(arr, starts, ends)
        fast[:skip] = False
        if unterminated and len(fast) and fast[-1]:
            fast[-1] = False  # a last line with no line end may be cut short: read it in full
        slow = np.flatnonzero(~fast)
        fast_at = np.flatnonzero(fast)
        # Walk the other lines in order; between two of them the fast entries belong to the
        # section open at the first.
        prev = skip
        for i in slow[slow >= skip].tolist():
            self._fast_run(fast_at, lids, ports, prev, i, data, starts, ends)
            self._cut = unterminated and i == len(starts) - 1
            self._line(i, bytes(data[starts[i] : ends[i]]))
            prev = i + 1
        self._fast_run(fast_at, lids, ports, prev, len(starts), data, starts, ends)
        self.lines += len(starts)

    def _fast_entries(
        self,
        arr: np.ndarray[Any, np.dtype[np.uint8]],
        starts: np.ndarray[Any, Any],
        ends: np.ndarray[Any, Any],
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """Which lines are entries the tools' own way (``0x%04x %03u...`` or ``0x%04x : %03u ...``),
        with their LID and port. The first bytes of every line are read in one gather."""
        win = as_strided(arr, shape=(len(arr) - _WIDTH, _WIDTH), strides=(1, 1))
        # the first bytes of every line in one gather, then one row per byte position
        m = np.ascontiguousarray(win[starts].T)  # [_WIDTH, lines]
        fast = (m[0] == 48) & (m[1] == 120) & (m[6] == 32)
        h = _hex_digit(m[2:6])
        fast &= (h[0] | h[1] | h[2] | h[3]) < 16
        lids = h[0].astype(np.int32) << 12
        lids |= h[1].astype(np.int32) << 8
        lids |= h[2].astype(np.int32) << 4
        lids |= h[3]
        fdbs = self.format in (OPENSM_FDBS, IBDIAGNET_FDBS)
        at = 9 if fdbs else 7
        d0, d1, d2 = (m[k] - np.uint8(48) for k in range(at, at + 3))
        fast &= np.maximum(np.maximum(d0, d1), d2) < 10
        if not fdbs:
            # ibroute / dump_fts / opensm-lfts.dump: "0x0001 001" then a blank, ":", "#" or the end
            fast &= _BLANK_END[m[10]]
        else:
            # opensm.fdbs / ibdiagnet2.fdbs: "0x0001 : 001  : 01   : yes" (or, where the route is
            # not the shortest, "No 2 hop path possible via port 2!"); a line can only be cut
            # short at the end of the file, and that one is read in full
            fast &= (m[7] == 58) & (m[8] == 32) & (m[12] == 32)
        ports = d0.astype(np.int32) * 100 + d1.astype(np.int32) * 10 + d2
        if self.format is None:
            fast[:] = False  # until the first header says which dump this is
        return fast, lids, ports

    def _fast_run(
        self,
        fast_at: np.ndarray[Any, Any],
        lids: np.ndarray[Any, Any],
        ports: np.ndarray[Any, Any],
        lo: int,
        hi: int,
        data: memoryview,
        starts: np.ndarray[Any, Any],
        ends: np.ndarray[Any, Any],
    ) -> None:
        """Store the fast entries on lines ``lo`` to ``hi`` (exclusive) of this chunk."""
        a, b = np.searchsorted(fast_at, [lo, hi])
        if a == b:
            return
        at = fast_at[a:b]

        def text_of(k: int) -> bytes:
            i = int(at[k])
            return bytes(data[starts[i] : ends[i]])

        if not self.sections:
            raise self._error(self.lines + int(at[0]) + 1, text_of(0), "route entry before any switch header")
        sec = self.sections[-1]
        if sec.closed:
            raise self._error(
                self.lines + int(at[0]) + 1,
                text_of(0),
                f"route entry after the end of switch {sec.guid}'s table (line {sec.header_line}): mixed dumps?",
            )
        self._store(at + (self.lines + 1), lids[at], ports[at], text_of)

    def _store(
        self,
        linenos: np.ndarray[Any, Any],
        lids: np.ndarray[Any, Any],
        ports: np.ndarray[Any, Any],
        text_of: Callable[[int], bytes],
    ) -> None:
        """Check and keep entries of the open table (``text_of(k)``: the k-th entry's line)."""
        sec = self.sections[-1]
        row = len(self.sections) - 1

        def fail(k: int, problem: str) -> ParseError:
            return self._error(int(linenos[k]), text_of(k), problem)

        if int(lids.max()) > MAX_UNICAST_LID:
            k = int(np.flatnonzero(lids > MAX_UNICAST_LID)[0])
            raise fail(k, f"LID {int(lids[k]):#06x} is outside the unicast range 1-0xbfff")
        if int(lids.min()) == 0 and ((lids == 0) & (ports != NO_ROUTE)).any():
            raise fail(
                int(np.flatnonzero((lids == 0) & (ports != NO_ROUTE))[0]),
                "a route for LID 0, which no port has (LIDs are 1-0xbfff)",
            )
        limit = MAX_SWITCH_PORT
        if self.port_counts is not None and sec.guid in self.port_counts:
            limit = self.port_counts[sec.guid]
        over = (ports > limit) & (ports != NO_ROUTE)
        if over.any():
            k = int(np.flatnonzero(over)[0])
            what = (
                f"port {int(ports[k])} is beyond the {limit} ports of switch {sec.guid}"
                if limit != MAX_SWITCH_PORT
                else f"port {int(ports[k])} is not a switch port (1-{MAX_SWITCH_PORT}, 255 for none)"
            )
            raise fail(k, what)
        sec.entries += len(lids)
        self.last_entry = (int(linenos[-1]), text_of(len(lids) - 1))
        if sec.plft:
            return  # a private LFT (ibdiagnet's PLFT_NUM > 0): not the table LIDs are routed by
        if row == 0:
            # the tools name each destination; the first switch's table says it for all
            for k in range(len(lids)):
                if int(lids[k]) not in self.destinations:
                    self._destination(int(lids[k]), text_of(k))
        top = int(lids.max())
        self._grow(row + 1, top + 1)
        self.top = max(self.top, top)
        self.ports[row, lids] = ports

    def _grow(self, rows: int, cols: int) -> None:
        r, c = self.ports.shape
        if rows <= r and cols <= c:
            return
        bigger = np.full(
            (max(r * 2 if rows > r else r, rows), max(c * 2 if cols > c else c, cols)), NO_ROUTE, np.uint8
        )
        bigger[:r, :c] = self.ports
        self.ports = bigger

    # -- the other lines, one at a time ---------------------------------------------------------
    def _line(self, i: int, raw: bytes) -> None:
        lineno = self.lines + i + 1
        if 0 in raw:
            raise InputFileError(TOOL, self.source, lineno, f"binary data (a NUL byte at line {lineno})")
        line = raw.decode("utf-8", "replace").rstrip("\r")
        m = _HEADER.match(line)
        if m:
            rest = m.group(4).rstrip()
            if not rest.endswith(":"):
                raise self._error(lineno, line, "a switch header that does not end in ':': cut short?")
            quoted = rest.lstrip().startswith("('")
            fmt = OPENSM_LFTS if quoted else DUMP_FTS if m.group(2) else IBROUTE
            name = rest.strip()[1:-2] if rest.strip().startswith("(") else ""
            if quoted:
                name = name[1:-1] if len(name) >= 2 else name
            self._open(
                lineno, line, fmt, normalise_guid(m.group(3)), int(m.group(1)) if m.group(1) else None, name
            )
            return
        m = _FDBS_HEADER.match(line)
        if m:
            fmt = IBDIAGNET_FDBS if m.group(1) else OPENSM_FDBS
            self._open(lineno, line, fmt, normalise_guid(m.group(2)), None, "")
            return
        m = _TRAILER.match(line)
        if m:
            self._close(lineno, line, int(m.group(1)), bool(m.group(2)))
            return
        m = _PLFT.match(line)
        if m:
            if not self.sections:
                raise self._error(lineno, line, "a private-table line before any switch header")
            self.sections[-1].plft = int(m.group(1))
            if self.sections[-1].plft:
                self.plft_switches.add(self.sections[-1].guid)
            return
        if line.startswith("0x") or line.startswith("0X"):
            self._slow_entry(lineno, line)
            return
        if _SKIP.match(line):
            return
        raise self._error(lineno, line, "not a forwarding table line")

    def _open(self, lineno: int, line: str, fmt: str, guid: Guid, lid: int | None, name: str) -> None:
        if self.format is None:
            self.format = fmt
        elif _FAMILY.get(fmt, fmt) != _FAMILY.get(self.format, self.format):
            raise self._error(lineno, line, f"a {fmt} header in a {self.format} dump: mixed dumps")
        elif fmt != self.format and {fmt, self.format} == {IBROUTE, DUMP_FTS}:
            self.format = DUMP_FTS  # dump_lfts of some switches by LID, others by directed route
        self._check_closed(lineno)
        family = "fdbs" if fmt in (OPENSM_FDBS, IBDIAGNET_FDBS) else _FAMILY[fmt]
        self.sections.append(_Section(guid, lineno, lid, name, family))

    def _check_closed(self, lineno: int) -> None:
        """The table before ``lineno`` ended with its "lids dumped" line (the forms that have one)."""
        if not self.sections:
            return
        sec = self.sections[-1]
        if sec.family == "fdbs" or sec.closed:
            return
        where = f"before line {lineno}" if lineno else "at the end of the file"
        raise self._error(
            sec.header_line,
            "",
            f"the table of switch {sec.guid} (line {sec.header_line}) has no 'lids dumped' line {where}: cut short?",
        )

    def _close(self, lineno: int, line: str, n: int, valid: bool) -> None:
        if not self.sections:
            raise self._error(lineno, line, "a 'lids dumped' line before any switch header")
        sec = self.sections[-1]
        if sec.family == "fdbs" or sec.closed:
            raise self._error(lineno, line, "a 'lids dumped' line where no table is open: mixed dumps?")
        if valid and n != sec.entries:
            raise self._error(
                lineno,
                line,
                f"switch {sec.guid}'s table lists {sec.entries} LIDs, its last line says {n}: cut short?",
            )
        sec.closed = True

    def _slow_entry(self, lineno: int, line: str) -> None:
        fdbs = self.format in (OPENSM_FDBS, IBDIAGNET_FDBS)
        m = (_ENTRY_FDBS if fdbs else _ENTRY_IBROUTE).match(line)
        if m is None:
            other = (_ENTRY_IBROUTE if fdbs else _ENTRY_FDBS).match(line)
            problem = (
                f"an entry of another dump format than this {self.format} dump: mixed dumps"
                if other and self.format
                else "not a forwarding table line"
            )
            if self.format is None:
                problem = "route entry before any switch header"
            elif self._cut:
                problem = "the last line is cut short (no line end)"
            raise self._error(lineno, line, problem)
        if not self.sections:
            raise self._error(lineno, line, "route entry before any switch header")
        sec = self.sections[-1]
        if sec.closed:
            raise self._error(
                lineno,
                line,
                f"route entry after the end of switch {sec.guid}'s table (line {sec.header_line}): mixed dumps?",
            )
        if len(m.group(1)) > 8:
            raise self._error(lineno, line, "a LID of more than 16 bits")
        lid = int(m.group(1), 16)
        port_text = m.group(2)
        if port_text is not None and len(port_text) > 4:
            raise self._error(
                lineno, line, f"port {port_text[:8]} is not a switch port (1-{MAX_SWITCH_PORT}, 255 for none)"
            )
        port = int(port_text) if port_text is not None else NO_ROUTE
        raw = line.encode()
        self._store(np.array([lineno]), np.array([lid]), np.array([port]), lambda _k: raw)

    def _destination(self, lid: int, raw: bytes) -> None:
        m = _DESTINATION.search(raw.decode("utf-8", "replace"))
        if m:
            self.destinations[lid] = Destination(m.group(1), normalise_guid(m.group(2)), m.group(3))

    # -- the end --------------------------------------------------------------------------------
    def finish(self) -> Lfts:
        if not self.sections:
            raise ParseError(TOOL, self.source, 0, "", "no switch forwarding table found")
        self._check_closed(0)
        entries = sum(s.entries for s in self.sections)
        if not entries:
            raise ParseError(
                TOOL,
                self.source,
                0,
                "",
                f"{len(self.sections)} switch header(s) but no route entry: cut short?",
            )
        if self.format in (OPENSM_FDBS, IBDIAGNET_FDBS) and self.last_entry is not None:
            n, text = self.last_entry  # no trailer to end it: the last entry must be whole
            if not _ENTRY_FDBS.match(text.decode("utf-8", "replace").rstrip("\r\n")):
                raise self._error(n, text, "the last entry is cut short")
        ports = self.ports[: len(self.sections), : self.top + 1]
        keep = self._merge_repeats(ports)
        sections = [self.sections[i] for i in keep]
        ports = (
            np.ascontiguousarray(ports[keep])
            if len(keep) != len(self.sections)
            else np.ascontiguousarray(ports)
        )
        notes: tuple[str, ...] = ()
        if self.plft_switches:
            notes = (f"private LFTs (PLFT_NUM > 0) of {len(self.plft_switches)} switch(es) were not read",)
        assert self.format is not None
        return Lfts(
            self.source,
            self.format,
            tuple(s.guid for s in sections),
            ports,
            tuple(s.lid for s in sections),
            tuple(s.name for s in sections),
            tuple(s.header_line for s in sections),
            self.destinations,
            notes,
        )

    def _merge_repeats(self, ports: np.ndarray[Any, Any]) -> list[int]:
        """Rows to keep: a switch listed again with the same routes is read once; with other
        routes the file holds two dumps (mixed)."""
        first: dict[Guid, int] = {}
        keep: list[int] = []
        for i, sec in enumerate(self.sections):
            j = first.get(sec.guid)
            if j is None:
                first[sec.guid] = i
                keep.append(i)
                continue
            if not np.array_equal(ports[i], ports[j]):
                raise ParseError(
                    TOOL,
                    self.source,
                    sec.header_line,
                    "",
                    f"switch {sec.guid} is listed twice (lines {self.sections[j].header_line} and "
                    f"{sec.header_line}) with different routes: mixed dumps?",
                )
        return keep
