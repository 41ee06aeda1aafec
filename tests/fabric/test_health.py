"""Link health: BER math and certification, flaps, congestion, ranking, repeat offenders, thresholds.

Counter tables are built here row by row and scored the program's way (:func:`assess`: cut into
snapshots, summed column-wise); tests/oracles/health.py reads the same tables the plain way and
the reports are held equal."""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabric.core.fields import COUNTER_NAMES, FRAME_COLUMNS, max_value
from fabric.health import (
    HealthReport,
    HealthThresholds,
    LinkEvent,
    PastFinding,
    Status,
    estimate_ber,
    frame_snapshots,
    poisson_lower,
    poisson_upper,
    thresholds_from_mapping,
)
from fabric.health import assess as assess_snapshots
from fabric.health.flaps import CounterIncrement, merge_ends
from tests.oracles.health import assess_oracle
from topology.errors import UsageError
from topology.model import Fabric, Guid, Lid, Link, Node, NodeKind, PortRef

DAY = 86400.0
NOW = 1_800_000_000.0  # 2027-01-15, well inside one UTC day


def g(n: int) -> Guid:
    return Guid(f"0x{n:016x}")


LEAF, SPINE = g(0x100), g(0x200)
HCAS = [g(0x10 + i) for i in range(4)]


def fabric(speed: str = "HDR", width: int = 4) -> Fabric:
    """Two switches with two cables between them and four HCAs on the leaf."""
    nodes = [
        Node(LEAF, NodeKind.SWITCH, "leaf01", 36, Lid(1)),
        Node(SPINE, NodeKind.SWITCH, "spine01", 36, Lid(2)),
    ]
    nodes += [Node(h, NodeKind.HCA, f"node{i:02d} mlx5_0", 1, Lid(10 + i)) for i, h in enumerate(HCAS)]
    links = [
        Link(PortRef(LEAF, 31), PortRef(SPINE, 1), width, speed),
        Link(PortRef(LEAF, 32), PortRef(SPINE, 2), width, speed),
    ]
    links += [Link(PortRef(h, 1), PortRef(LEAF, i + 1), width, speed) for i, h in enumerate(HCAS)]
    return Fabric.build(nodes, links)


Series = Mapping[str, Sequence[int | None]]


def frame_for(
    fab: Fabric,
    times: Sequence[float],
    counters: Mapping[PortRef, Series] | None = None,
    unreachable: Mapping[PortRef, set[int]] | None = None,
    extra_ports: Sequence[PortRef] = (),
    lag: Mapping[PortRef, float] | None = None,
) -> pd.DataFrame:
    """One sample of every link end at every time; counters are cumulative values (default 0)."""
    counters = counters or {}
    unreachable = unreachable or {}
    lag = lag or {}
    ends: list[tuple[PortRef, PortRef | None]] = [(lk.a, lk.b) for lk in fab.links]
    ends += [(lk.b, lk.a) for lk in fab.links]
    ends += [(ref, None) for ref in extra_ports]
    rows: list[dict[str, Any]] = []
    for s, t in enumerate(times):
        for ref, peer in ends:
            down = s in unreachable.get(ref, set())
            values: dict[str, Any] = dict.fromkeys(COUNTER_NAMES, None if down else 0)
            if not down:
                for name, series in counters.get(ref, {}).items():
                    values[name] = series[s]
            rows.append(
                {
                    "snapshot": s,
                    "time": t + lag.get(ref, 0.0),
                    "guid": ref.guid,
                    "port": ref.port,
                    "lid": 1,
                    "peer_guid": peer.guid if peer else None,
                    "peer_port": peer.port if peer else None,
                    "reachable": not down,
                    **values,
                }
            )
    frame = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
    for name in ("lid", "peer_port", *COUNTER_NAMES):
        frame[name] = frame[name].astype("Int64")
    return frame


def assess(frame: pd.DataFrame, fab: Fabric, **kwargs: Any) -> HealthReport:
    """The program's report of a counter table, checked against the oracle's."""
    report = assess_snapshots(frame_snapshots(frame), fab, **kwargs)
    assert report.to_dict() == assess_oracle(frame, fab, **kwargs).to_dict()
    return report


def link_of(report: Any, a: PortRef) -> Any:
    return next(h for h in report.links if a in (h.a, h.b))


HCA0 = PortRef(HCAS[0], 1)
HCA1 = PortRef(HCAS[1], 1)
HCA2 = PortRef(HCAS[2], 1)
UP1, UP1_FAR = PortRef(LEAF, 31), PortRef(SPINE, 1)
UP2 = PortRef(LEAF, 32)


# -- BER math --------------------------------------------------------------------------------------


