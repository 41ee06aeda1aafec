"""What every port-counter parser emits: :class:`PortSample` and :class:`Unreachable`, with the
small readings they share (numbers in decimal or hex, the canonical counter order, parse errors
raised or collected)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fabric.core import fields
from topology.errors import ParseError
from topology.model import Guid

# Counters that exist both as 32-bit PortCounters and 64-bit PortCountersExtended fields.
DATA_COUNTERS: frozenset[str] = frozenset({"xmit_data", "rcv_data", "xmit_pkts", "rcv_pkts"})
SUMMED_PORT = 255


@dataclass(frozen=True, slots=True)
class PortSample:
    """Counters of one port as one tool read them.

    ``guid`` is the node GUID, or ``None`` when the text does not name the node (perfquery by
    LID). ``guid_kind`` is ``"port"`` when the tool printed a port GUID the caller still has to map
    to its node (ibqueryerrors' error report for CAs). ``extended`` is True when the data counters
    came from the 64-bit PortCountersExtended attribute. ``summed`` marks a sum over all ports
    (perfquery ``-a`` / port 255): never a port of its own.
    """

    guid: Guid | None
    port: int
    lid: int | None
    values: Mapping[str, int]
    node_description: str | None = None
    extended: bool = False
    summed: bool = False
    guid_kind: str = "node"
    port_name: str | None = None
    other: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class Unreachable:
    """A port (or, when the tool names none, a node or path) that did not answer."""

    guid: Guid | None
    port: int | None
    reason: str
    lid: int | None = None


def saturated(sample: PortSample) -> frozenset[str]:
    """Counters of ``sample`` sitting at their maximum (sticky: the true count is at least that)."""
    out = set()
    for name, value in sample.values.items():
        limit = fields.max_value(name)
        if name in DATA_COUNTERS and not sample.extended:
            limit = (1 << 32) - 1
        if value >= limit:
            out.add(name)
    return frozenset(out)


# What the tools print: decimal (a minus sign is read, for sound_row to refuse with the port) or
# 0x hex, ASCII only. int() alone would also take "١٢" (any Unicode digit), "1_000" and "+5":
# garbage that must not become a number.
_NUMBER = re.compile(r"-?[0-9]++|0[xX][0-9a-fA-F]++")


def to_int(text: str) -> int:
    """A counter value as the tools print it; ValueError for anything else ("0x", "1e400", "-", a
    value beyond 64 bits: no counter has more)."""
    text = text.strip()
    if not _NUMBER.fullmatch(text) or len(text) > 21:  # 2**64 has 20 digits (16 in hex)
        raise ValueError(f"not a counter value: {text[:40]!r}")
    value = int(text, 16) if text[:2].lower() == "0x" else int(text, 10)
    if not -(1 << 64) < value < 1 << 64:
        raise ValueError(f"not a 64-bit counter value: {text[:40]!r}")
    return value


def fail(
    tool: str, source: str, lineno: int, line: str, problem: str, problems: list[ParseError] | None
) -> None:
    err = ParseError(tool, source, lineno, line, problem)
    if problems is None:
        raise err
    problems.append(err)


def split_lines(text: str | Iterable[str]) -> list[str]:
    return text.splitlines() if isinstance(text, str) else [ln.rstrip("\n") for ln in text]


def canonical_order(values: Mapping[str, int]) -> dict[str, int]:
    return {name: values[name] for name in fields.COUNTER_NAMES if name in values}
