"""SL-to-VL mapping tables of a fabric's ports, and the SL of each host route. Pure.

A packet's virtual lane on a switch-to-switch cable is what the sending switch's SL2VL table maps
its service level to, for the port it came in on and the port it leaves by (IBA 7.6.6; an HCA has
one table for its port). Two forms of the tables are read, each as its tool writes it:

* ``smpquery sl2vl <lid> [<out port>]`` (infiniband-diags; several concatenated): a header
  ``# SL2VL table: Lid 5``, the ``#                 SL: | 0| 1|...|15|`` ruler, then one line per
  in port, ``ports: in  3, out  7: | 0| 1| ...| 7|`` (16 VLs); a switch lists every in port for
  the one out port asked (0 when none is given), an HCA the line ``in 0, out 0``;
* OpenSM's ``opensm-sl2vl.dump`` (written beside ``opensm-lfts.dump`` at ROUTING verbosity when
  QoS is on or the engine sets SL2VL itself): ``Switch 0x0c42..., base LID 1, "desc"`` (or
  ``Channel Adapter``/``Router``), the ``#in out : 0  1 ...`` ruler and a separator, then
  ``3   7   : 0  1  2 ...`` per in and out port (cabled out ports only).

The SL each route uses is not in any table: the SM gives it to whoever asks for a path (dfsssp and
lash answer with the SL of the layer they put the route in, to break cycles). It is read from
``saquery -p`` output (``saquery -p --slid A --dlid B``, concatenated): blocks of
``PathRecord dump:`` with ``dlid``, ``slid`` and ``sl`` fields. dfsssp may answer the same pair
with different SLs (it spreads a layer over spare VLs at random), so every SL a pair is given is
kept.

Bad input is one :class:`ParseError` naming the file, the line and what is wrong: a line that is
no part of a table, an entry before any header, a row of other than 16 VLs (cut short), a VL
above 15, a port above 254 or beyond the switch's port count (when the counts are given), a port
listed twice with other VLs, two forms in one file, a path record cut before its ``sl``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from topology.errors import ParseError

TOOL = "sl2vl"
PATH_TOOL = "path records"
SMPQUERY = "smpquery sl2vl"
OPENSM_SL2VL = "opensm-sl2vl.dump"
MAX_PORT = 254
MAX_VL = 15  # 4 bits; VL15 is the management lane (a data SL mapped to it is dropped)
MAX_SL = 15
MAX_UNICAST_LID = 0xBFFF

_SMP_HEADER = re.compile(r"^# SL2VL table: (.*\S)\s*$")
_SMP_LID = re.compile(r"^Lid (\d+)$")
_SMP_RULER = re.compile(r"^#\s+SL:\s*\|")
_SMP_ROW = re.compile(r"^ports: in\s+(\d+), out\s+(\d+):\s*\|(.*)$")
_OSM_HEADER = re.compile(r'^(Switch|Channel Adapter|Router) (0x[0-9A-Fa-f]+), base LID (\d+), "(.*)"\s*$')
_OSM_ROW = re.compile(r"^(\d+)\s+(\d+)\s+:(.*)$")
_OSM_COMMENT = re.compile(r"^#(in out|-+)")


@dataclass(frozen=True)
class PortTables:
    """One node's SL2VL tables: ``rows[(in, out)]`` is the VL of each SL 0-15 (an HCA: (0, 0))."""

    lid: int
    switch: bool | None  # None: the form does not say (smpquery); the topology does
    rows: Mapping[tuple[int, int], tuple[int, ...]]