def test_poisson_bounds_match_the_chi_square_tables() -> None:
    # one-sided 95%: upper = chi2(0.95, 2k+2)/2, lower = chi2(0.05, 2k)/2
    assert poisson_upper(0, 0.95) == pytest.approx(2.9957, abs=1e-4)
    assert poisson_upper(1, 0.95) == pytest.approx(4.7439, abs=1e-4)
    assert poisson_upper(10, 0.95) == pytest.approx(16.962, abs=1e-3)
    assert poisson_lower(10, 0.95) == pytest.approx(5.4254, abs=1e-3)
    assert poisson_lower(0, 0.95) == 0.0
    # the approximation used above 400 errors joins the exact sums smoothly
    assert poisson_upper(401, 0.95) / poisson_upper(400, 0.95) == pytest.approx(1.0024, abs=5e-4)
    assert poisson_lower(401, 0.95) / poisson_lower(400, 0.95) == pytest.approx(1.0026, abs=5e-4)


def test_ber_of_ten_symbol_errors_in_ten_minutes_on_4x_hdr() -> None:
    t0 = NOW - 600
    fab = fabric("HDR")
    frame = frame_for(fab, [t0, t0 + 300, t0 + 600], {HCA0: {"symbol_errors": [0, 4, 10]}})
    h = link_of(assess(frame, fab, since=t0, now=NOW), HCA0)
    bits = 200e9 * 600  # 4xHDR = 200 Gb/s, one direction (see BerEstimate)
    assert h.ber.bits == pytest.approx(bits)
    assert h.ber.errors == 10
    assert h.ber.value == pytest.approx(10 / bits)  # 8.33e-14
    assert h.ber.upper == pytest.approx(16.962 / bits, rel=1e-4)
    assert h.ber.lower == pytest.approx(5.4254 / bits, rel=1e-4)
    assert not h.ber.certified
    # 12-min budget at 200 Gb/s: 200e9 x 720 x 1e-14 = 1.44 errors; 10 breaks it
    assert h.status is Status.CRITICAL
    assert (
        "symbol errors: 10 in the last 10 min, over the 12 min budget of 1.44 at 4xHDR (BER 1e-14)"
        in h.reasons
    )
    assert any(
        r.startswith("BER 8.3e-14 (95% bounds 4.5e-14..1.4e-13) is above target 1e-14") for r in h.reasons
    )
    a_end = next(e for e in h.ends if e.ref == HCA0)
    assert a_end.counters == {"symbol_errors": 10} and a_end.ber == pytest.approx(10 / bits)
    assert next(e for e in h.ends if e.ref != HCA0).counters == {}


def test_ndr_budget_is_nvidias_2_88_errors_in_12_minutes() -> None:
    t0 = NOW - 720
    fab = fabric("NDR")
    two = frame_for(fab, [t0, NOW], {HCA0: {"symbol_errors": [0, 2]}})
    three = frame_for(fab, [t0, NOW], {HCA0: {"symbol_errors": [0, 3]}})
    assert link_of(assess(two, fab, since=t0, now=NOW), HCA0).status is not Status.CRITICAL
    h = link_of(assess(three, fab, since=t0, now=NOW), HCA0)
    assert h.status is Status.CRITICAL
    assert (
        "symbol errors: 3 in the last 12 min, over the 12 min budget of 2.88 at 4xNDR (BER 1e-14)"
        in h.reasons
    )


def test_errors_of_a_long_interval_count_in_the_long_window_only() -> None:
    fab = fabric("HDR")  # 125-min budget at 200 Gb/s: 200e9 x 7500 x 1e-15 = 1.5 errors
    frame = frame_for(fab, [NOW - 3000, NOW], {HCA0: {"symbol_errors": [0, 3]}})
    h = link_of(assess(frame, fab, since=NOW - 3000, now=NOW), HCA0)
    assert h.status is Status.CRITICAL
    assert (
        "symbol errors: 3 in the last 50 min, over the 125 min budget of 1.50 at 4xHDR (BER 1e-15)"
        in h.reasons
    )
    assert not any("12 min budget" in r for r in h.reasons)  # 3 errors in 50 min cannot be placed in 12


def test_a_clean_link_is_certified_only_after_enough_bits() -> None:
    fab = fabric("HDR")
    # 95% upper bound for 0 errors is 3.0 / bits: 4xHDR needs 3.0 / (200e9 x 1e-14) = 1498 s
    need = poisson_upper(0, 0.95) / (200e9 * 1e-14)
    assert need == pytest.approx(1497.9, abs=0.1)
    short = assess(frame_for(fab, [NOW - 1, NOW]), fab, since=NOW - 1, now=NOW)
    h = link_of(short, HCA0)
    assert not h.ber.certified and h.ber.errors == 0 and not h.certified
    # Not yet certified is a state, not a finding: no points off, no reason, counted apart.
    assert (h.status, h.score, h.reasons) == (Status.OK, 100, ())
    assert h.pending is not None
    assert h.pending.startswith("not yet certified: 0 symbol errors in 1.0 s; 4xHDR needs 25 min")
    assert short.summary.uncertified == len(fab.links)
    long = assess(frame_for(fab, [NOW - 1500, NOW]), fab, since=NOW - 1500, now=NOW)
    h = link_of(long, HCA0)
    assert h.ber.certified and h.status is Status.OK and h.score == 100 and h.reasons == ()
    assert h.certified and long.summary.uncertified == 0
    # just under the window is still not enough
    h = link_of(assess(frame_for(fab, [NOW - 1490, NOW]), fab, since=NOW - 1490, now=NOW), HCA0)
    assert not h.ber.certified


