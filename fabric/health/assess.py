"""assess(): the store's decoded counter snapshots + fabric (+ discovery events, + past
findings) -> HealthReport.

The snapshots are summed column-wise per port (:mod:`fabric.health.columns`: no counter table is
built), then the per-link Python loop only turns numbers into records and reasons; quiet links
(most of a healthy fabric) take a short cut there. This is the program's one way to health: a
counter table from elsewhere (Prometheus) is cut into the same snapshots first
(:func:`fabric.health.snapshots.frame_snapshots`). The plain reading of the same rules, delta row
by delta row and every link the long way, is the oracle the tests hold it against
(tests/oracles/health.py).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd

from fabric.health.ber import BerEstimate, estimate_ber, poisson_lower, poisson_upper
from fabric.health.columns import ColumnSums
from fabric.health.flaps import NO_FLAPS, CounterIncrement, Flaps, count_flaps
from fabric.health.history import History, PastFinding, day_of
from fabric.health.ports import PortTable
from fabric.health.rates import observed_seconds, per_hour
from fabric.health.records import EndHealth, HealthReport, HealthSummary, LinkHealth, NodeHealth
from fabric.health.score import WATCH, LinkFacts, judge, pending
from fabric.health.status import Status
from fabric.health.thresholds import HealthThresholds
from topology.diff import LinkEvent
from topology.errors import UsageError
from topology.model import Fabric, Guid, Link, LinkKey, PortRef
from topology.wiring import BelowPeers

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from fabric.health.snapshots import Snapshot

_T = TypeVar("_T", bound=np.generic)
_EMPTY: Mapping[str, int] = MappingProxyType({})
_RX = ("rcv_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors")


def assess(
    snapshots: Iterable[Snapshot],
    fabric: Fabric,
    *,
    since: float | None,
    now: float,
    events: Sequence[LinkEvent] = (),
    history: Sequence[PastFinding] = (),
    thresholds: HealthThresholds = HealthThresholds(),  # noqa: B008 (frozen, so sharing is safe)
    below_peers: Mapping[LinkKey, BelowPeers] | None = None,
) -> HealthReport:
    """Score every link of ``fabric`` over the samples of ``snapshots`` taken in [since, now].

    ``snapshots``: (snapshot id, port set, values), in id order, as
    :meth:`Store.load_counter_blocks` gives them (or :func:`~fabric.health.snapshots.frame_snapshots`
    of a counter table); only one is held at a time. ``since=None`` starts the window at the first
    sample. ``below_peers`` (from :func:`topology.wiring.links_below_peers`): cables trained
    narrower or slower than their peers, a finding of their own. Raises
    :class:`~fabric.counters.deltas.OutOfOrder` if a port's samples are not in time order across
    snapshots; :func:`~fabric.health.snapshots.in_time_order` puts such a window in order.
    """
    t = thresholds
    if since is not None and since > now:
        raise UsageError(f"health window starts after it ends (since {since} > now {now})")
    sums = ColumnSums(since=since, now=now, short_s=t.ber_window_s, long_s=t.ber_window_long_s)
    for snapshot_id, ports, values in snapshots:
        sums.add(snapshot_id, ports, values)
    pt = sums.table()
    first = sums.first
    start = since if since is not None else (first if math.isfinite(first) else now)
    if start > now:
        raise UsageError(f"health window starts after it ends (since {start} > now {now})")
    return report(pt, fabric, start, now, len(sums.snapshots), sums.samples, events, history, t, below_peers)


def report(
    pt: PortTable,
    fabric: Fabric,
    start: float,
    now: float,
    snapshots: int,
    samples: int,
    events: Sequence[LinkEvent],
    history: Sequence[PastFinding],
    t: HealthThresholds,
    below_peers: Mapping[LinkKey, BelowPeers] | None = None,
) -> HealthReport:
    """Per-port sums over [start, now] -> links, nodes and summary.

    The records of quiet links (nothing moved, certified, no history: most links of a healthy
    fabric) are built on a short cut, and links and nodes sorted without a key function each;
    the same report as every link by :meth:`LinkScores.record` (tests/oracles/health.py)."""
    scores = LinkScores(pt, fabric, start, now, events, history, t, below_peers)
    results = scores.records()
    keys = scores.keys
    # a status is a function of the score, so (score, -rank, key) orders as (score, key): by key,
    # then stably by score, each sort keyed by a C-level lookup
    order = sorted(range(len(results)), key=keys.__getitem__)
    values = [h.score for h in results]
    order.sort(key=values.__getitem__)
    by_key = dict(zip(keys, results, strict=True))
    nodes = _nodes(fabric, by_key, scores.past, scores.today, t)
    ranked = [results[i] for i in order]
    return HealthReport(tuple(ranked), tuple(nodes), scores.summary(ranked, nodes, snapshots, samples))


class LinkScores:
    """Every link's figures over the window as Python lists (indexing them is far cheaper than
    numpy scalars), and how a link's record is made: :meth:`record`, the rules in full, and
    :meth:`records`, every link's, quiet ones on a short cut that gives what record() gives."""

    def __init__(
        self,
        pt: PortTable,
        fabric: Fabric,
        start: float,
        now: float,
        events: Sequence[LinkEvent],
        history: Sequence[PastFinding],
        t: HealthThresholds,
        below_peers: Mapping[LinkKey, BelowPeers] | None,
    ) -> None:
        self.fabric, self.start, self.now, self.t = fabric, start, now, t
        self.below = below_peers or {}
        self.row_of = {key: i for i, key in enumerate(zip(pt.guids.tolist(), pt.ports.tolist(), strict=True))}
        links = self.links = fabric.links
        row_of = self.row_of
        ia = np.array([row_of.get((lk.a.guid, lk.a.port), -1) for lk in links], dtype=np.int64)
        ib = np.array([row_of.get((lk.b.guid, lk.b.port), -1) for lk in links], dtype=np.int64)
        rate = np.array([lk.gbps for lk in links], dtype=np.float64) * 1e9
        sec_a, sec_b = _at(pt.seconds, ia), _at(pt.seconds, ib)
        seen_a, seen_b = _at(pt.samples, ia) > 0, _at(pt.samples, ib) > 0
        covered = observed_seconds(sec_a, sec_b, seen_a, seen_b)
        sym = _at(pt.sums["symbol_errors"], ia) + _at(pt.sums["symbol_errors"], ib)
        sym_short = _at(pt.symbol_short, ia) + _at(pt.symbol_short, ib)
        sym_long = _at(pt.symbol_long, ia) + _at(pt.symbol_long, ib)
        sym_saturated = pt.saturated.get("symbol_errors", np.zeros(len(pt), dtype=bool))
        lower_bound = _at(sym_saturated | pt.reset, ia, False) | _at(sym_saturated | pt.reset, ib, False)
        self.ends_of = _Ends(pt, t)
        self.without_samples = int(np.count_nonzero(~seen_a & ~seen_b))
        self.seen = (seen_a & seen_b).tolist()
        self.bits = (rate * covered).tolist()
        self.rate, self.covered, self.sym = rate.tolist(), covered.tolist(), sym.tolist()
        self.sym_short, self.sym_long, self.lower_bound = (
            sym_short.tolist(),
            sym_long.tolist(),
            lower_bound.tolist(),
        )
        self.ia, self.ib = ia.tolist(), ib.tolist()
        self.downs, self.recoveries = _increments(pt.flap_rows)
        self.events_of: dict[LinkKey, list[LinkEvent]] = defaultdict(list)
        for ev in events:
            self.events_of[ev.link].append(ev)
        self.past = History.build(history, now=now, lookback_days=t.repeat_lookback_days)
        self.today = day_of(now)
        self.keys = [lk.key for lk in links]
        # Quiet-link candidates: no symbol error, no lower bound, both ends read and unmoved, bits
        # seen. The short cut still checks flaps, events, history, degradation, BER and congestion.
        self.candidate = [False] * len(links)
        if t.repeat_days > 0:
            moved = np.array(self.ends_of.moved, dtype=bool)
            self.candidate = (
                (sym == 0) & ~lower_bound & seen_a & seen_b & (rate * covered > 0) & ~moved[ia] & ~moved[ib]
            ).tolist()

    def records(self) -> list[LinkHealth]:
        """Every link's record, in link order; quiet links on the short cut."""
        t, keys, links, below = self.t, self.keys, self.links, self.below
        candidate, bits_l, rate_l, covered_l = self.candidate, self.bits, self.rate, self.covered
        ia_l, ib_l, ends_of, events_of = self.ia, self.ib, self.ends_of, self.events_of
        flapping = self.downs.keys() | self.recoveries.keys()
        port_days = self.past.port_days
        ok = Status.of_score(100)
        no_error_upper = poisson_upper(0, t.ber_confidence)
        results: list[LinkHealth] = []
        for i, lk in enumerate(links):
            a_key, b_key = keys[i]
            if (
                candidate[i]
                and a_key not in flapping
                and b_key not in flapping
                and keys[i] not in events_of
                and keys[i] not in below
                and a_key not in port_days
                and b_key not in port_days
            ):
                bits = bits_l[i]  # > 0: estimate_ber(0, bits, ...) without the call
                upper = no_error_upper / bits
                ends = (ends_of.end(lk.a, ia_l[i], rate_l[i]), ends_of.end(lk.b, ib_l[i], rate_l[i]))
                ca, cb = ends[0].congestion, ends[1].congestion
                if upper < t.ber_target and max(ca or 0.0, cb or 0.0) < t.congestion_watch:
                    lower = poisson_lower(0, t.ber_confidence) / bits
                    ber = BerEstimate(
                        0, bits, 0 / bits, lower, upper, t.ber_confidence, t.ber_target, True, False
                    )
                    # what record() makes of a quiet link, field for field
                    results.append(
                        LinkHealth(
                            a=lk.a,
                            b=lk.b,
                            width=lk.width,
                            speed=lk.speed,
                            score=100,
                            status=ok,
                            ber=ber,
                            flaps_per_hour=0.0,
                            downs=0,
                            recoveries=0,
                            congestion=cb if ca is None else (ca if cb is None else max(ca, cb)),
                            reasons=(),
                            first_seen=None,
                            last_seen=None,
                            counters=_EMPTY,
                            ends=ends,
                            repeat_offender=False,
                            repeat_days=0,
                            observed_s=covered_l[i],
                            pending=None,
                        )
                    )
                    continue
            results.append(self.record(i))
        return results

    def record(self, i: int) -> LinkHealth:
        """Link ``i``'s record by the rules in full."""
        t, lk = self.t, self.links[i]
        a_key, b_key = self.keys[i]
        downs, recoveries, ends_of, past = self.downs, self.recoveries, self.ends_of, self.past
        ia, ib, rate, covered = self.ia[i], self.ib[i], self.rate[i], self.covered[i]
        ber = estimate_ber(
            self.sym[i], self.bits[i], t.ber_target, t.ber_confidence, at_least=self.lower_bound[i]
        )
        if not self.seen[i] and ber.certified:
            ber = dataclasses.replace(ber, certified=False)
        link_events = self.events_of.get(self.keys[i], [])
        flaps = NO_FLAPS
        if a_key in downs or b_key in downs or a_key in recoveries or b_key in recoveries or link_events:
            flaps = count_flaps(
                (downs.get(a_key, []), downs.get(b_key, [])),
                (recoveries.get(a_key, []), recoveries.get(b_key, [])),
                link_events,
                merge_s=t.flap_merge_s,
                since=self.start,
                now=self.now,
            )
        ends = (ends_of.end(lk.a, ia, rate), ends_of.end(lk.b, ib, rate))
        degraded = self.below.get(self.keys[i])
        quiet = (
            ber.certified
            and degraded is None
            and not ber.errors
            and flaps is NO_FLAPS
            and not ends_of.moved[ia]
            and not ends_of.moved[ib]
            and max(ends[0].congestion or 0.0, ends[1].congestion or 0.0) < t.congestion_watch
        )
        # judge() has nothing to say about a quiet link; skipping it is what keeps 25k links fast
        findings: list[tuple[int, str]] = []
        waiting: str | None = None
        if not quiet:
            seconds = self.now - self.start
            facts = _facts(
                lk, ends, ber, flaps, self.sym_short[i], self.sym_long[i], rate, seconds, covered, degraded
            )
            findings, waiting = judge(facts, t), pending(facts, t)
        penalty = sum(p for p, _ in findings)
        days = past.link_days(a_key, b_key)
        if Status.of_score(max(0, 100 - penalty)).rank >= Status.WARN.rank:
            days = days | {self.today}
        offender = len(days) >= t.repeat_days
        if offender:
            findings.append(
                (
                    WATCH,
                    f"repeat offender: findings on {len(days)} distinct days in the last "
                    f"{t.repeat_lookback_days:g} days",
                )
            )
            penalty += WATCH
        score = max(0, 100 - penalty)
        seen_times = [*flaps.times, *past.link_times(a_key, b_key)]
        for end in ends:
            if end.first_finding is not None and end.last_finding is not None:
                seen_times += [end.first_finding, end.last_finding]
        return LinkHealth(
            a=lk.a,
            b=lk.b,
            width=lk.width,
            speed=lk.speed,
            score=score,
            status=Status.of_score(score),
            ber=ber,
            flaps_per_hour=per_hour(flaps.total, covered),
            downs=flaps.downs,
            recoveries=flaps.recoveries,
            congestion=max((e.congestion for e in ends if e.congestion is not None), default=None),
            reasons=tuple(r for _, r in sorted(findings, key=lambda f: -f[0])),
            first_seen=min(seen_times, default=None),
            last_seen=max(seen_times, default=None),
            counters=_add(ends[0].counters, ends[1].counters),
            ends=ends,
            repeat_offender=offender,
            repeat_days=len(days),
            observed_s=covered,
            pending=waiting,
        )

    def summary(
        self, ranked: Sequence[LinkHealth], nodes: Sequence[NodeHealth], snapshots: int, samples: int
    ) -> HealthSummary:
        return HealthSummary(
            since=self.start,
            now=self.now,
            snapshots=snapshots,
            samples=samples,
            links=len(ranked),
            links_by_status=_count(h.status for h in ranked),
            nodes_by_status=_count(n.status for n in nodes),
            links_without_samples=self.without_samples,
            uncertified=sum(1 for h in ranked if h.pending is not None),
            **_strays(self.fabric, self.keys, self.row_of, self.events_of, self.now),
        )