@dataclass(frozen=True, eq=False)
class Sl2Vl:
    """Every table row read: ``lid[k]``'s row for in port ``in_port[k]`` and out port
    ``out_port[k]`` maps SL s to VL ``vls[k, s]``."""

    source: str
    format: str
    lid: np.ndarray[Any, Any]  # int32 [K]
    in_port: np.ndarray[Any, Any]  # int16 [K]
    out_port: np.ndarray[Any, Any]  # int16 [K]
    vls: np.ndarray[Any, Any]  # uint8 [K, 16]
    switch_lids: frozenset[int] = frozenset()  # the LIDs the form says are switches (OpenSM's)
    hca_lids: frozenset[int] = frozenset()
    guids: Mapping[int, str] = field(default_factory=dict)  # a switch LID's node GUID (OpenSM's form)

    @cached_property
    def nodes(self) -> dict[int, PortTables]:
        """The rows by LID (a view for people and tests; the checks read the arrays)."""
        out: dict[int, dict[tuple[int, int], tuple[int, ...]]] = {}
        for lid, i, o, row in zip(
            self.lid.tolist(), self.in_port.tolist(), self.out_port.tolist(), self.vls.tolist(), strict=True
        ):
            out.setdefault(lid, {})[(i, o)] = tuple(row)
        return {
            lid: PortTables(
                lid, True if lid in self.switch_lids else False if lid in self.hca_lids else None, rows
            )
            for lid, rows in out.items()
        }

    def vl(self, lid: int, in_port: int, out_port: int, sl: int) -> int | None:
        t = self.nodes.get(lid)
        row = None if t is None else t.rows.get((in_port, out_port))
        return None if row is None else row[sl]

    def entries(self) -> int:
        return len(self.lid)


def no_tables(source: str, fmt: str = SMPQUERY) -> Sl2Vl:
    """No table at all: what a fabric without a switch-to-switch cable has to query (no route
    waits on another switch's buffer there, so no table is needed to judge its lanes)."""
    return Sl2Vl(
        source,
        fmt,
        np.zeros(0, np.int32),
        np.zeros(0, np.int16),
        np.zeros(0, np.int16),
        np.zeros((0, 16), np.uint8),
    )


def _vls(text: str, sep: str, source: str, n: int, line: str) -> tuple[int, ...]:
    cells = [c for c in (x.strip() for x in text.split(sep)) if c]
    if len(cells) != 16:
        raise ParseError(TOOL, source, n, line, f"{len(cells)} VLs where 16 (SL 0-15) are listed: cut short?")
    out = []
    for c in cells:
        if not c.isdigit():
            raise ParseError(TOOL, source, n, line, f"VL {c!r} is not a number")
        v = int(c)
        if v > MAX_VL:
            raise ParseError(TOOL, source, n, line, f"VL {v} out of range (0-{MAX_VL})")
        out.append(v)
    return tuple(out)


@dataclass
class _Node:
    lid: int
    switch: bool | None
    line: int
    guid: str | None = None
    rows: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)


