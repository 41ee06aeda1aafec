"""ibqueryerrors text -> ports, links and summary, fast enough for a 100,000-port fabric.

:func:`fabric.counters.parse.parse_ibqueryerrors` turns a :class:`Scan` into records; the
collector (:mod:`fabric.counters.merge`) reads a Scan's accumulators directly, so a port's
printed counters become ints once, in its store row after both passes are merged.

Why two paths: a line-by-line parser spends ~20 us per port line (regex per line, one ``int``
call per item, dict churn); a 98,304-port ``--counters -r`` pass took ~4 s. Here one compiled
pattern runs over the whole text and hands back each port line (with its ``Link info`` line) as
a tuple of strings, its counters already split into fixed groups in the order the tool prints
them; they stay strings until someone asks (:func:`materialise`, or the merge). Any line that pattern does not take whole
(quoted pastes, odd spacing, an unknown counter, a value that is not decimal, summary and
failure lines) goes through :func:`_generic_line`, the strict line parser, with the same state,
so both paths give the same result; the tests compare them. Text with line breaks other than
``\\n`` (``\\r``, form feed, ...) goes line by line as ``str.splitlines`` cuts it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from fabric.core import fields
from fabric.counters.samples import to_int
from topology.errors import ParseError
from topology.model import Guid, normalise_guid

TOOL = "ibqueryerrors"
SUMMED_PORT = 255
# Data counters ibfab keeps only in PortSample.other, in the order ``--counters`` prints them.
FAST_OTHER: tuple[str, ...] = (
    "PortUnicastXmitPkts",
    "PortUnicastRcvPkts",
    "PortMulticastXmitPkts",
    "PortMulticastRcvPkts",
)
DATA_COUNTERS: frozenset[str] = frozenset({"xmit_data", "rcv_data", "xmit_pkts", "rcv_pkts"})

# An accumulated port is a list (cheaper to make than an object, ~200,000 per collection):
# [guid, port, summed, description, guid_kind, values, other, lid, canonical_order, raw, link]
# A port the whole-text pattern read keeps its counters as printed (``raw``, see RAW_DATA_LEN
# and RAW_ERRORS_LEN) and its link line as printed (``link``: lid, "peer GUID  peer lid  peer
# port" or ''); ``values``/``other`` are None until :func:`materialise` turns them into dicts. The
# collector reads ``raw`` directly, so a port's counters become ints once, straight into its row.
GUID, PORT, SUMMED, DESC, KIND, VALUES, OTHER, LID, ORDERED, RAW, LINK = range(11)
PortAcc = list[Any]
# (lid, peer node GUID, peer lid, peer port)
RawLink = tuple[int, Guid | None, int | None, int | None]


DATA_PMA: tuple[str, ...] = tuple(fields.COUNTERS[n][1] for n in fields.COUNTER_NAMES[13:])
DATA_NAMES: tuple[str, ...] = fields.COUNTER_NAMES[13:]
ERROR_NAMES: tuple[str, ...] = fields.COUNTER_NAMES[:13]  # the 12 error counters and xmit_wait
# raw of a --counters line: the 4 data counters' digits, then the 4 other counters' items as printed
RAW_DATA_LEN = len(DATA_PMA) + 1
# raw of an error line: the items of the 12 error counters as printed ('' when none), then
# PortXmitWait's digits ('' when not printed). Most ports list PortXmitWait alone.
RAW_ERRORS_LEN = 2


# A note in parentheses holds no '[' (as _COUNTER reads it, see there).
def _value(pma: str) -> str:
    return rf"\[{pma} == ([0-9]+)(?: \([^)\n\[]*\)|)\]"


def _item(pma: str) -> str:
    return rf"\[{pma} == [0-9]+(?: \([^)\n\[]*\)|)\]"


# One line shape per pass, as the collector's two argvs print them: ``--counters`` lines carry
# the 8 data counters in this order, error-pass lines any of the error counters in this order.
# A fixed sequence costs the regex engine far less than 21 optional items. Every capture group
# costs on every record (the engine saves and copies the marks at each branch, findall makes a
# string per group), so items the collector does not need one by one are taken as one group
# and split by :data:`_PAIR` when asked for; ``(?:x|)`` is cheaper than ``(?:x)?`` for the same
# reason.
_FAST = re.compile(
    r"^[ \t]*(?:"
    r'(Errors|Data Counters) for[ \t]+(?:(0x[0-9a-fA-F]{1,16})[ \t]+|)"([^\n]*)"[ \t]*'
    r"|GUID[ \t]+(0x[0-9a-fA-F]{1,16})[ \t]+port[ \t]+([0-9]+|ALL)[ \t]*:[ \t]*(?:"
    + " ".join(_value(pma) for pma in DATA_PMA)
    + " ("
    + " ".join(_item(pma) for pma in FAST_OTHER)
    + ")|("
    + "".join(f"(?:{_item(fields.COUNTERS[n][1])}[ \t]*|)" for n in ERROR_NAMES[:-1])
    + ")(?:"
    + _value(fields.COUNTERS[ERROR_NAMES[-1]][1])
    + r"[ \t]*|)"
    + r")[ \t]*"
    r"(?:\n[ \t]*Link info:[ \t]+([0-9]+)[ \t]+[0-9]+\[[^\]\n]*\][ \t]+==\([^\n]*?\)==>[ \t]+"
    # a peer GUID is not blank, so only the other branch has to look for something after the arrow
    r"(?:(0x[0-9a-fA-F]{1,16}[ \t]+[0-9]+[ \t]+[0-9]+)\["
    r"|(?=[^\n]*\S)(?![ \t]*0x[0-9a-fA-F]+[^\S\n]+\d+[^\S\n]+\d+\[))"
    r"[^\n]*|)"
    r")$"
    r"|^([^\n]*)$",
    re.MULTILINE,
)
_D0 = 5  # first data counter group of a _FAST tuple, then the other counters' items
_E0 = _D0 + RAW_DATA_LEN  # the error counters' items, then PortXmitWait
_L0 = _E0 + RAW_ERRORS_LEN  # lid, then the peer (GUID, lid, port)
_REST = _L0 + 2
_PAIR = re.compile(r"\[([A-Za-z0-9_]+) == ([0-9]+)")  # in items the pattern above already took
_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")

# The strict line parser (the reference; the fast pattern only takes lines it would read the same way)
_QUOTE = re.compile(r"^(?:>\s?)+")
_NODE = re.compile(
    r'^(?P<what>Errors|Data Counters) for\s+(?:(?P<guid>0x[0-9a-fA-F]+)\s+)?"(?P<desc>.*)"\s*$'
)
_PORT = re.compile(r"^GUID\s+(?P<guid>0x[0-9a-fA-F]+)\s+port\s+(?P<port>\d+|ALL)\s*:\s*(?P<rest>.*)$")
# The note in parentheses ends before the next item's '[' at the latest: an unclosed '(' does not
# send every item after it to the end of the line (quadratic in the number of items).
_COUNTER = re.compile(r"\[(?P<name>[A-Za-z0-9_]+)\s*==\s*(?P<value>[^\]\s]+)(?:\s*\([^)\[]*\))?\s*\]")
_LINK = re.compile(
    r"^Link info:\s+(?P<lid>\d+)\s+\d+\[[^\]]*\]\s+==\(.*?\)==>\s+"
    r"(?:(?P<pguid>0x[0-9a-fA-F]+)\s+(?P<plid>\d+)\s+(?P<pport>\d+)\[)?"
)
_SUMMARY1 = re.compile(r"^##\s*Summary:\s*(?P<nodes>\d+) nodes checked,\s*(?P<bad>\d+) bad nodes? found")
_SUMMARY2 = re.compile(r"^##\s*(?P<ports>\d+) ports checked,\s*(?P<bad>\d+) ports? have errors")
_THRESH = re.compile(r"\[(?P<name>[A-Za-z0-9_]+)\s*=\s*(?P<value>\d+)\]")
FAILURE = re.compile(r"failed|bad status|timed out|timeout|No SM/SA|iberror|cannot|can't", re.IGNORECASE)


class Scan:
    """What one ibqueryerrors run printed, before it becomes records.

    ``accs`` holds port accumulators (see the index names above) in output order, sums included,
    as read; ``ports`` is the same list with every accumulator materialised; ``links`` maps
    (guid, port) to the link line fields; ``failures`` are the tool's failure lines; ``summary``
    has ``nodes``/``bad_nodes``/``ports``/``bad_ports`` when printed.
    """

    __slots__ = (
        "_links",
        "accs",
        "counters_only",
        "current",
        "desc",
        "failures",
        "node_guid",
        "problems",
        "source",
        "summary",
        "suppressed",
        "thresholds",
    )

    def __init__(self, source: str, problems: list[ParseError] | None) -> None:
        self.source = source
        self.problems = problems
        self.accs: list[PortAcc] = []
        self._links: dict[tuple[Guid, int], RawLink] | None = None
        self.failures: list[str] = []
        self.summary: dict[str, int] = {}
        self.thresholds: dict[str, int] = {}
        self.suppressed: tuple[str, ...] = ()
        self.node_guid: Guid | None = None
        self.desc: str | None = None
        self.counters_only = False
        self.current: PortAcc | None = None

    @property
    def checked_anything(self) -> bool:
        return bool(self.summary.get("nodes"))

    @property
    def ports(self) -> list[PortAcc]:
        """Every accumulator with its counters as dicts (materialised in place)."""
        for acc in self.accs:
            if acc[RAW] is not None:
                materialise(acc)
        return self.accs

    @property
    def links(self) -> dict[tuple[Guid, int], RawLink]:
        """(guid, port) -> (lid, peer GUID, peer lid, peer port) of every port with a link line."""
        if self._links is None:
            guids: dict[str, Guid] = {}
            self._links = {
                (acc[GUID], acc[PORT]): _decode_link(acc[LINK], guids)
                for acc in self.accs
                if acc[LINK] is not None
            }
        return self._links

    def fail(self, lineno: int, line: str, problem: str) -> None:
        err = ParseError(TOOL, self.source, lineno, line, problem)
        if self.problems is None:
            raise err
        self.problems.append(err)


def scan_ibqueryerrors(
    text: str | Iterable[str], source: str, problems: list[ParseError] | None = None
) -> Scan:
    """Read ibqueryerrors output (stdout and stderr alike); strict unless ``problems`` is a list."""
    scan = Scan(source, problems)
    if not isinstance(text, str):
        for lineno, raw in enumerate((ln.rstrip("\n") for ln in text), 1):
            _generic_line(scan, raw, lineno)
        return scan
    odd_breaks = any(c in text for c in "\r\x0b\x0c\x1c\x1d\x1e") or (
        not text.isascii() and _OTHER_BREAKS.search(text) is not None
    )
    if odd_breaks:
        for lineno, raw in enumerate(text.splitlines(), 1):
            _generic_line(scan, raw, lineno)
        return scan
    _fast(scan, text)
    return scan


def _fast(scan: Scan, text: str) -> None:
    accs = scan.accs
    guids: dict[str, Guid] = {}
    node_guid: Guid | None = None
    desc: str | None = None
    counters_only = False
    current: PortAcc | None = None
    lineno = 0
    for rec in _FAST.findall(text):
        lineno += 1
        printed = rec[3]
        if printed:
            if node_guid is None:
                guid = guids.get(printed)
                if guid is None:
                    guid = guids[printed] = normalise_guid(printed)  # at most 16 digits: never fails
                kind = "node" if counters_only else "port"
            else:
                guid, kind = node_guid, "node"
            p = rec[4]
            summed = p == "ALL"
            port = SUMMED_PORT if summed else int(p)
            current = [
                guid,
                port,
                summed,
                desc,
                kind,
                None,
                None,
                None,
                True,
                rec[_D0:_E0] if rec[_D0] else rec[_E0:_L0],
                None,
            ]
            accs.append(current)
            lid = rec[_L0]
            if lid:
                lineno += 1
                current[LID] = int(lid)
                current[LINK] = rec[_L0:_REST]
        elif rec[0]:
            counters_only = counters_only or rec[0] == "Data Counters"
            node_guid = None
            g = rec[1]
            if g:
                node_guid = guids.get(g)
                if node_guid is None:
                    node_guid = guids[g] = normalise_guid(g)
            desc = rec[2]
            current = None
        else:
            raw = rec[_REST]
            if not raw:
                continue
            scan.node_guid, scan.desc, scan.counters_only, scan.current = (
                node_guid,
                desc,
                counters_only,
                current,
            )
            _generic_line(scan, raw, lineno)
            node_guid, desc, counters_only, current = (
                scan.node_guid,
                scan.desc,
                scan.counters_only,
                scan.current,
            )
    scan.node_guid, scan.desc, scan.counters_only, scan.current = node_guid, desc, counters_only, current


def _generic_line(scan: Scan, raw: str, lineno: int) -> None:
    """One line, strictly: the reference behaviour the fast path must match."""
    line = _QUOTE.sub("", raw).strip()
    if not line or line in {"#", "# ibqueryerrors"}:
        return
    m = _NODE.match(line)
    if m:
        scan.counters_only = scan.counters_only or m["what"] == "Data Counters"
        scan.node_guid = None
        if m["guid"]:
            try:
                scan.node_guid = normalise_guid(m["guid"])
            except ValueError:
                scan.fail(lineno, raw, f"{m['guid']} is not a 64-bit GUID")
        scan.desc = m["desc"]
        scan.current = None
        return
    m = _PORT.match(line)
    if m:
        if scan.node_guid is not None:
            guid = scan.node_guid
        else:
            try:
                guid = normalise_guid(m["guid"])
            except ValueError:
                scan.fail(lineno, raw, f"{m['guid']} is not a 64-bit GUID")
                scan.current = None
                return
        summed = m["port"].upper() == "ALL"
        kind = "node" if scan.node_guid is not None or scan.counters_only else "port"
        acc: PortAcc = [
            guid,
            SUMMED_PORT if summed else int(m["port"]),
            summed,
            scan.desc,
            kind,
            {},
            {},
            None,
            True,
            None,
            None,
        ]
        scan.current = acc
        scan.accs.append(acc)
        if not _counters(scan, acc, m["rest"], lineno, raw):
            scan.accs.pop()  # a port line with no readable counter is no reading at all
            scan.current = None
        return
    if line.startswith("[") and scan.current is not None:  # a wrapped continuation of the port line
        _counters(scan, materialise(scan.current), line, lineno, raw)
        return
    m = _LINK.match(line)
    if m:
        if scan.current is None:
            scan.fail(lineno, raw, "link info outside a port")
            return
        acc = scan.current
        acc[LID] = int(m["lid"])
        peer = None
        if m["pguid"]:
            try:
                peer = normalise_guid(m["pguid"])
            except ValueError:
                scan.fail(lineno, raw, f"{m['pguid']} is not a 64-bit GUID")
        acc[LINK] = (
            int(m["lid"]),
            peer,
            int(m["plid"]) if m["plid"] else None,
            int(m["pport"]) if m["pport"] else None,
        )
        return
    if line.startswith("##"):
        s1, s2 = _SUMMARY1.match(line), _SUMMARY2.match(line)
        if s1:
            scan.summary["nodes"], scan.summary["bad_nodes"] = int(s1["nodes"]), int(s1["bad"])
        elif s2:
            scan.summary["ports"], scan.summary["bad_ports"] = int(s2["ports"]), int(s2["bad"])
        elif line.startswith("## Thresholds"):
            scan.thresholds.update({t["name"]: int(t["value"]) for t in _THRESH.finditer(line)})
        elif line.startswith("## Suppressed"):
            scan.suppressed = tuple(line.split(":", 1)[1].replace(",", " ").split())
        return
    if FAILURE.search(line):
        scan.failures.append(line)
        return
    if line.startswith("ibwarn:") or line.startswith("#"):
        return
    scan.fail(lineno, raw, "unrecognised line")


_int = to_int


def _counters(scan: Scan, acc: PortAcc, rest: str, lineno: int, raw: str) -> bool:
    """Add the ``[Name == value]`` items of ``rest``; False when the line held items but none parsed."""
    found = False
    for c in _COUNTER.finditer(rest):
        found = True
        try:
            value = _int(c["value"])
        except ValueError:
            scan.fail(lineno, raw, f"{c['name']} has no numeric value")
            continue
        name = fields.BY_PMA_NAME.get(c["name"])
        if name is None:
            acc[OTHER][c["name"]] = value
        else:
            acc[VALUES][name] = value
            acc[ORDERED] = False
    if "[" in rest and not found:
        scan.fail(lineno, raw, "no '[Counter == N]' item")
        return bool(acc[VALUES] or acc[OTHER])
    return True


def materialise(acc: PortAcc) -> PortAcc:
    """Turn the printed counters of a whole-text read into the ``values``/``other`` dicts (in place)."""
    raw = acc[RAW]
    if raw is not None:
        if len(raw) == RAW_DATA_LEN:
            acc[VALUES] = dict(zip(DATA_NAMES, map(int, raw[:-1]), strict=True))
            acc[OTHER] = {name: int(v) for name, v in _PAIR.findall(raw[-1])}
        else:
            acc[VALUES] = error_values(raw)
            acc[OTHER] = {}
        acc[RAW] = None
    return acc


def pairs(items: str) -> list[tuple[str, str]]:
    """(PMA name, digits) of the items the whole-text pattern took as one group."""
    return _PAIR.findall(items)


def error_values(raw: tuple[str, ...]) -> dict[str, int]:
    """The counters of an error line's raw (see RAW_ERRORS_LEN), in canonical order."""
    items, xmit_wait = raw
    values = {fields.BY_PMA_NAME[name]: int(v) for name, v in _PAIR.findall(items)} if items else {}
    if xmit_wait:
        values[ERROR_NAMES[-1]] = int(xmit_wait)
    return values


def link_of(acc: PortAcc) -> RawLink | None:
    """The port's link line as (lid, peer GUID, peer lid, peer port); None without one."""
    link = acc[LINK]
    return None if link is None else _decode_link(link, {})


def _decode_link(link: tuple[Any, ...], guids: dict[str, Guid]) -> RawLink:
    if len(link) != 2:
        return link  # read line by line: already decoded
    lid, far = link
    if not far:
        return (int(lid), None, None, None)
    pguid, plid, pport = far.split()
    peer = guids.get(pguid)
    if peer is None:
        peer = guids[pguid] = normalise_guid(pguid)  # at most 16 digits: never fails
    return (int(lid), peer, int(plid), int(pport))


def canonical(acc: PortAcc) -> dict[str, int]:
    """The port's counters in fields.COUNTER_NAMES order."""
    values: dict[str, int] = materialise(acc)[VALUES]
    if acc[ORDERED]:
        return values
    return {name: values[name] for name in fields.COUNTER_NAMES if name in values}


def extended(values: dict[str, int]) -> bool:
    """ibqueryerrors reads data counters from PortCountersExtended (64-bit)."""
    return not DATA_COUNTERS.isdisjoint(values)