def _strays(
    fabric: Fabric,
    keys: list[LinkKey],
    row_of: dict[tuple[str, int], int],
    events_of: dict[LinkKey, list[LinkEvent]],
    now: float,
) -> dict[str, Any]:
    """What the counters and events mention that the fabric's links do not: reported, not dropped."""
    link_keys = set(keys)
    ends_on_links = {end for key in keys for end in key}
    return {
        "unknown_guids": tuple(sorted({g for g, _ in row_of if g not in fabric.nodes})),
        "ports_not_on_links": tuple(
            sorted(
                PortRef(Guid(g), p) for g, p in row_of if g in fabric.nodes and (g, p) not in ends_on_links
            )
        ),
        "down_links_not_in_fabric": tuple(
            sorted(k for k, evs in events_of.items() if k not in link_keys and _down_at_end(evs, now))
        ),
    }


def _at(values: NDArray[_T], idx: NDArray[np.int64], fill: object = 0) -> NDArray[_T]:
    """``values[idx]`` with ``fill`` where idx is -1 (a link end without samples)."""
    padded: NDArray[_T] = np.append(values, np.array([fill], dtype=values.dtype))
    return padded[idx]


def _facts(
    lk: Link,
    ends: tuple[EndHealth, EndHealth],
    ber: BerEstimate,
    flaps: Flaps,
    symbol_short: int,
    symbol_long: int,
    rate: float,
    seconds: float,
    covered: float,
    degraded: BelowPeers | None,
) -> LinkFacts:
    return LinkFacts(
        label=f"{lk.width}x{lk.speed}",
        rate_bps=rate,
        seconds=seconds,
        covered_s=covered,
        ends_seen=tuple(e.ref for e in ends if e.samples),
        ends_missing=tuple(e.ref for e in ends if not e.samples),
        ber=ber,
        symbol_short=symbol_short,
        symbol_long=symbol_long,
        flaps=flaps,
        rx_errors=_nonzero(ends, _RX),
        discards=_nonzero(ends, ("xmit_discards",)),
        congestion=tuple((e.ref, e.congestion) for e in ends if e.congestion),
        saturated=tuple((e.ref, name) for e in ends for name in e.saturated),
        reset=tuple(e.ref for e in ends if e.reset),
        moved=tuple(e.ref for e in ends if e.link_changes),
        below_peers=degraded,
    )