def parse_sl2vl(text: str, source: str = "<sl2vl>", *, port_counts: Mapping[int, int] | None = None) -> Sl2Vl:
    """The tables in ``text`` (either form above). ``port_counts`` (a switch's number of ports by
    its LID, from the topology) refuses a port the switch does not have.

    smpquery's rows are fixed width; a fabric's worth (half a million rows) is decoded as numpy
    columns when every line is a header, the ruler or such a row, each LID's (in, out) listed once
    and in range; anything else is read line by line, which names the line that is wrong."""
    fast = _fast_smpquery(text, source, port_counts)
    if fast is not None:
        return fast
    fmt: str | None = None
    nodes: dict[int, _Node] = {}
    lines: dict[tuple[int, int, int], int] = {}
    here: _Node | None = None
    header_rows = 0  # rows under the current smpquery header (a header with none: cut short)
    header_at = 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line.strip() or line.startswith("ibwarn:") or "sim_connect" in line:
            continue
        m = _SMP_HEADER.match(line)
        if m:
            fmt = _form(fmt, SMPQUERY, source, n, line)
            if here is not None and not header_rows:
                raise ParseError(
                    TOOL, source, header_at, "", "an SL2VL table header without rows: cut short?"
                )
            where = _SMP_LID.match(m.group(1))
            if where is None:
                raise ParseError(
                    TOOL,
                    source,
                    n,
                    line,
                    "tables of a port by directed route cannot be placed: query them by LID",
                )
            here = _node(nodes, int(where.group(1)), None, n, source, line)
            header_rows, header_at = 0, n
            continue
        if _SMP_RULER.match(line):
            if fmt != SMPQUERY or here is None:
                raise ParseError(TOOL, source, n, line, "an SL ruler before any 'SL2VL table' header")
            continue
        m = _SMP_ROW.match(line)
        if m:
            fmt = _form(fmt, SMPQUERY, source, n, line)
            if here is None:
                raise ParseError(TOOL, source, n, line, "a row before any 'SL2VL table' header")
            _row(
                here,
                int(m.group(1)),
                int(m.group(2)),
                _vls(m.group(3), "|", source, n, line),
                n,
                source,
                line,
                lines,
                port_counts,
            )
            header_rows += 1
            continue
        m = _OSM_HEADER.match(line)
        if m:
            fmt = _form(fmt, OPENSM_SL2VL, source, n, line)
            lid = int(m.group(3))
            if lid == 0:  # a port OpenSM gave no LID (down): nothing to place
                here = None
                continue
            here = _node(nodes, lid, m.group(1) == "Switch", n, source, line)
            if m.group(1) == "Switch":  # a switch's port 0 GUID is its node GUID (a CA's is its port's)
                here.guid = here.guid or m.group(2).lower()
            continue
        if _OSM_COMMENT.match(line):
            continue
        m = _OSM_ROW.match(line)
        if m and fmt == OPENSM_SL2VL:
            if here is None:
                continue  # rows of a node without a LID
            _row(
                here,
                int(m.group(1)),
                int(m.group(2)),
                _vls(m.group(3), " ", source, n, line),
                n,
                source,
                line,
                lines,
                port_counts,
            )
            continue
        raise ParseError(
            TOOL, source, n, line, "not part of an SL2VL table (smpquery sl2vl or opensm-sl2vl.dump)"
        )
    if fmt is None:
        raise ParseError(TOOL, source, 0, "", "no SL2VL table found")
    if fmt == SMPQUERY and here is not None and not header_rows:
        raise ParseError(TOOL, source, header_at, "", "an SL2VL table header without rows: cut short?")
    keys = [(x.lid, i, o, vls) for x in nodes.values() for (i, o), vls in x.rows.items()]
    return Sl2Vl(
        source,
        fmt,
        np.array([k[0] for k in keys], np.int32),
        np.array([k[1] for k in keys], np.int16),
        np.array([k[2] for k in keys], np.int16),
        np.array([k[3] for k in keys], np.uint8).reshape(-1, 16),
        frozenset(x.lid for x in nodes.values() if x.switch),
        frozenset(x.lid for x in nodes.values() if x.switch is False),
        {x.lid: x.guid for x in nodes.values() if x.guid is not None},
    )


_ROW_WIDTH = 71  # "ports: in %2d, out %2d: " and "|%2u" x 16 and "|"
_HEAD = "# SL2VL table: Lid "
_RULER = "#                 SL: |"


