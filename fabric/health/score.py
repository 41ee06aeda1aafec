"""From a link's facts over the window to penalties and reasons in an operator's words.

Each finding carries a penalty; score = 100 - sum of penalties (floored at 0), and the status
follows from the score (cut-offs in :mod:`fabric.health.status`). Every penalty grows with its
count, so more errors never give a better score. Bands: critical >= 61, warn 31-60, watch 11-30.

Counts are quoted over the time the link was observed (``covered_s``: first to last sample,
:mod:`fabric.health.rates`), not over the window asked for. A link that has not yet carried the
bits to show its BER under target is *not yet certified*: a state (:func:`pending`), not a
finding, so it costs no points and is not recorded as a finding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fabric.core.units import human_duration, utc_time
from fabric.health.ber import BerEstimate, bits_to_certify
from fabric.health.flaps import Flaps
from fabric.health.rates import MIN_RATE_SPAN_S, per_hour
from fabric.health.thresholds import HealthThresholds
from topology.model import PortRef
from topology.wiring import BelowPeers

CRITICAL = 65
WARN = 35
WATCH = 15
UNCERTIFIED = 12
NOTE = 3


@dataclass(frozen=True, slots=True)
class LinkFacts:
    label: str  # "4xHDR"
    rate_bps: float
    seconds: float  # the assessment window
    covered_s: float  # time observed: both ends (or the one end read) sampled on this cable
    ends_seen: tuple[PortRef, ...]
    ends_missing: tuple[PortRef, ...]
    ber: BerEstimate
    symbol_short: int
    symbol_long: int
    flaps: Flaps
    rx_errors: tuple[tuple[PortRef, int], ...]  # per end, non-zero only
    discards: tuple[tuple[PortRef, int], ...]
    congestion: tuple[tuple[PortRef, float], ...]
    saturated: tuple[tuple[PortRef, str], ...]
    reset: tuple[PortRef, ...]
    moved: tuple[PortRef, ...]  # ends found on another cable or LID during the window
    below_peers: BelowPeers | None = None  # trained narrower or slower than its peers (discovery)


def judge(f: LinkFacts, t: HealthThresholds) -> list[tuple[int, str]]:
    """(penalty, reason) for every finding of one link; the caller sums the penalties."""
    out: list[tuple[int, str]] = []
    out.extend(_ber(f, t))
    out.extend(_flaps(f, t))
    if f.below_peers is not None:
        out.append(_degraded(f.below_peers))
    rx = sum(n for _, n in f.rx_errors)
    if rx:
        pen = WARN if rx >= t.rcv_errors_warn else UNCERTIFIED
        out.append(
            (
                pen,
                f"receive errors: {rx} in {_observed(f)} ({_per_end(f.rx_errors)}; "
                f"threshold {t.rcv_errors_warn})",
            )
        )
    discards = sum(n for _, n in f.discards)
    if discards:
        pen = WARN if discards >= t.xmit_discards_warn else NOTE
        out.append(
            (
                pen,
                f"transmit discards: {discards} in {_observed(f)} ({_per_end(f.discards)}; "
                f"threshold {t.xmit_discards_warn})",
            )
        )
    if f.congestion:
        ref, share = max(f.congestion, key=lambda e: e[1])
        if share >= t.congestion_watch:
            limit = t.congestion_warn if share >= t.congestion_warn else t.congestion_watch
            pen = WARN if share >= t.congestion_warn else WATCH
            out.append(
                (pen, f"congestion: {ref} waited to send {share:.0%} of the time (threshold {limit:.0%})")
            )
    if f.saturated:
        names = ", ".join(f"{name} at {ref}" for ref, name in f.saturated)
        out.append((0, f"counters saturated ({names}): counts and BER are lower bounds"))
    if f.reset:
        out.append(
            (0, f"counters were cleared during the window at {_refs(f.reset)}: counts are lower bounds")
        )
    if f.moved:
        out.append((0, f"{_refs(f.moved)} moved to another cable or LID during the window"))
    return out


def _observed(f: LinkFacts) -> str:
    """``10 min of samples``: the time counts are quoted over."""
    return f"{human_duration(f.covered_s)} of samples"


def _degraded(d: BelowPeers) -> tuple[int, str]:
    """A cable trained below its peers: warn, more the more bandwidth it lost (1x of 4x: 57)."""
    lost = 1.0 - d.link.gbps / d.gbps if d.gbps > 0 else 0.0
    pen = WARN + round(10 * lost)
    return (
        pen,
        f"trains at {d.link.width}x{d.link.speed} ({d.link.gbps:g} Gb/s): {d.problems()} "
        f"({d.gbps:g} Gb/s), {lost:.0%} of its bandwidth lost",
    )


def pending(f: LinkFacts, t: HealthThresholds) -> str | None:
    """Why the link is not yet certified (a state, not a finding); None once it is.

    Certified: both ends sampled and the BER's upper bound under target (enough bits carried).
    """
    if not f.ends_seen:
        return "no counter samples from either end in the window: health unknown"
    b = f.ber
    if b.value is None or b.lower is None or b.upper is None:
        return f"no traffic time measured at {f.label}: BER unknown"
    if b.certified:
        return None
    need_s = bits_to_certify(b.errors, b.target, b.confidence) / f.rate_bps if f.rate_bps else math.inf
    why = "" if len(f.ends_seen) == 2 else " (needs both ends)"
    over = f"{'at least ' if b.at_least else ''}{b.errors} symbol errors in {human_duration(f.covered_s)}"
    return (
        f"not yet certified{why}: {over}; {f.label} needs {human_duration(need_s)} of samples "
        f"to show BER < {b.target:g} at {b.confidence:.0%}"
    )


def _ber(f: LinkFacts, t: HealthThresholds) -> list[tuple[int, str]]:
    if not f.ends_seen:
        return []  # health unknown: pending() says so
    b = f.ber
    out: list[tuple[int, str]] = []
    if f.ends_missing:
        out.append(
            (
                0,
                f"only {_refs(f.ends_seen)} answered: the receive direction at "
                f"{_refs(f.ends_missing)} is not seen",
            )
        )
    for count, window_s, target in (
        (f.symbol_short, t.ber_window_s, t.ber_target),
        (f.symbol_long, t.ber_window_long_s, t.ber_target_long),
    ):
        budget = f.rate_bps * window_s * target
        if count > budget:
            out.append(
                (
                    CRITICAL,
                    f"symbol errors: {count} in the last {human_duration(min(window_s, f.covered_s))}, over the "
                    f"{window_s / 60:g} min budget of "
                    f"{budget:.2f} at {f.label} (BER {target:g})",
                )
            )
    if b.value is None or b.lower is None or b.upper is None:
        return out  # BER unknown: pending() says so
    if b.certified and not b.errors:
        return out  # the common case: a clean, certified link has nothing to say
    bounds = f"{b.confidence:.0%} bounds {b.lower:.2g}..{b.upper:.2g}"
    over = f"{'at least ' if b.at_least else ''}{b.errors} symbol errors in {human_duration(f.covered_s)}"
    if b.lower > b.target:
        pen = WARN + min(20, round(10 * math.log10(b.lower / b.target)))
        out.append((pen, f"BER {b.value:.2g} ({bounds}) is above target {b.target:g}: {over} at {f.label}"))
    elif b.value > b.target:
        out.append(
            (
                WATCH + 5,
                f"BER {b.value:.2g} ({bounds}) is above target {b.target:g} but not yet "
                f"significant: {over} at {f.label}",
            )
        )
    elif b.certified and b.errors:
        out.append((NOTE, f"BER {b.value:.2g} within target {b.target:g}: {over}"))
    return out


def _flaps(f: LinkFacts, t: HealthThresholds) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    fl = f.flaps
    hourly = per_hour(fl.total, f.covered_s)
    if hourly is not None:
        rate = f" ({hourly:.2f} flaps/h)"
    elif f.covered_s > 0:
        rate = f" (a rate per hour needs {human_duration(MIN_RATE_SPAN_S)} of samples)"
    else:
        rate = " (no sampled time: rate unknown)"
    merged = f"both ends within {t.flap_merge_s:g} s counted once"
    if fl.down_since is not None:
        out.append((CRITICAL + 5, f"link is down since {utc_time(fl.down_since)}"))
    if fl.downs >= t.flap_warn:
        times = f"{fl.downs} time{'s' if fl.downs > 1 else ''}"
        out.append(
            (
                CRITICAL if fl.downs >= t.flap_critical else WARN,
                f"link went down {times} in {_observed(f)}{rate}; {merged}",
            )
        )
    if fl.recoveries >= t.recovery_watch:
        pen = WARN if fl.recoveries >= t.recovery_warn else WATCH
        out.append(
            (
                pen,
                f"link retrained (error recovery) {fl.recoveries} times in {_observed(f)}{rate}; "
                f"threshold {t.recovery_warn}",
            )
        )
    return out


def _per_end(items: tuple[tuple[PortRef, int], ...]) -> str:
    return ", ".join(f"{n} at {ref}" for ref, n in items)


def _refs(refs: tuple[PortRef, ...]) -> str:
    return " and ".join(str(r) for r in refs)


# The kind of a finding, from the words its reason starts with (this module phrases them).
_KINDS: tuple[tuple[str, str], ...] = (
    ("symbol errors", "ber"),
    ("BER ", "ber"),
    ("not yet certified", "ber"),
    ("no traffic time", "ber"),
    ("link is down", "flapping"),
    ("link went down", "flapping"),
    ("link retrained", "flapping"),
    ("trains at", "degraded_link"),
    ("receive errors", "rcv_errors"),
    ("transmit discards", "xmit_discards"),
    ("congestion", "congestion"),
    ("repeat offender", "repeat_offender"),
    ("no counter samples", "unseen"),
)


def finding_kind(reason: str) -> str:
    """``ber``, ``flapping``, ``rcv_errors``, ``xmit_discards``, ``congestion``, ... for a reason."""
    return next((kind for start, kind in _KINDS if reason.startswith(start)), "other")