class _Ends:
    """Builds EndHealth records from the port table; quiet ports (no error moved) take a short cut."""

    def __init__(self, pt: PortTable, t: HealthThresholds) -> None:
        self.pt = pt
        self.t = t
        moved = pt.reset | (pt.link_changes > 0) | ~np.isnan(pt.first_finding)
        moved |= pt.sums["rcv_remote_physical_errors"] > 0
        for flags in pt.saturated.values():
            moved |= flags
        self.moved = [*moved.tolist(), False]  # index -1: an end without samples
        self.samples = pt.samples.tolist()
        self.seconds = pt.seconds.tolist()
        self.wait = pt.sums["xmit_wait"].tolist()

    def end(self, ref: PortRef, idx: int, rate: float) -> EndHealth:
        if idx < 0:
            return EndHealth(ref, 0, 0.0, _EMPTY, None, None, (), False, 0)
        seconds = self.seconds[idx]
        bits = rate * seconds
        congestion = self.wait[idx] * self.t.xmit_wait_tick_bytes * 8 / bits if bits else None
        if not self.moved[idx]:
            return EndHealth(
                ref, self.samples[idx], seconds, _EMPTY, 0.0 if bits else None, congestion, (), False, 0
            )
        pt = self.pt
        counters = {name: int(v[idx]) for name, v in pt.sums.items() if v[idx] and name != "xmit_wait"}
        first = float(pt.first_finding[idx])
        return EndHealth(
            ref=ref,
            samples=self.samples[idx],
            seconds=seconds,
            counters=MappingProxyType(counters) if counters else _EMPTY,
            ber=counters.get("symbol_errors", 0) / bits if bits else None,
            congestion=congestion,
            saturated=tuple(name for name, flags in pt.saturated.items() if flags[idx]),
            reset=bool(pt.reset[idx]),
            link_changes=int(pt.link_changes[idx]),
            first_finding=None if np.isnan(first) else first,
            last_finding=None if np.isnan(first) else float(pt.last_finding[idx]),
        )