def _fast_smpquery(text: str, source: str, port_counts: Mapping[int, int] | None) -> Sl2Vl | None:
    if not text.startswith(_HEAD) or "ibwarn" in text or "sim_connect" in text:
        return None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    heads = [k for k, ln in enumerate(lines) if ln.startswith(_HEAD)]
    rulers = text.count("\n" + _RULER)
    row_at = [k for k, ln in enumerate(lines) if ln.startswith("ports: in ")]
    rows = [lines[k] for k in row_at]
    if len(heads) + rulers + len(rows) != len(lines) or not rows:
        return None
    if any(len(r) != _ROW_WIDTH for r in rows):
        return None
    lid_text = [lines[k][len(_HEAD) :] for k in heads]
    if not all(x.isascii() and x.isdigit() for x in lid_text):
        return None
    head_lids = np.array([int(x) for x in lid_text], np.int64)
    at = np.array(row_at, np.int64)
    owner = np.searchsorted(np.array(heads, np.int64), at) - 1
    if (owner < 0).any() or len(np.unique(owner)) != len(heads):
        return None  # a row before any header, or a header without rows
    buf = np.frombuffer("".join(rows).encode("ascii", "replace"), np.uint8).reshape(-1, _ROW_WIDTH)
    for col, want in ((12, b", out "), (20, b": ")):
        if not (buf[:, col : col + len(want)] == np.frombuffer(want, np.uint8)).all():
            return None
    if not (buf[:, 22:_ROW_WIDTH:3] == ord("|")).all():
        return None

    def two(col: int) -> np.ndarray[Any, Any] | None:
        hi, lo = buf[:, col].astype(np.int64), buf[:, col + 1].astype(np.int64)
        ok = ((hi == 32) | ((hi >= 48) & (hi <= 57))) & (lo >= 48) & (lo <= 57)
        return None if not ok.all() else np.where(hi == 32, 0, hi - 48) * 10 + lo - 48

    cols = [two(c) for c in (10, 18, *range(23, _ROW_WIDTH, 3))]
    if any(c is None for c in cols):
        return None
    in_port, out_port = cols[0], cols[1]
    vls = np.stack(cols[2:], axis=1)  # type: ignore[arg-type]
    assert in_port is not None and out_port is not None
    lid = head_lids[owner]
    if (vls > MAX_VL).any() or ((lid < 1) | (lid > MAX_UNICAST_LID)).any():
        return None
    if port_counts is not None:
        top = np.array([port_counts.get(int(x), MAX_PORT) for x in head_lids.tolist()], np.int64)[owner]
        if (in_port > top).any() or (out_port > top).any():
            return None
    keys = np.sort((lid * 256 + in_port) * 256 + out_port)
    if (keys[1:] == keys[:-1]).any():
        return None
    return Sl2Vl(
        source,
        SMPQUERY,
        lid.astype(np.int32),
        in_port.astype(np.int16),
        out_port.astype(np.int16),
        vls.astype(np.uint8),
    )


def _form(fmt: str | None, this: str, source: str, n: int, line: str) -> str:
    if fmt is not None and fmt != this:
        raise ParseError(TOOL, source, n, line, f"{this} text in a file of {fmt} (mixed dumps)")
    return this


def _node(nodes: dict[int, _Node], lid: int, switch: bool | None, n: int, source: str, line: str) -> _Node:
    if not 0 < lid <= MAX_UNICAST_LID:
        raise ParseError(TOOL, source, n, line, f"LID {lid} outside 1-{MAX_UNICAST_LID}")
    node = nodes.get(lid)
    if node is None:
        node = nodes[lid] = _Node(lid, switch, n)
    return node


def _row(
    node: _Node,
    in_port: int,
    out_port: int,
    vls: tuple[int, ...],
    n: int,
    source: str,
    line: str,
    lines: dict[tuple[int, int, int], int],
    port_counts: Mapping[int, int] | None,
) -> None:
    top = MAX_PORT
    if port_counts is not None and node.lid in port_counts:
        top = port_counts[node.lid]
    for what, p in (("in", in_port), ("out", out_port)):
        if p > top:
            raise ParseError(TOOL, source, n, line, f"{what} port {p} beyond LID {node.lid}'s {top} ports")
    old = node.rows.get((in_port, out_port))
    if old is not None and old != vls:
        raise ParseError(
            TOOL,
            source,
            n,
            line,
            f"LID {node.lid} in {in_port} out {out_port} listed at line "
            f"{lines[(node.lid, in_port, out_port)]} with other VLs",
        )
    node.rows[(in_port, out_port)] = vls
    lines.setdefault((node.lid, in_port, out_port), n)


