"""The lab's simulated traffic backend: ib_write_bw results computed from the lab fabric's state.

ibsim moves management packets only, so no RDMA traffic can run in the lab. This backend stands in
for ``ib_write_bw`` and says so: every result carries ``backend="lab-simulated"``; otherwise the
records are the ones the SSH backend makes from real perftest output, so planning, storing,
re-testing and localization cannot tell them apart.

The model, for one probe of a round (client writes to server along its route):

* each link's data rate is ``width x lane rate`` as the lab trained it (a degraded-width or
  degraded-speed cable counts at its trained rate);
* a link crossed in the same direction by ``n`` probes of the round gives each ``1/n`` of its rate
  (equal shares, not max-min fairness);
* the pair gets the minimum share over its path, times :data:`PERFTEST_EFFICIENCY` (what
  ``ib_write_bw`` at 8 MiB reaches of the line rate on a healthy link);
* a port set to drop ``p`` % of what arrives there (ibsim ``Error`` / ``lab.set_error_rate``; read
  back from the console ``Dump`` with :func:`parse_error_rates`) multiplies the goodput of every
  probe whose data *enters* that port by ``1 - p/100`` (each drop costs a resend);
* ``line_rate_gbps`` is the rate of the client's own cable, what an operator compares against.

>>> parse_error_rates('Switch 64 "spine-01"\\tnodeguid c42a10300a10000\\n'
...                   'c42a10300a10000\\t[1]\\t"leaf"[5]\\t  4x 50G Active/LinkUp\\t# err_rate 30')
{('0x0c42a10300a10000', 1): 30}
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence

from probes.pairs import PairResult, Probe
from topology.model import Fabric, Guid, Link, normalise_guid

BACKEND = "lab-simulated"
PERFTEST_EFFICIENCY = 0.97

_DUMP_NODE = re.compile(r'^(?:Switch|Ca|Router)\s+\d+\s+"[^"]*"\s+nodeguid\s+([0-9A-Fa-f]+)')
_DUMP_PORT = re.compile(r"^[0-9A-Fa-f]+\s+\[(\d+)\].*#\s*err_rate\s+(\d+)")

PortKey = tuple[str, int]
Paths = Mapping[tuple[Guid, Guid], Sequence[Link]]


def parse_error_rates(dump: str) -> dict[PortKey, int]:
    """``{(node GUID, port): drop %}`` for every port the ibsim console ``Dump`` marks ``# err_rate N``."""
    rates: dict[PortKey, int] = {}
    node: str | None = None
    for line in dump.splitlines():
        m = _DUMP_NODE.match(line)
        if m:
            node = normalise_guid(m.group(1))
            continue
        m = _DUMP_PORT.match(line)
        if m and node is not None and int(m.group(2)) > 0:
            rates[(node, int(m.group(1)))] = int(m.group(2))
    return rates


def _hops(path: Sequence[Link], src: Guid) -> list[tuple[Link, PortKey, PortKey]]:
    """(link, port the data leaves by, port it enters by) along the path from ``src``."""
    out: list[tuple[Link, PortKey, PortKey]] = []
    here = src
    for lk in path:
        leave = lk.end(here)
        enter = lk.other(here)
        out.append((lk, (leave.guid, leave.port), (enter.guid, enter.port)))
        here = enter.guid
    return out


def simulate_round(
    fabric: Fabric | None,
    probes: Sequence[Probe],
    paths: Paths,
    error_rates: Mapping[PortKey, int] | None = None,
    attempt: int = 0,
) -> list[PairResult]:
    """Results of the probes of one round run at the same time (see the module docstring).

    Only the routes in ``paths`` are read (``fabric`` may be None, as in a job step on a node).
    """
    rates = error_rates or {}
    routed: dict[int, list[tuple[Link, PortKey, PortKey]]] = {}
    sharing: dict[tuple[PortKey, PortKey], int] = defaultdict(int)
    for i, p in enumerate(probes):
        path = paths.get((p.client.guid, p.server.guid))
        if path:
            routed[i] = _hops(path, p.client.guid)
            for _, leave, enter in routed[i]:
                sharing[(leave, enter)] += 1
    out = []
    for i, p in enumerate(probes):
        hops = routed.get(i)
        if hops is None:
            out.append(
                PairResult(p.client, p.server, p.round, None, None, False, "no route", BACKEND, attempt)
            )
            continue
        line_rate = hops[0][0].gbps
        if line_rate <= 0 or any(lk.gbps <= 0 for lk, _, _ in hops):
            out.append(
                PairResult(
                    p.client, p.server, p.round, None, None, False, "link speed unknown", BACKEND, attempt
                )
            )
            continue
        share = min(lk.gbps / sharing[(leave, enter)] for lk, leave, enter in hops)
        goodput = share * PERFTEST_EFFICIENCY
        for _, _, enter in hops:
            goodput *= 1.0 - rates.get(enter, 0) / 100.0
        if goodput <= 0:
            out.append(
                PairResult(
                    p.client,
                    p.server,
                    p.round,
                    None,
                    line_rate,
                    False,
                    "Completion with error (every packet dropped)",
                    BACKEND,
                    attempt,
                )
            )
            continue
        out.append(
            PairResult(
                p.client, p.server, p.round, round(goodput, 2), line_rate, True, None, BACKEND, attempt
            )
        )
    return out