def _increments(
    rows: pd.DataFrame,
) -> tuple[dict[tuple[str, int], list[CounterIncrement]], dict[tuple[str, int], list[CounterIncrement]]]:
    downs: dict[tuple[str, int], list[CounterIncrement]] = defaultdict(list)
    recoveries: dict[tuple[str, int], list[CounterIncrement]] = defaultdict(list)
    for guid, port, start, end, down, rec in rows.itertuples(index=False, name=None):
        if down:
            downs[(guid, port)].append(CounterIncrement(start, end, int(down)))
        if rec:
            recoveries[(guid, port)].append(CounterIncrement(start, end, int(rec)))
    return dict(downs), dict(recoveries)


def _nonzero(ends: tuple[EndHealth, EndHealth], names: tuple[str, ...]) -> tuple[tuple[PortRef, int], ...]:
    """(end, count) for the ends where the counters ``names`` moved."""
    out = []
    for e in ends:
        if e.counters and (n := sum(e.counters.get(name, 0) for name in names)):
            out.append((e.ref, n))
    return tuple(out)


def _add(a: Mapping[str, int], b: Mapping[str, int]) -> Mapping[str, int]:
    if not b:
        return a
    if not a:
        return b
    total = dict(a)
    for name, value in b.items():
        total[name] = total.get(name, 0) + value
    return MappingProxyType(total)