# -- path records ----------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PathSls:
    """The SL the SM gave each path asked for: ``slid[k]`` to ``dlid[k]`` on ``sl[k]``."""

    source: str
    slid: np.ndarray[Any, Any]  # int32 [K]
    dlid: np.ndarray[Any, Any]
    sl: np.ndarray[Any, Any]  # uint8 [K]
    records: int

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "records": self.records, "sls": sorted(set(self.sl.tolist()))}


_PR_START = "PathRecord dump:"
_PR_FIELD = re.compile(
    r"^\s+(\w+)\.{2,}([^.\s]\S*)\s*$"
)  # a value never starts with a dot (a line cut in its dots)


_PR_LINES = 17  # "PathRecord dump:" and its 16 fields, as saquery prints every record


def parse_path_records(text: str | bytes | Iterable[str], source: str = "<path records>") -> PathSls:
    """The (slid, dlid, sl) of every ``PathRecord dump:`` block of ``saquery -p`` output.

    A whole fabric's records (half a million pairs, 300 MB) are read by position when every
    record is whole, as saquery prints it (17 lines, ``dlid`` 5th, ``slid`` 6th, ``sl`` 12th);
    anything else is read line by line, which names the line that is wrong."""
    if isinstance(text, str | bytes):
        fast = _fast_path_records(text.encode("utf-8", "replace") if isinstance(text, str) else text, source)
        if fast is not None:
            return fast
        if isinstance(text, bytes):
            text = text.decode("utf-8-sig", "replace")
    lines = text.splitlines() if isinstance(text, str) else text
    slid: list[int] = []
    dlid: list[int] = []
    sl: list[int] = []
    block: dict[str, tuple[str, int]] | None = None
    block_at = 0
    first_fields = 0  # the fields of the first record: saquery prints every record alike
    last = len(lines) if isinstance(lines, list) else -1

    def close() -> None:
        if block is None:
            return
        missing = [k for k in ("slid", "dlid", "sl") if k not in block]
        if missing:
            raise ParseError(
                PATH_TOOL, source, block_at, "", f"a path record without {', '.join(missing)}: cut short?"
            )
        values = {}
        for k in ("slid", "dlid", "sl"):
            text_value, at = block[k]
            try:
                values[k] = int(text_value, 0)
            except ValueError:
                raise ParseError(PATH_TOOL, source, at, text_value, f"{k} is not a number") from None
        if values["sl"] > MAX_SL:
            raise ParseError(
                PATH_TOOL, source, block["sl"][1], "", f"SL {values['sl']} out of range (0-{MAX_SL})"
            )
        for k in ("slid", "dlid"):
            if not 0 < values[k] <= MAX_UNICAST_LID:
                raise ParseError(
                    PATH_TOOL, source, block[k][1], "", f"{k} {values[k]} outside 1-{MAX_UNICAST_LID}"
                )
        slid.append(values["slid"])
        dlid.append(values["dlid"])
        sl.append(values["sl"])

    for n, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if not line.strip() or line.startswith("ibwarn:") or "sim_connect" in line:
            continue
        if line.strip() == _PR_START:
            close()
            if block is not None and not first_fields:
                first_fields = len(block)
            block, block_at = {}, n
            continue
        m = _PR_FIELD.match(line)
        if m and block is not None:
            block.setdefault(m.group(1), (m.group(2), n))
            continue
        if block is not None and n == last:  # the file ends inside a field
            raise ParseError(PATH_TOOL, source, n, line, "a path record's last line cut short")
        raise ParseError(PATH_TOOL, source, n, line, "not part of a path record (saquery -p output)")
    close()
    if block is not None and first_fields and len(block) < first_fields:  # the file ends inside a record
        raise ParseError(
            PATH_TOOL,
            source,
            block_at,
            "",
            f"the last path record has {len(block)} fields where the first has {first_fields}: cut short?",
        )
    if not slid:
        raise ParseError(PATH_TOOL, source, 0, "", "no path record found")
    return PathSls(
        source,
        np.array(slid, np.int32),
        np.array(dlid, np.int32),
        np.array(sl, np.uint8),
        len(slid),
    )


