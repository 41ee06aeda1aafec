"""Port-counter parsers: perfquery, ibqueryerrors, ibdiagnet (.pm and the PM_INFO section of .db_csv).

Pure functions of text. Every parser emits :class:`PortSample` records keyed by the canonical counter
names of :mod:`fabric.core.fields`; fields we do not keep canonically go to ``PortSample.other``.

Strict by default: a line that does not parse raises :class:`ParseError` naming source and line.
Pass a list as ``problems`` and the bad lines are appended there instead, so one garbled line in a
fabric-wide run does not cost the other ports.

>>> s = parse_perfquery("# Port counters: Lid 2 port 5\\nSymbolErrorCounter:....65535\\n", "x")[0]
>>> (s.lid, s.port, s.values["symbol_errors"], sorted(saturated(s)))
(2, 5, 65535, ['symbol_errors'])
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from fabric.core import fields
from fabric.counters import ibqueryerrors as iqe
from fabric.counters.ibdiagnet import parse_pm
from fabric.counters.samples import (
    DATA_COUNTERS,
    SUMMED_PORT,
    PortSample,
    Unreachable,
    canonical_order,
    fail,
    split_lines,
    to_int,
)
from topology.bounds import lid_problem, port_problem
from topology.errors import ParseError
from topology.model import Guid, normalise_guid
from topology.textfile import read_input_text


@dataclass(frozen=True, slots=True)
class LinkInfo:
    """ibqueryerrors ``-r`` link line: the local LID and the far end, when the link is up."""

    lid: int
    peer_guid: Guid | None
    peer_lid: int | None
    peer_port: int | None


@dataclass(frozen=True, slots=True)
class IbqueryerrorsReport:
    """One ibqueryerrors run. ``nodes_checked is None`` means the tool printed no summary."""

    samples: tuple[PortSample, ...]
    sums: tuple[PortSample, ...]
    links: Mapping[tuple[Guid, int], LinkInfo]
    nodes_checked: int | None
    bad_nodes: int | None
    ports_checked: int | None
    ports_with_errors: int | None
    thresholds: Mapping[str, int]
    suppressed: tuple[str, ...]
    unreachable: tuple[Unreachable, ...]
    counters_only: bool

    @property
    def checked_anything(self) -> bool:
        """False for the silent no-SM run (rc 0, nothing printed): that is not a clean fabric."""
        return bool(self.nodes_checked)


_QUOTE = re.compile(r"^(?:>\s?)+")


def _unquote(line: str) -> str:
    """Drop a mail-quote prefix (``> ``) as found in pasted captures."""
    return _QUOTE.sub("", line)


# -- perfquery -----------------------------------------------------------------------------------
_PQ_HEADER = re.compile(
    r"^#\s*(?P<kind>Port extended counters|Port counters|[A-Za-z]+ counters):\s*Lid\s+(?P<lid>\d+)"
    r"\s+port\s+(?P<port>\d+|ALL)\b",  # any digits: lid_problem/port_problem name a bad one
    re.IGNORECASE,
)
_PQ_FIELD = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9_]*):\.*\s*(?P<value>.*)$")
_NOT_COUNTERS = frozenset({"PortSelect", "CounterSelect", "CounterSelect2"})
_FAILURE = iqe.FAILURE


class _Block:
    __slots__ = ("extended", "fields", "lid", "port")

    def __init__(self, lid: int | None, port: int, extended: bool) -> None:
        self.lid = lid
        self.port = port
        self.extended = extended
        self.fields: dict[str, int] = {}


def parse_perfquery(
    text: str | Iterable[str],
    source: str,
    guid: str | None = None,
    port: int | None = None,
    *,
    keep_sums: bool = False,
    problems: list[ParseError] | None = None,
) -> list[PortSample]:
    """Samples from perfquery output (plain, ``-x``, ``-l``, ``-a``, ``-E`` and concatenations).

    Blocks for the same (LID, port) are merged; 64-bit data counters from an extended block win
    over the 32-bit ones of a plain block. Sums over all ports (``-a``, port 255/ALL) are dropped
    unless ``keep_sums``. ``guid``/``port`` name the node and port when the text does not.
    """
    node = normalise_guid(guid) if guid is not None else None
    blocks: list[_Block] = []
    current: _Block | None = None
    skipping = False  # inside a block whose header is out of range
    for lineno, raw in enumerate(split_lines(text), 1):
        line = _unquote(raw).strip()
        if not line:
            continue
        m = _PQ_HEADER.match(line)
        if m:
            problem = lid_problem(m["lid"]) or (m["port"].upper() != "ALL" and port_problem(m["port"]))
            if problem:
                # Lenient (problems given): the block's counters are left out with it.
                fail("perfquery", source, lineno, raw, problem, problems)
                current, skipping = None, True
                continue
            p = SUMMED_PORT if m["port"].upper() == "ALL" else int(m["port"])
            current = _Block(int(m["lid"]), p, m["kind"].lower() == "port extended counters")
            blocks.append(current)
            skipping = False
            continue
        if skipping:
            continue
        if line.startswith("#") or line.startswith("ibwarn:") or _FAILURE.search(line):
            continue  # the pasted command line, or stderr noise; failures are the collector's business
        f = _PQ_FIELD.match(line)
        if not f:
            fail("perfquery", source, lineno, raw, "not a 'Name:....value' line", problems)
            continue
        key, value = f["key"], f["value"].strip()
        if key in _NOT_COUNTERS:
            continue
        try:
            number = to_int(value)
        except ValueError:
            # Lenient (problems given): that counter of that port is unknown, the rest is kept.
            where = f"LID {current.lid} port {current.port}: " if current is not None else ""
            fail("perfquery", source, lineno, raw, f"{where}{key} has no numeric value: unknown", problems)
            continue
        if current is None:
            if port is None:
                fail(
                    "perfquery",
                    source,
                    lineno,
                    raw,
                    "counter before any '# ... Lid N port N' header",
                    problems,
                )
                continue
            current = _Block(None, port, False)
            blocks.append(current)
        current.fields[key] = number
    return _merge_blocks(blocks, node, keep_sums)


def _merge_blocks(blocks: list[_Block], node: Guid | None, keep_sums: bool) -> list[PortSample]:
    merged: dict[tuple[int | None, int], tuple[dict[str, int], dict[str, int], dict[str, int], bool]] = {}
    for b in blocks:
        if b.port == SUMMED_PORT and not keep_sums:
            continue
        base, ext, other, extended = merged.setdefault((b.lid, b.port), ({}, {}, {}, False))
        for key, value in b.fields.items():
            name = fields.BY_PMA_NAME.get(key)
            if name is None:
                other[key] = value
            elif name in DATA_COUNTERS and b.extended:
                ext[name] = value
            else:
                base[name] = value
        merged[(b.lid, b.port)] = (base, ext, other, extended or (b.extended and bool(ext)))
    out = []
    for (lid, p), (base, ext, other, extended) in merged.items():
        values = {**base, **ext} if extended else base
        out.append(
            PortSample(
                guid=node,
                port=p,
                lid=lid,
                values=MappingProxyType(canonical_order(values)),
                extended=extended,
                summed=p == SUMMED_PORT,
                other=MappingProxyType(other),
            )
        )
    return out


# -- ibqueryerrors (the scanner lives in fabric.counters.ibqueryerrors) ----------------------------
def parse_ibqueryerrors(
    text: str | Iterable[str], source: str, *, problems: list[ParseError] | None = None
) -> IbqueryerrorsReport:
    """The ports ibqueryerrors listed, its summary, and its failure lines (stdout and stderr alike).

    In error mode only ports with a counter above threshold are listed (threshold 0 by default),
    so a port that is absent had every error counter at or below threshold. ``--data`` and
    ``--counters`` add data counters; the tool reads them from PortCountersExtended (64-bit).
    """
    return report_from_scan(iqe.scan_ibqueryerrors(text, source, problems))


def report_from_scan(scan: iqe.Scan) -> IbqueryerrorsReport:
    """The public report of a :class:`fabric.counters.ibqueryerrors.Scan`."""

    def sample(acc: iqe.PortAcc) -> PortSample:
        values = iqe.canonical(acc)
        return PortSample(
            acc[iqe.GUID],
            acc[iqe.PORT],
            acc[iqe.LID],
            MappingProxyType(values),
            acc[iqe.DESC],
            iqe.extended(values),
            acc[iqe.SUMMED],
            acc[iqe.KIND],
            None,
            MappingProxyType(acc[iqe.OTHER]),
        )

    summary = scan.summary
    return IbqueryerrorsReport(
        samples=tuple(sample(a) for a in scan.ports if not a[iqe.SUMMED]),
        sums=tuple(sample(a) for a in scan.ports if a[iqe.SUMMED]),
        links=MappingProxyType({key: LinkInfo(*raw) for key, raw in scan.links.items()}),
        nodes_checked=summary.get("nodes"),
        bad_nodes=summary.get("bad_nodes"),
        ports_checked=summary.get("ports"),
        ports_with_errors=summary.get("bad_ports"),
        thresholds=MappingProxyType(scan.thresholds),
        suppressed=scan.suppressed,
        unreachable=tuple(Unreachable(None, None, line) for line in scan.failures),
        counters_only=scan.counters_only,
    )


# -- ibdiagnet (the parser lives in fabric.counters.ibdiagnet) -------------------------------------
def parse_ibdiagnet_pm(
    text: str | Iterable[str], source: str, *, problems: list[ParseError] | None = None
) -> list[PortSample]:
    """Samples from ibdiagnet2.pm, or from the PM_INFO section when given an ibdiagnet2.db_csv.

    ``NA`` values are left out; error counters come from the base attribute and data counters
    from their ``_extended`` 64-bit twins. Any other ibdiagnet file is a ParseError.
    """
    return parse_pm(text, source, problems=problems)


# Saved captures, read bounded (size, line length, binary refused) by topology.textfile.
def read_perfquery(path: str, guid: str | None = None) -> list[PortSample]:
    return parse_perfquery(read_input_text(path, "perfquery"), path, guid)


def read_ibqueryerrors(path: str) -> IbqueryerrorsReport:
    return parse_ibqueryerrors(read_input_text(path, "ibqueryerrors"), path)


def read_ibdiagnet_pm(path: str) -> list[PortSample]:
    return parse_ibdiagnet_pm(read_input_text(path, "ibdiagnet pm"), path)
