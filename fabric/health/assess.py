"""assess(): counter table + fabric (+ discovery events, + past findings) -> HealthReport.

Heavy lifting is vectorised (deltas, per-port sums, per-link arrays); the per-link Python loop
only turns numbers into records and reasons.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pandas as pd

from fabric.counters.deltas import compute_deltas
from fabric.health.ber import estimate_ber
from fabric.health.flaps import NO_FLAPS, CounterIncrement, LinkEvent, LinkKey, count_flaps
from fabric.health.history import History, PastFinding, day_of
from fabric.health.ports import SCORED, PortTable, port_table
from fabric.health.records import EndHealth, HealthReport, HealthSummary, LinkHealth, NodeHealth
from fabric.health.score import WATCH, LinkFacts, judge
from fabric.health.status import Status
from fabric.health.thresholds import HealthThresholds
from topology.errors import UsageError
from topology.model import Fabric, PortRef

if TYPE_CHECKING:
    from numpy.typing import NDArray

_T = TypeVar("_T", bound=np.generic)
_EMPTY: Mapping[str, int] = MappingProxyType({})
_RX = ("rcv_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors")


def assess(
    frame: pd.DataFrame,
    fabric: Fabric,
    *,
    since: float | None,
    now: float,
    events: Sequence[LinkEvent] = (),
    history: Sequence[PastFinding] = (),
    thresholds: HealthThresholds = HealthThresholds(),  # noqa: B008 (frozen, so sharing is safe)
    deltas: pd.DataFrame | None = None,
) -> HealthReport:
    """Score every link of ``fabric`` over the samples of ``frame`` taken in [since, now].

    ``since=None`` starts the window at the first sample. ``deltas``, if given, is
    ``compute_deltas`` of (a superset of) ``frame``, to avoid computing it twice.
    """
    t = thresholds
    times = frame["time"]
    start = float(times.min()) if since is None and len(frame) else (now if since is None else since)
    if start > now:
        raise UsageError(f"health window starts after it ends (since {start} > now {now})")
    inside = ((times >= start) & (times <= now)).to_numpy(dtype=bool)
    window = frame if inside.all() else frame[inside]
    if deltas is None:
        d = compute_deltas(window)
    else:
        d = deltas[((deltas["prev_time"] >= start) & (deltas["time"] <= now)).to_numpy(dtype=bool)]
    pt = port_table(d, now=now, short_s=t.ber_window_s, long_s=t.ber_window_long_s)
    seconds = now - start

    row_of = {key: i for i, key in enumerate(zip(pt.guids.tolist(), pt.ports.tolist(), strict=True))}
    links = fabric.links
    ia = np.array([row_of.get((lk.a.guid, lk.a.port), -1) for lk in links], dtype=np.int64)
    ib = np.array([row_of.get((lk.b.guid, lk.b.port), -1) for lk in links], dtype=np.int64)
    rate = np.array([lk.gbps for lk in links], dtype=np.float64) * 1e9

    sec_a, sec_b = _at(pt.seconds, ia), _at(pt.seconds, ib)
    seen_a, seen_b = _at(pt.samples, ia) > 0, _at(pt.samples, ib) > 0
    covered = np.where(seen_a & seen_b, np.minimum(sec_a, sec_b), np.where(seen_a, sec_a, sec_b))
    sym = _at(pt.sums["symbol_errors"], ia) + _at(pt.sums["symbol_errors"], ib)
    sym_short = _at(pt.symbol_short, ia) + _at(pt.symbol_short, ib)
    sym_long = _at(pt.symbol_long, ia) + _at(pt.symbol_long, ib)
    any_sum = np.zeros(len(pt) + 1, dtype=bool)
    for name in SCORED:
        any_sum[:-1] |= pt.sums[name] > 0
    any_sum[:-1] |= pt.reset | (pt.link_changes > 0)
    busy = any_sum[ia] | any_sum[ib]  # links with anything to say beyond BER certification
    sym_saturated = pt.saturated.get("symbol_errors", np.zeros(len(pt), dtype=bool))
    lower_bound = _at(sym_saturated | pt.reset, ia, False) | _at(sym_saturated | pt.reset, ib, False)

    downs, recoveries = _increments(pt.flap_rows)
    events_of: dict[LinkKey, list[LinkEvent]] = defaultdict(list)
    for ev in events:
        events_of[ev.link].append(ev)
    past = History.build(history, now=now, lookback_days=t.repeat_lookback_days)
    today = day_of(now)

    results: list[LinkHealth] = []
    for i, lk in enumerate(links):
        a_key, b_key = (lk.a.guid, lk.a.port), (lk.b.guid, lk.b.port)
        both = bool(seen_a[i] and seen_b[i])
        ber = estimate_ber(
            int(sym[i]),
            float(rate[i] * covered[i]),
            t.ber_target,
            t.ber_confidence,
            at_least=bool(lower_bound[i]),
        )
        if not both and ber.certified:
            ber = dataclasses.replace(ber, certified=False)
        link_events = events_of.get(lk.key, [])
        flaps = NO_FLAPS
        if a_key in downs or b_key in downs or a_key in recoveries or b_key in recoveries or link_events:
            flaps = count_flaps(
                (downs.get(a_key, []), downs.get(b_key, [])),
                (recoveries.get(a_key, []), recoveries.get(b_key, [])),
                link_events,
                merge_s=t.flap_merge_s,
                since=start,
                now=now,
            )
        ends = (_end(lk.a, ia[i], pt, float(rate[i]), t), _end(lk.b, ib[i], pt, float(rate[i]), t))
        facts = LinkFacts(
            label=f"{lk.width}x{lk.speed}",
            rate_bps=float(rate[i]),
            seconds=seconds,
            covered_s=float(covered[i]),
            ends_seen=tuple(e.ref for e in ends if e.samples),
            ends_missing=tuple(e.ref for e in ends if not e.samples),
            ber=ber,
            symbol_short=int(sym_short[i]),
            symbol_long=int(sym_long[i]),
            flaps=flaps,
            rx_errors=_nonzero(ends, lambda e: sum(e.counters.get(n, 0) for n in _RX)) if busy[i] else (),
            discards=_nonzero(ends, lambda e: e.counters.get("xmit_discards", 0)) if busy[i] else (),
            congestion=tuple((e.ref, e.congestion) for e in ends if e.congestion),
            saturated=tuple((e.ref, name) for e in ends for name in e.saturated),
            reset=tuple(e.ref for e in ends if e.reset),
            moved=tuple(e.ref for e in ends if e.link_changes),
        )
        findings = judge(facts, t)
        penalty = sum(p for p, _ in findings)
        days = past.link_days(a_key, b_key)
        if Status.of_score(max(0, 100 - penalty)).rank >= Status.WARN.rank:
            days = days | {today}
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
        for idx in (ia[i], ib[i]):
            if idx >= 0 and not np.isnan(pt.first_finding[idx]):
                seen_times += [float(pt.first_finding[idx]), float(pt.last_finding[idx])]
        results.append(
            LinkHealth(
                a=lk.a,
                b=lk.b,
                width=lk.width,
                speed=lk.speed,
                score=score,
                status=Status.of_score(score),
                ber=ber,
                flaps_per_hour=flaps.total * 3600 / seconds if seconds > 0 else 0.0,
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
            )
        )
    results.sort(key=lambda h: (h.score, -h.status.rank, h.key))
    nodes = _nodes(fabric, results, past, today, t)
    link_keys = {lk.key for lk in links}
    ends_on_links = {k for lk in links for k in lk.key}
    summary = HealthSummary(
        since=start,
        now=now,
        snapshots=int(window["snapshot"].nunique()),
        samples=len(window),
        links=len(results),
        links_by_status=_count(h.status for h in results),
        nodes_by_status=_count(n.status for n in nodes),
        links_without_samples=int(np.count_nonzero(~seen_a & ~seen_b)),
        unknown_guids=tuple(sorted({g for g in pt.guids.tolist() if g not in fabric.nodes})),
        ports_not_on_links=tuple(
            sorted(PortRef(g, p) for g, p in row_of if g in fabric.nodes and (g, p) not in ends_on_links)
        ),
        down_links_not_in_fabric=tuple(
            sorted(k for k, evs in events_of.items() if k not in link_keys and _down_at_end(evs, now))
        ),
    )
    return HealthReport(tuple(results), tuple(nodes), summary)


def _at(values: NDArray[_T], idx: NDArray[np.int64], fill: object = 0) -> NDArray[_T]:
    """``values[idx]`` with ``fill`` where idx is -1 (a link end without samples)."""
    padded: NDArray[_T] = np.append(values, np.array([fill], dtype=values.dtype))
    return padded[idx]


def _end(ref: PortRef, idx: int, pt: PortTable, rate: float, t: HealthThresholds) -> EndHealth:
    if idx < 0:
        return EndHealth(ref, 0, 0.0, _EMPTY, None, None, (), False, 0)
    seconds = float(pt.seconds[idx])
    moved = {name: int(v[idx]) for name, v in pt.sums.items() if v[idx]}
    bits = rate * seconds
    wait = moved.get("xmit_wait", 0)
    return EndHealth(
        ref=ref,
        samples=int(pt.samples[idx]),
        seconds=seconds,
        counters=MappingProxyType(moved) if moved else _EMPTY,
        ber=moved.get("symbol_errors", 0) / bits if bits else None,
        congestion=wait * t.xmit_wait_tick_bytes * 8 / bits if bits else None,
        saturated=tuple(name for name, flags in pt.saturated.items() if flags[idx]),
        reset=bool(pt.reset[idx]),
        link_changes=int(pt.link_changes[idx]),
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


def _nonzero(
    ends: tuple[EndHealth, EndHealth], count: Callable[[EndHealth], int]
) -> tuple[tuple[PortRef, int], ...]:
    return tuple((e.ref, n) for e in ends if (n := int(count(e))))


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
    fabric: Fabric, links: list[LinkHealth], past: History, today: int, t: HealthThresholds
) -> list[NodeHealth]:
    by_key = {h.key: h for h in links}
    out: list[NodeHealth] = []
    for guid, node in fabric.nodes.items():
        mine = [by_key[lk.key] for lk in fabric.links_of(guid)]
        worst = max(mine, key=lambda h: (h.status.rank, -h.score), default=None)
        bad = sum(1 for h in mine if h.status.rank >= Status.WARN.rank)
        days = past.node_days.get(guid, set()) | ({today} if bad else set())
        offender = len(days) >= t.repeat_days
        score = min((h.score for h in mine), default=100)
        status = worst.status if worst is not None else Status.OK
        if offender and status is Status.OK:
            status, score = Status.WATCH, min(score, 89)
        out.append(
            NodeHealth(
                guid, node.description, node.kind.value, score, status, len(mine), bad, offender, len(days)
            )
        )
    out.sort(key=lambda n: (n.score, -n.status.rank, n.guid))
    return out


def _count(statuses: Iterable[Status]) -> dict[str, int]:
    counts = dict.fromkeys((s.value for s in Status), 0)
    for s in statuses:
        counts[s.value] += 1
    return counts


def _down_at_end(events: list[LinkEvent], now: float) -> bool:
    past = [e for e in events if e.time <= now]
    return bool(past) and max(past, key=lambda e: e.time).kind == "down"