_PR_VALUE = 26  # "\t\tdlid" and its dots: every value starts here


def _fast_path_records(data: bytes, source: str) -> PathSls | None:
    blocks = data.count(_PR_START.encode())
    if not blocks or not data.endswith(b"\n") or b"ibwarn" in data or b"sim_connect" in data:
        return None
    if data.count(b"\n") != blocks * _PR_LINES or len(data) >= 1 << 31:
        return None
    buf = np.frombuffer(data, np.uint8)
    step = 1 << 25  # line ends found a chunk at a time: no whole-file mask in memory
    ends = np.concatenate(
        [
            np.flatnonzero(buf[c : c + step] == 10).astype(np.int32) + np.int32(c)
            for c in range(0, len(buf), step)
        ]
    )
    starts = np.concatenate([np.zeros(1, np.int32), ends[:-1] + 1])
    head = starts[0::_PR_LINES]
    want = np.frombuffer(_PR_START.encode(), np.uint8)
    if not (
        (ends[0::_PR_LINES] - head == len(want)).all()
        and (buf[head[:, None] + np.arange(len(want))] == want).all()
    ):
        return None
    field = np.ones(len(starts), bool)
    field[0::_PR_LINES] = False
    fs = starts[field]
    if not ((ends[field] - fs > _PR_VALUE).all() and (buf[fs] == 9).all() and (buf[fs + 1] == 9).all()):
        return None
    values = []
    for k, name in ((4, "dlid"), (5, "slid"), (11, "sl")):
        s0, e0 = starts[k::_PR_LINES], ends[k::_PR_LINES]
        label = np.frombuffer(("\t\t" + name).ljust(_PR_VALUE, ".").encode(), np.uint8)
        if not (buf[s0[:, None] + np.arange(_PR_VALUE)] == label).all():
            return None
        values.append(_numbers(buf, s0 + _PR_VALUE, e0, hexa=name == "sl"))
    dlid, slid, sl = values
    if dlid is None or slid is None or sl is None:
        return None
    if (sl > MAX_SL).any() or (
        (slid < 1) | (slid > MAX_UNICAST_LID) | (dlid < 1) | (dlid > MAX_UNICAST_LID)
    ).any():
        return None
    return PathSls(source, slid.astype(np.int32), dlid.astype(np.int32), sl.astype(np.uint8), blocks)


def _numbers(
    buf: np.ndarray[Any, Any], start: np.ndarray[Any, Any], end: np.ndarray[Any, Any], *, hexa: bool
) -> np.ndarray[Any, Any] | None:
    """The numbers written from ``start`` to ``end`` in each line: decimal (up to 5 digits), or
    ``0x`` and one hex digit (an SL); None when any is not."""
    width = end - start
    if hexa:
        if not ((width == 3) & (buf[start] == 48) & (buf[start + 1] == 120)).all():
            return None
        d = buf[start + 2].astype(np.int64)
        v = np.where(d <= 57, d - 48, (d | 32) - 87)
        ok = ((d >= 48) & (d <= 57)) | (((d | 32) >= 97) & ((d | 32) <= 102))
        return v if ok.all() else None
    if not ((width >= 1) & (width <= 5)).all():
        return None
    pos = end[:, None] - 5 + np.arange(5)  # the last 5 bytes; those before the number count 0
    inside = pos >= start[:, None]
    d = buf[np.where(inside, pos, start[:, None])].astype(np.int64) - 48
    if not ((d >= 0) & (d <= 9) | ~inside).all():
        return None
    out: np.ndarray[Any, Any] = (np.where(inside, d, 0) * (10 ** np.arange(4, -1, -1))).sum(axis=1)
    return out
