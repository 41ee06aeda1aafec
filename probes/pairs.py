"""The records of a sweep (probe ends, probes, pair results) and the custom pair file. Pure.

Pair file (``ibfab sweep plan --pattern custom FILE``), one pair per line, ``#`` comments::

    # [ROUND] CLIENT SERVER         an end is HOST (all rail-matched HCAs) or HOST:DEVICE
    1 dgx-0001 dgx-0005
    2 dgx-0001:mlx5_0 dgx-0006:mlx5_0

Rounds are 1-based as in ClusterKit's ``-f`` file; give them on every line or on none.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from topology.classify import Classification
from topology.errors import ParseError
from topology.model import Guid


@dataclass(frozen=True, slots=True, order=True)
class Endpoint:
    """One HCA as a probe end: ``dgx-0001:mlx5_3`` on its leaf, with the rail it is matched by."""

    host: str
    device: str
    guid: Guid
    leaf: Guid | None
    rail: int

    @property
    def label(self) -> str:
        return f"{self.host}:{self.device}"


@dataclass(frozen=True, slots=True)
class Probe:
    """``client`` writes to ``server`` in round ``round`` (0-based)."""

    client: Endpoint
    server: Endpoint
    round: int


@dataclass(frozen=True, slots=True)
class PairResult:
    """What one probe measured, whichever backend ran it (``ssh`` or ``lab-simulated``).

    ``attempt`` is 0 for the sweep itself and 1, 2, ... for re-tests of outliers and follow-ups.
    ``expected_gbps`` is what its route should give in its round (:mod:`probes.expect`); a pair
    measured below it is stored with ``ok`` false and says so in ``error``.
    """

    client: Endpoint
    server: Endpoint
    round: int
    gbps: float | None
    line_rate_gbps: float | None
    ok: bool
    error: str | None = None
    backend: str = "ssh"
    attempt: int = 0
    expected_gbps: float | None = None

    @property
    def key(self) -> tuple[Guid, Guid]:
        return (self.client.guid, self.server.guid)


def rail_key(cls: Classification, guid: Guid) -> int:
    """The rail an HCA is matched by: its rail on rail-optimized fabrics, else its HCA index."""
    c = cls.nodes[guid]
    if cls.rail_optimized and c.rail is not None:
        return c.rail
    return c.hca_index if c.hca_index is not None else 0


def parse_pair_file(
    text: str, source: str, eps: Sequence[Endpoint]
) -> list[tuple[int | None, Endpoint, Endpoint]]:
    """(0-based round or None, client, server) per pair; ParseError naming the line on any problem."""
    by_host: dict[str, list[Endpoint]] = defaultdict(list)
    for ep in eps:
        by_host[ep.host].append(ep)
    out: list[tuple[int | None, Endpoint, Endpoint]] = []
    with_round = without_round = 0
    seen: dict[int, dict[Guid, int]] = defaultdict(dict)
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        tokens = line.split()
        rnd: int | None = None
        if len(tokens) == 3:
            if not tokens[0].isdigit() or int(tokens[0]) < 1:
                raise ParseError("pair file", source, lineno, raw, "the round must be a whole number from 1")
            rnd = int(tokens[0]) - 1
            tokens = tokens[1:]
            with_round += 1
        elif len(tokens) == 2:
            without_round += 1
        else:
            raise ParseError("pair file", source, lineno, raw, "expected [ROUND] CLIENT SERVER")
        if with_round and without_round:
            raise ParseError("pair file", source, lineno, raw, "give a round on every line or on none")
        ends = [_resolve(t, by_host, source, lineno, raw) for t in tokens]
        if ends[0][0].host == ends[1][0].host:
            raise ParseError("pair file", source, lineno, raw, "both ends are on the same host")
        if len(ends[0]) == 1 and len(ends[1]) == 1:
            pairs = [(ends[0][0], ends[1][0])]
        else:
            theirs = {ep.rail: ep for ep in ends[1]}
            pairs = [(ep, theirs[ep.rail]) for ep in ends[0] if ep.rail in theirs]
            if not pairs:
                raise ParseError("pair file", source, lineno, raw, "the two ends share no rail")
        for a, b in pairs:
            if rnd is not None:
                for ep in (a, b):
                    if ep.guid in seen[rnd]:
                        raise ParseError(
                            "pair file",
                            source,
                            lineno,
                            raw,
                            f"{ep.label} is already in round {rnd + 1} (line {seen[rnd][ep.guid]})",
                        )
                    seen[rnd][ep.guid] = lineno
            out.append((rnd, a, b))
    if not out:
        raise ParseError("pair file", source, 0, "", "no pairs")
    return out


def _resolve(
    token: str, by_host: dict[str, list[Endpoint]], source: str, lineno: int, raw: str
) -> list[Endpoint]:
    host, _, device = token.partition(":")
    if host not in by_host:
        raise ParseError("pair file", source, lineno, raw, f"no host {host!r} with HCAs in the fabric")
    if not device:
        return by_host[host]
    hit = [ep for ep in by_host[host] if ep.device == device]
    if not hit:
        raise ParseError("pair file", source, lineno, raw, f"host {host} has no HCA {device!r}")
    return hit