def test_a_link_with_one_silent_end_is_never_certified() -> None:
    fab = fabric("HDR")
    frame = frame_for(fab, [NOW - 7200, NOW - 3600, NOW], unreachable={PortRef(LEAF, 1): {0, 1, 2}})
    h = link_of(assess(frame, fab, since=NOW - 7200, now=NOW), HCA0)
    assert not h.ber.certified and h.status is Status.OK and not h.certified
    assert h.pending is not None and h.pending.startswith("not yet certified (needs both ends)")
    assert f"only {HCA0} answered: the receive direction at {LEAF}/1 is not seen" in h.reasons


def test_saturated_symbol_counter_makes_the_ber_a_lower_bound() -> None:
    top = max_value("symbol_errors")
    fab = fabric("HDR")
    frame = frame_for(fab, [NOW - 600, NOW - 300, NOW], {HCA0: {"symbol_errors": [top - 100, top, top]}})
    h = link_of(assess(frame, fab, since=NOW - 600, now=NOW), HCA0)
    assert h.ber.at_least and h.ber.errors == 100 and h.status is Status.CRITICAL
    assert f"counters saturated (symbol_errors at {HCA0}): counts and BER are lower bounds" in h.reasons


def test_ber_estimate_without_bits_has_no_value() -> None:
    e = estimate_ber(0, 0.0, 1e-14)
    assert e.value is None and e.upper is None and not e.certified


# -- flaps -----------------------------------------------------------------------------------------


def downs_frame(fab: Fabric, gap: float) -> pd.DataFrame:
    """Both ends of UP1 see one LinkDowned increment; the far end's sample is ``gap`` s later."""
    times = [NOW - 3600, NOW - 1800, NOW - 60]
    series = {"link_downed": [0, 1, 1]}
    return frame_for(fab, times, {UP1: series, UP1_FAR: series}, lag={UP1_FAR: gap})


def test_both_ends_link_downed_within_10_s_is_one_flap() -> None:
    fab = fabric()
    h = link_of(assess(downs_frame(fab, 4.0), fab, since=NOW - 3600, now=NOW), UP1)
    # Samples from NOW - 3600 to NOW - 60 on both ends: 59 min observed, whatever the window.
    assert h.downs == 1 and h.flaps_per_hour == pytest.approx(3600 / 3540) and h.observed_s == 3540
    assert h.status is Status.WARN
    assert (
        "link went down 1 time in 59 min of samples (1.02 flaps/h); both ends within 10 s counted once"
        in h.reasons
    )


def test_flaps_per_hour_is_over_the_time_observed_not_the_window_asked_for() -> None:
    fab = fabric()
    frame = downs_frame(fab, 4.0)
    rates = {
        since: link_of(assess(frame, fab, since=NOW - since, now=NOW), UP1).flaps_per_hour
        for since in (3600.0, 6 * 3600.0, DAY, 7 * DAY)
    }
    assert all(r == pytest.approx(3600 / 3540) for r in rates.values()), rates
    # A window that holds fewer samples observes less time: the rate follows what was seen.
    late = link_of(assess(frame, fab, since=NOW - 1800, now=NOW), UP1)
    assert late.observed_s == 1740 and late.flaps_per_hour == pytest.approx(0.0)  # the down was before


def test_a_span_too_short_for_a_rate_gives_the_count_not_a_rate() -> None:
    """Readings 2 s apart (as a lab takes them) with one link-down: 1,800 flaps an hour would be
    a figure nobody saw. The rate is unknown (None, '-' in the table), the reason gives the count
    and the span, the status comes from the count as at any span; a quiet link stays at 0."""
    from fabric.present.health import flaps_text

    fab = fabric()
    series = {"link_downed": [0, 1]}
    frame = frame_for(fab, [NOW - 2, NOW], {UP1: series, UP1_FAR: series}, lag={UP1_FAR: 0.5})
    report = assess(frame, fab, since=NOW - 3600, now=NOW)
    h = link_of(report, UP1)
    assert h.downs == 1 and h.observed_s == 2 and h.flaps_per_hour is None
    assert h.status is Status.WARN
    assert (
        "link went down 1 time in 2.0 s of samples (a rate per hour needs 10 min of samples); "
        "both ends within 10 s counted once" in h.reasons
    )
    assert flaps_text(h.flaps_per_hour) == "-" and h.to_dict()["flaps_per_hour"] is None
    quiet = [lk for lk in report.links if lk.key != h.key]
    assert quiet and all(lk.flaps_per_hour == 0.0 for lk in quiet)


