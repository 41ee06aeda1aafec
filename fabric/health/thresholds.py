"""The numbers the health model judges links by, each with where it comes from.

Each threshold below names its source: "PDR plugin" is NVIDIA's UFM pdr_deterministic plugin, "ibqueryerrors" the suggested values in
rdma-core's ``error_thresholds`` file, "UFM log analyzer" its link-flapping rule.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from topology.errors import UsageError


@dataclass(frozen=True, slots=True)
class HealthThresholds:
    # Symbol-error budgets (PDR plugin, NDR): 2.88 errors in 12 min = 400e9 b/s x 720 s x 1e-14 and
    # 3 errors in 125 min = 400e9 x 7500 s x 1e-15. ibfab scales them to each link's rate:
    # budget = rate_bps x window_s x BER target.
    ber_target: float = 1e-14
    ber_window_s: float = 720.0
    ber_target_long: float = 1e-15
    ber_window_long_s: float = 7500.0
    # One-sided confidence of the BER bounds. A clean link is certified once the upper bound is
    # under ber_target; at 0.632 (1 - 1/e) this is exactly the PDR plugin's 1/(BER x rate) window,
    # at 0.95 it is ~3x longer (0 errors: upper = 3.0 / bits).
    ber_confidence: float = 0.95
    # UFM log analyzer: a LinkDowned increment on both ends within 10 s is one event of the link.
    flap_merge_s: float = 10.0
    # PDR plugin rule (a): one both-ends LinkDowned delta marks a link bad. A single down is often
    # maintenance (reboot, reseat), so one is "warn"; a second one in the window is "critical".
    flap_warn: int = 1
    flap_critical: int = 2
    # ibqueryerrors: LinkErrorRecoveryCounter=10 (retrains without going down).
    recovery_watch: int = 1
    recovery_warn: int = 10
    # ibqueryerrors: PortRcvErrors=10 (we add LocalLinkIntegrity and ExcessiveBufferOverrun errors).
    rcv_errors_warn: int = 10
    # ibqueryerrors: PortXmitDiscards=100.
    xmit_discards_warn: int = 100
    # PortXmitWait counts ticks with data to send but no credit. ibfab assumes one tick is the wire
    # time of 8 bytes at the port's rate (NVIDIA, ib-traffic-monitor issue #3: newer devices use
    # 8, legacy ones 32), so share of time = xmit_wait x tick_bytes x 8 / (rate_bps x seconds).
    xmit_wait_tick_bytes: float = 8.0
    # ibfab's choice (no published default): share of time a port waited to send.
    congestion_watch: float = 0.02
    congestion_warn: float = 0.10
    # Repeat offenders: the PDR plugin advises not to re-admit a link after its 2nd/3rd
    # de-isolation; Meta's "lemon node" detection tracks nodes that keep failing. Findings on
    # this many distinct UTC days within the lookback make a repeat offender.
    repeat_days: int = 3
    repeat_lookback_days: float = 30.0
    # A link read once (fabric.health.reading): a symbol or receive error total at or above this is
    # a finding. ibqueryerrors suggests 10 for both, but for counters cleared at each check
    # (ibqueryerrors -k); a first reading is a total over an unknown time, often months. ibfab's
    # choice, from the PDR plugin's long-window target: a 4xNDR link at BER 1e-15 counts 35 symbol
    # errors a day (400e9 x 86400 x 1e-15), so 1,000 is about a month of a link at target; more is
    # worth clearing the counters and reading the rate.
    reading_errors_large: int = 1000


_INT_FIELDS = frozenset(f.name for f in dataclasses.fields(HealthThresholds) if f.type in ("int", int))
_FRACTIONS = frozenset({"ber_confidence", "congestion_watch", "congestion_warn"})


def thresholds_from_mapping(mapping: Mapping[str, object], source: str = "thresholds") -> HealthThresholds:
    """Thresholds from a parsed TOML/JSON mapping: the defaults, overridden by the keys given.

    Accepts the keys at top level or under a ``health`` table.

    >>> thresholds_from_mapping({"health": {"ber_target": 1e-13, "repeat_days": 2}}).repeat_days
    2
    """
    table = mapping.get("health", mapping)
    if not isinstance(table, Mapping):
        raise UsageError(f"{source}: 'health' must be a table of thresholds")
    known = {f.name for f in dataclasses.fields(HealthThresholds)}
    values: dict[str, float | int] = {}
    for key, value in table.items():
        if key not in known:
            raise UsageError(
                f"{source}: unknown health threshold {key!r} (known: {', '.join(sorted(known))})"
            )
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise UsageError(f"{source}: health threshold {key!r} must be a number, not {value!r}")
        if not math.isfinite(value):  # inf, nan (and 1e400, which TOML reads as inf)
            raise UsageError(f"{source}: health threshold {key!r} must be a finite number, not {value!r}")
        if key in _INT_FIELDS:
            if value != int(value):
                raise UsageError(f"{source}: health threshold {key!r} must be a whole number, not {value!r}")
            value = int(value)
        if value <= 0:  # a zero count or window would flag, or certify, every link
            raise UsageError(f"{source}: health threshold {key!r} must be positive, not {value!r}")
        if key in _FRACTIONS and value >= 1:
            raise UsageError(f"{source}: health threshold {key!r} is a fraction below 1, not {value!r}")
        values[key] = value
    thresholds = dataclasses.replace(HealthThresholds(), **values)  # type: ignore[arg-type]
    for lower, upper, strict in _ORDERED:
        low, high = getattr(thresholds, lower), getattr(thresholds, upper)
        if not (low < high if strict else low <= high):
            below = "below" if strict else "at most"
            raise UsageError(
                f"{source}: health threshold {lower} ({low:g}) must be {below} {upper} ({high:g})"
            )
    return thresholds


# Levels that must rise in this order (each pair after the keys given are applied to the defaults).
# (lower, upper, strictly): a warn level equal to its critical one would never be seen.
_ORDERED = (
    ("flap_warn", "flap_critical", True),
    ("recovery_watch", "recovery_warn", True),
    ("congestion_watch", "congestion_warn", True),
    ("ber_window_s", "ber_window_long_s", False),
    ("ber_target_long", "ber_target", False),
)


def load_thresholds(path: str | Path) -> HealthThresholds:
    """Thresholds from a TOML file (keys at top level or under ``[health]``)."""
    import tomllib

    try:
        with open(path, "rb") as fh:
            raw = fh.read(_MAX_THRESHOLDS_BYTES + 1)  # bounded: a device or a wrong file is not read whole
        if len(raw) > _MAX_THRESHOLDS_BYTES:
            raise UsageError(f"{path}: larger than {_MAX_THRESHOLDS_BYTES >> 20} MiB: not a thresholds file")
        data = tomllib.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read thresholds: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start}): TOML files are UTF-8") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from exc
    return thresholds_from_mapping(data, str(path))


_MAX_THRESHOLDS_BYTES = 1 << 20