def _nodes(
    fabric: Fabric, by_key: dict[LinkKey, LinkHealth], past: History, today: int, t: HealthThresholds
) -> list[NodeHealth]:
    """Each node's health from its links': a status is a function of a score, so a node's worst
    link is the one with its lowest score, and a node whose links all score 100 has none at warn."""
    out: list[NodeHealth] = []
    score_of = {key: h.score for key, h in by_key.items()}
    no_days: set[int] = set()
    node_days = past.node_days
    for guid, node in fabric.nodes.items():
        scores = [score_of[lk.key] for lk in fabric.links_of(guid)]
        score = min(scores, default=100)
        status = Status.of_score(score)
        bad = 0 if score == 100 else sum(1 for s in scores if Status.of_score(s).rank >= Status.WARN.rank)
        days = node_days.get(guid, no_days) | ({today} if bad else no_days)
        offender = len(days) >= t.repeat_days
        if offender and status is Status.OK:
            status, score = Status.WATCH, min(score, 89)
        out.append(
            NodeHealth(
                guid, node.description, node.kind.value, score, status, len(scores), bad, offender, len(days)
            )
        )
    # (score, -rank, guid) orders as (score, guid): by GUID, then stably by score
    out.sort(key=lambda n: n.guid)
    out.sort(key=lambda n: n.score)
    return out


def _count(statuses: Iterable[Status]) -> dict[str, int]:
    counts = dict.fromkeys((s.value for s in Status), 0)
    for s in statuses:
        counts[s.value] += 1
    return counts


def _down_at_end(events: list[LinkEvent], now: float) -> bool:
    past = [e for e in events if e.time <= now]
    return bool(past) and max(past, key=lambda e: e.time).kind == "down"