def test_both_ends_link_downed_30_s_apart_is_two_flaps() -> None:
    fab = fabric()
    h = link_of(assess(downs_frame(fab, 30.0), fab, since=NOW - 3600, now=NOW), UP1)
    assert h.downs == 2 and h.flaps_per_hour == pytest.approx(2 * 3600 / 3540)
    assert h.status is Status.CRITICAL


def test_merge_pairs_each_increment_once() -> None:
    a = [CounterIncrement(0, 100, 1), CounterIncrement(100, 200, 2)]
    b = [CounterIncrement(0, 103, 1), CounterIncrement(100, 195, 1), CounterIncrement(200, 300, 1)]
    merged = merge_ends(a, b, 10.0)
    assert [(e.time, e.count) for e in merged] == [(103, 1), (200, 2), (300, 1)]


def test_discovery_events_add_downs_unless_counters_saw_them() -> None:
    fab = fabric()
    link = next(lk for lk in fab.links if lk.a == UP1 or lk.b == UP1)
    frame = downs_frame(fab, 2.0)  # counters: one down between NOW-3600 and NOW-1800
    same = [LinkEvent.of(link, NOW - 2000, "down"), LinkEvent.of(link, NOW - 1990, "up")]
    other = [LinkEvent.of(link, NOW - 600, "down"), LinkEvent.of(link, NOW - 590, "up")]
    assert link_of(assess(frame, fab, since=NOW - 3600, now=NOW, events=same), UP1).downs == 1
    assert link_of(assess(frame, fab, since=NOW - 3600, now=NOW, events=other), UP1).downs == 2


def test_a_link_still_down_is_critical_and_a_vanished_one_is_in_the_summary() -> None:
    fab = fabric()
    link = next(lk for lk in fab.links if HCA2 in (lk.a, lk.b))
    gone = ((str(g(0x999)), 1), (str(LEAF), 20))
    events = [LinkEvent.of(link, NOW - 300, "down"), LinkEvent(NOW - 100, gone, "down")]
    report = assess(frame_for(fab, [NOW - 3600, NOW]), fab, since=NOW - 3600, now=NOW, events=events)
    h = link_of(report, HCA2)
    assert h.status is Status.CRITICAL and h.downs == 1
    assert any(r.startswith("link is down since ") for r in h.reasons)
    assert report.summary.down_links_not_in_fabric == (((str(LEAF), 20), (str(g(0x999)), 1)),)


def test_link_event_kind_is_checked() -> None:
    with pytest.raises(ValueError, match="'down' or 'up'"):
        LinkEvent(NOW, (("0x1", 1), ("0x2", 1)), "flap")


# -- errors and congestion -------------------------------------------------------------------------


def test_congestion_is_xmit_wait_ticks_as_a_share_of_time() -> None:
    fab = fabric("SDR", width=1)  # 2.5 Gb/s keeps the 32-bit XmitWait from saturating
    # 12% of 600 s at 2.5 Gb/s with 8-byte ticks: 0.12 x 2.5e9 x 600 / 64 ticks
    ticks = round(0.12 * 2.5e9 * 600 / 64)
    frame = frame_for(fab, [NOW - 600, NOW - 300, NOW], {HCA1: {"xmit_wait": [0, ticks // 2, ticks]}})
    h = link_of(assess(frame, fab, since=NOW - 600, now=NOW), HCA1)
    assert h.congestion == pytest.approx(0.12, rel=1e-6)
    assert h.status is Status.WARN
    assert f"congestion: {HCA1} waited to send 12% of the time (threshold 10%)" in h.reasons
    # a 32-byte tick (older devices) quadruples the share
    legacy = HealthThresholds(xmit_wait_tick_bytes=32)
    h = link_of(assess(frame, fab, since=NOW - 600, now=NOW, thresholds=legacy), HCA1)
    assert h.congestion == pytest.approx(0.48, rel=1e-6)


def test_receive_errors_and_discards_name_the_end() -> None:
    fab = fabric()
    frame = frame_for(
        fab,
        [NOW - 7200, NOW - 3600, NOW],
        {PortRef(LEAF, 2): {"rcv_errors": [5, 10, 17], "xmit_discards": [0, 50, 150]}},
    )
    h = link_of(assess(frame, fab, since=NOW - 7200, now=NOW), HCA1)
    assert h.status is Status.CRITICAL  # two warn findings add up
    assert f"receive errors: 12 in 2.0 h of samples (12 at {LEAF}/2; threshold 10)" in h.reasons
    assert f"transmit discards: 150 in 2.0 h of samples (150 at {LEAF}/2; threshold 100)" in h.reasons
    assert h.counters == {"rcv_errors": 12, "xmit_discards": 150}


# -- ranking and roll-up ---------------------------------------------------------------------------


def test_injected_bad_links_rank_first_and_clean_ones_are_ok() -> None:
    fab = fabric("HDR")
    times = [NOW - 7200 + 600 * i for i in range(13)]
    zeros = [0] * 13
    counters: dict[PortRef, Series] = {
        UP2: {"symbol_errors": [*zeros[:12], 40]},  # a burst in the last sample: critical
        HCA1: {"rcv_errors": [*zeros[:6], *[20] * 7]},  # warn
        HCA2: {"link_error_recovery": [*zeros[:6], *[2] * 7]},  # watch
    }
    report = assess(frame_for(fab, times, counters), fab, since=times[0], now=NOW)
    top = [(h.a if h.a in counters else h.b, h.status) for h in report.links[:3]]
    assert top == [(UP2, Status.CRITICAL), (HCA1, Status.WARN), (HCA2, Status.WATCH)]
    assert link_of(report, HCA2).reasons == (
        "link retrained (error recovery) 2 times in 2.0 h of samples (1.00 flaps/h); threshold 10",
    )
    for h in report.links[3:]:
        assert (h.status, h.score, h.reasons, h.ber.certified) == (Status.OK, 100, (), True)
    assert report.summary.links_by_status == {"ok": 3, "watch": 1, "warn": 1, "critical": 1}
    assert report.summary.snapshots == 13 and report.summary.samples == 13 * 12
    leaf = next(n for n in report.nodes if n.guid == LEAF)
    assert (leaf.status, leaf.links, leaf.bad_links) == (Status.CRITICAL, 6, 2)
    assert report.nodes[0].status is Status.CRITICAL
    assert next(n for n in report.nodes if n.guid == HCAS[3]).status is Status.OK
    h = link_of(report, HCA1)
    assert (h.first_seen, h.last_seen) == (times[6], times[6])


def test_ports_off_the_fabric_are_reported_not_dropped() -> None:
    fab = fabric()
    stray = [PortRef(LEAF, 20), PortRef(g(0xDEAD), 1)]
    report = assess(frame_for(fab, [NOW - 60, NOW], extra_ports=stray), fab, since=NOW - 60, now=NOW)
    assert report.summary.ports_not_on_links == (PortRef(LEAF, 20),)
    assert report.summary.unknown_guids == (str(g(0xDEAD)),)
    assert report.summary.links_without_samples == 0


def test_json_has_the_cli_keys_and_serialises() -> None:
    fab = fabric()
    report = assess(
        frame_for(fab, [NOW - 600, NOW], {HCA0: {"symbol_errors": [0, 5]}}), fab, since=NOW - 600, now=NOW
    )
    data = json.loads(json.dumps(report.to_dict()))
    assert set(data) == {"links", "nodes", "summary"}
    first = data["links"][0]
    assert {
        "a",
        "b",
        "score",
        "status",
        "ber",
        "flaps_per_hour",
        "reasons",
        "first_seen",
        "last_seen",
    } <= set(first)
    assert first["a"] == {"guid": str(HCAS[0]), "port": 1} and first["status"] == "critical"
    assert first["ber"]["value"] == pytest.approx(5 / (200e9 * 600))
    assert data["summary"]["window"] == {"since": NOW - 600, "now": NOW, "seconds": 600.0}
    assert data["summary"]["links_by_status"]["critical"] == 1


def test_only_the_windows_errors_count() -> None:
    fab = fabric()
    frame = frame_for(fab, [NOW - 1200, NOW - 600, NOW], {HCA0: {"symbol_errors": [0, 1, 3]}})
    assert link_of(assess(frame, fab, since=NOW - 600, now=NOW), HCA0).ber.errors == 2


# -- repeat offenders ------------------------------------------------------------------------------


def test_a_link_bad_on_three_days_is_a_repeat_offender() -> None:
    fab = fabric()
    frame = frame_for(fab, [NOW - 600, NOW], {HCA0: {"symbol_errors": [0, 9]}})
    history = [
        PastFinding(NOW - 2 * DAY, str(HCAS[0]), 1, Status.CRITICAL),
        PastFinding(NOW - 2 * DAY + 60, str(LEAF), 1, Status.WARN),  # same link, other end, same day
        PastFinding(NOW - 5 * DAY, str(LEAF), 1, Status.WARN),
        PastFinding(NOW - 6 * DAY, str(HCAS[0]), 1, Status.WATCH),  # watch does not count
        PastFinding(NOW - 60 * DAY, str(HCAS[0]), 1, Status.CRITICAL),
    ]  # outside 30 days
    report = assess(frame, fab, since=NOW - 600, now=NOW, history=history)
    h = link_of(report, HCA0)
    assert h.repeat_offender and h.repeat_days == 3  # two past days + today
    assert "repeat offender: findings on 3 distinct days in the last 30 days" in h.reasons
    assert h.first_seen == NOW - 5 * DAY and h.last_seen == NOW
    node = next(n for n in report.nodes if n.guid == HCAS[0])
    assert node.repeat_days == 2 and not node.repeat_offender
    # the same history with a clean link today: two days only, not an offender
    clean = frame_for(fab, [NOW - 3600, NOW])
    h = link_of(assess(clean, fab, since=NOW - 3600, now=NOW, history=history), HCA0)
    assert not h.repeat_offender and h.repeat_days == 2 and h.status is Status.OK


def test_a_node_that_keeps_coming_back_is_flagged_even_when_clean_today() -> None:
    fab = fabric()
    history = [PastFinding(NOW - d * DAY, str(HCAS[3])) for d in (1, 3, 8)]
    report = assess(frame_for(fab, [NOW - 3600, NOW]), fab, since=NOW - 3600, now=NOW, history=history)
    node = next(n for n in report.nodes if n.guid == HCAS[3])
    assert node.repeat_offender and node.repeat_days == 3 and node.status is Status.WATCH
    h = link_of(report, PortRef(HCAS[3], 1))
    assert h.status is Status.OK  # node-level findings do not blame a particular cable


# -- thresholds ------------------------------------------------------------------------------------


def test_thresholds_from_a_toml_table() -> None:
    text = "[health]\nber_target = 1e-12\nrepeat_days = 2\ncongestion_warn = 0.2\nflap_critical = 3.0\n"
    t = thresholds_from_mapping(tomllib.loads(text), "ibfab.toml")
    assert (t.ber_target, t.repeat_days, t.congestion_warn, t.flap_critical) == (1e-12, 2, 0.2, 3)
    assert isinstance(t.flap_critical, int)
    assert t.ber_window_s == 720.0  # untouched defaults stay
    assert thresholds_from_mapping({}) == HealthThresholds()


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({"ber_traget": 1e-14}, "unknown health threshold 'ber_traget'"),
        ({"ber_target": "1e-14"}, "must be a number"),
        ({"repeat_days": 2.5}, "whole number"),
        ({"ber_target": 0}, "must be positive"),
        ({"repeat_days": 0}, "must be positive"),
        ({"ber_confidence": 1.5}, "fraction below 1"),
        ({"health": 3}, "must be a table"),
    ],
)
def test_bad_thresholds_are_refused_with_the_key(mapping: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        thresholds_from_mapping(mapping, "ibfab.toml")


def test_looser_thresholds_change_the_verdict() -> None:
    fab = fabric("HDR")
    frame = frame_for(fab, [NOW - 600, NOW], {HCA0: {"symbol_errors": [0, 10]}})
    loose = thresholds_from_mapping({"ber_target": 1e-12, "ber_target_long": 1e-12})
    h = link_of(assess(frame, fab, since=NOW - 600, now=NOW, thresholds=loose), HCA0)
    assert h.status is Status.OK and h.ber.certified


def test_window_that_ends_before_it_starts_is_refused() -> None:
    fab = fabric()
    with pytest.raises(UsageError, match="window starts after it ends"):
        assess(frame_for(fab, [NOW]), fab, since=NOW + 1, now=NOW)


# -- properties ------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 3000),
    st.integers(0, 3000),
    st.sampled_from(["symbol_errors", "rcv_errors", "link_error_recovery", "xmit_discards"]),
)
def test_score_never_improves_with_more_errors(low: int, extra: int, name: str) -> None:
    fab = fabric("HDR")
    scores = []
    for n in (low, low + extra):
        n = min(n, max_value(name))
        frame = frame_for(fab, [NOW - 900, NOW - 450, NOW], {HCA0: {name: [0, n // 2, n]}})
        scores.append(link_of(assess(frame, fab, since=NOW - 900, now=NOW), HCA0).score)
    assert scores[1] <= scores[0]
    assert 0 <= scores[1] <= 100


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(1e9, 1e18))
def test_ber_bounds_bracket_the_estimate(errors: int, bits: float) -> None:
    e = estimate_ber(errors, bits, 1e-14)
    assert e.value is not None and e.lower is not None and e.upper is not None
    assert e.lower <= e.value <= e.upper
    assert e.certified == (e.upper < 1e-14)
    assert math.isfinite(e.upper)


# -- a few snapshots at a time ---------------------------------------------------------------------


def eventful_frame(fab: Fabric) -> pd.DataFrame:
    """Ten snapshots 10 min apart with something on every kind of finding: symbol errors with a
    reset, downs on both ends of a cable, retrains, a saturated counter, receive errors that are
    not read every time, congestion, a silent sample, a port off the fabric and a moved cable."""
    times = [NOW - 5400 + 600 * i for i in range(10)]
    top = max_value("rcv_errors")
    counters: dict[PortRef, Series] = {
        HCA0: {"symbol_errors": [0, 5, 9, 30, 2, 4, 4, 9, 9, 12]},  # cleared after the 4th sample
        UP1: {"link_downed": [0, 0, 1, 1, 1, 2, 2, 2, 2, 2]},
        UP1_FAR: {"link_downed": [0, 0, 1, 1, 1, 1, 1, 2, 2, 2]},
        HCA1: {"rcv_errors": [0, 3, None, None, 40, top - 1, top, top, None, top]},
        HCA2: {"link_error_recovery": [0, 0, 0, 0, 0, 1, 1, 3, 3, 3]},
        UP2: {"xmit_wait": [i * 10**10 for i in range(10)]},
    }
    frame = frame_for(
        fab, times, counters, unreachable={HCA2: {3}}, extra_ports=[PortRef(SPINE, 9)], lag={UP1_FAR: 3.0}
    )
    moved = (frame["guid"] == HCAS[3]) & (frame["snapshot"] >= 6)
    frame.loc[moved, "peer_port"] = 9  # re-cabled to another leaf port
    return frame


@pytest.mark.parametrize("since", [None, NOW - 3000])
def test_every_kind_of_finding_in_one_history(since: float | None) -> None:
    fab = fabric()
    frame = eventful_frame(fab)
    whole = assess(frame, fab, since=since, now=NOW)  # and the oracle's, field for field
    first_sample = NOW - 5400 if since is None else since
    assert whole.summary.since == first_sample
    inside = (frame["time"] >= first_sample) & (frame["time"] <= NOW)  # UP1's far end is 3 s late
    assert whole.summary.samples == int(inside.sum()) == len(frame) - (1 if since is None else 4 * 13 + 1)
    h0 = link_of(whole, HCA0)
    assert h0.ber.errors == (5 + 4 + 21 + 2 + 2 + 0 + 5 + 0 + 3 if since is None else 2 + 0 + 5 + 0 + 3)
    assert h0.ber.at_least == any(e.reset for e in h0.ends) == (since is None)  # the clearing
    assert link_of(whole, UP1).downs == (3 if since is None else 2)  # s2 on both ends once; s5; s7
    assert [e.saturated for e in link_of(whole, HCA1).ends if e.ref == HCA1] == [("rcv_errors",)]
    assert any(e.link_changes for e in link_of(whole, PortRef(HCAS[3], 1)).ends)
    assert whole.summary.ports_not_on_links == (PortRef(SPINE, 9),)


def test_snapshots_out_of_time_order_are_put_in_order() -> None:
    from fabric.counters.deltas import OutOfOrder
    from fabric.health import in_time_order

    fab = fabric()
    frame = eventful_frame(fab)
    frame["snapshot"] = 9 - frame["snapshot"]  # ids run backwards in time
    with pytest.raises(OutOfOrder):
        assess_snapshots(frame_snapshots(frame), fab, since=None, now=NOW)
    ordered = assess_snapshots(in_time_order(frame_snapshots(frame)), fab, since=None, now=NOW)
    assert ordered.to_dict() == assess_oracle(frame, fab, since=None, now=NOW).to_dict()
    assert link_of(ordered, HCA0).counters["symbol_errors"] == 30 + 2 + 10  # up to the reset, after it
    assert ordered.summary.snapshots == 10 and ordered.summary.samples == len(frame) - 1  # one after NOW


def test_a_window_that_ends_before_it_starts_is_refused_and_an_empty_one_has_no_samples() -> None:
    fab = fabric()
    frame = frame_for(fab, [NOW - 60, NOW])
    with pytest.raises(UsageError, match="starts after it ends"):
        assess_snapshots(frame_snapshots(frame), fab, since=NOW + 1, now=NOW)
    with pytest.raises(UsageError, match="starts after it ends"):
        assess_snapshots(frame_snapshots(frame), fab, since=None, now=NOW - 120)
    empty = assess_snapshots([], fab, since=None, now=NOW)
    assert empty.summary.since == NOW and empty.summary.links_without_samples == len(fab.links)


def test_assess_store_reads_the_window_a_few_snapshots_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fabric.app.health.assess as healthsvc
    from fabric.store import Store
    from tests.healthpaths import oracle_of_store
    from tests.tui_data import SNAPSHOT_EVERY_S, T0, build_store, counter_rows

    path, fab, ber_bad, flappy = build_store(tmp_path / "h.db", snapshots=8)
    now = T0 + 7 * SNAPSHOT_EVERY_S + 5
    with Store.open(path) as store:
        loads: list[list[int]] = []
        load = store.load_counter_block_pieces

        def counted(pieces: Sequence[Sequence[int]], *args: Any) -> Any:
            loads.extend(list(p) for p in pieces)
            return load(pieces, *args)

        monkeypatch.setattr(store, "load_counter_block_pieces", counted)
        whole = healthsvc.assess_store(store, since_s=3600, now=now, record=False).report
        assert loads == [list(range(1, 9))]  # 8 snapshots of a small fabric: one piece
        ports = store.list_counter_snapshots()[0].ports
        monkeypatch.setattr(healthsvc, "PIECE_ROWS", 3 * ports)
        loads.clear()
        pieces = healthsvc.assess_store(store, since_s=3600, now=now, record=False).report
        assert loads == [[1, 2, 3], [4, 5, 6], [7, 8]]
        assert pieces.to_dict() == whole.to_dict() == oracle_of_store(store, 3600, now).to_dict()
    assert link_of(pieces, ber_bad.a).status is Status.CRITICAL
    assert link_of(pieces, flappy.b).downs == 7 and pieces.summary.samples == 8 * ports

    # snapshots written out of time order (ids no longer follow time): put in order, same report
    with Store.open(tmp_path / "backwards.db") as store:
        topo = store.save_topology(fab, "-", "ibnetdiscover", "test", taken_at=T0 - 10)
        bad: dict[tuple[str, int], dict[str, int]] = {
            (ber_bad.a.guid, ber_bad.a.port): {"symbol_errors": 4000},
            (flappy.b.guid, flappy.b.port): {"link_downed": 1},
        }
        for i in reversed(range(8)):
            when = T0 + i * SNAPSHOT_EVERY_S
            store.save_counter_snapshot(when, "synthetic", topo, counter_rows(fab, when, i, bad))
        regrouped: list[int] = []
        from fabric.health import in_time_order as in_order

        def counted_order(snapshots: Any) -> Any:
            out = in_order(snapshots)
            regrouped.append(len(out))
            return out

        monkeypatch.setattr(healthsvc, "in_time_order", counted_order)
        backwards = healthsvc.assess_store(store, since_s=3600, now=now, record=False).report
        assert backwards.to_dict() == oracle_of_store(store, 3600, now).to_dict()
    assert regrouped == [8]  # the window put in order: eight readings of each port
    assert backwards.to_dict() == whole.to_dict()


# -- a cable trained below its peers ---------------------------------------------------------------


def test_a_cable_trained_below_its_peers_is_a_finding_and_its_peers_are_not() -> None:
    from fabric.app.health.assess import below_peers

    clean = fabric("HDR")
    assert below_peers(clean) == {}
    links = [Link(lk.a, lk.b, 1, lk.speed) if HCA0 in (lk.a, lk.b) else lk for lk in clean.links]
    fab = Fabric.build(clean.nodes.values(), links)
    below = below_peers(fab)
    assert len(below) == 1
    times = [NOW - 7200, NOW]  # long enough to certify even the 1x link: only the width is wrong
    report = assess(frame_for(fab, times), fab, since=NOW - 7200, now=NOW, below_peers=below)
    h = link_of(report, HCA0)
    assert report.links[0] is h and h.certified
    assert (h.status, h.score) == (Status.WARN, 57)
    assert h.reasons == (
        "trains at 1xHDR (50 Gb/s): 1x where its peers run 4x (200 Gb/s), 75% of its bandwidth lost",
    )
    assert all((lk.status, lk.score, lk.reasons) == (Status.OK, 100, ()) for lk in report.links[1:])
    from fabric.health.score import finding_kind

    assert finding_kind(h.reasons[0]) == "degraded_link"
    # Without discovery's comparison the same counters say nothing: the penalty is the width's.
    plain = link_of(assess(frame_for(fab, times), fab, since=NOW - 7200, now=NOW), HCA0)
    assert (plain.status, plain.score) == (Status.OK, 100)


def test_a_cable_slower_than_its_peers_says_both_speeds() -> None:
    from fabric.app.health.assess import below_peers

    clean = fabric("HDR")
    links = [Link(lk.a, lk.b, lk.width, "EDR") if HCA0 in (lk.a, lk.b) else lk for lk in clean.links]
    fab = Fabric.build(clean.nodes.values(), links)
    times = [NOW - 3600, NOW]
    h = link_of(
        assess(frame_for(fab, times), fab, since=NOW - 3600, now=NOW, below_peers=below_peers(fab)), HCA0
    )
    assert h.status is Status.WARN
    assert h.reasons[0].startswith("trains at 4xEDR (100 Gb/s): EDR where its peers run HDR (200 Gb/s)")
