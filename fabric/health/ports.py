"""Per-port sums over the window, vectorised: the delta table (millions of rows) -> one row per port.

Everything here is numpy over integer group codes (one factorisation, then ``bincount``), so the
cost is a few passes over the delta table whatever the number of ports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from fabric.counters.deltas import SATURABLE

if TYPE_CHECKING:
    from numpy.typing import NDArray

# Counters the health model looks at, summed per port over the window.
SCORED: tuple[str, ...] = (
    "symbol_errors",
    "link_downed",
    "link_error_recovery",
    "rcv_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "xmit_discards",
    "rcv_remote_physical_errors",
    "xmit_wait",
)
# A delta row with any of these above zero is a "finding" (first_seen / last_seen).
FINDING_COUNTERS: tuple[str, ...] = SCORED[:7]
FLAP_COUNTERS: tuple[str, ...] = ("link_downed", "link_error_recovery")


@dataclass(frozen=True, slots=True)
class PortTable:
    """Column arrays, one entry per port that has delta rows in the window."""

    guids: NDArray[np.object_]
    ports: NDArray[np.int64]
    samples: NDArray[np.int64]
    seconds: NDArray[np.float64]  # elapsed summed over rows on the same cable
    sums: dict[str, NDArray[np.int64]]  # SCORED counters, NA as 0
    # symbol errors in rows whose whole interval lies in the last short / long BER window: errors
    # of a longer interval cannot be placed in time, and the window BER check covers them
    symbol_short: NDArray[np.int64]
    symbol_long: NDArray[np.int64]
    saturated: dict[str, NDArray[np.bool_]]  # SCORED counters that hit their maximum
    reset: NDArray[np.bool_]
    link_changes: NDArray[np.int64]
    first_finding: NDArray[np.float64]  # NaN: no finding
    last_finding: NDArray[np.float64]
    flap_rows: pd.DataFrame  # guid, port, prev_time, time, link_downed, link_error_recovery (> 0 only)

    def __len__(self) -> int:
        return int(self.ports.size)


def port_table(deltas: pd.DataFrame, *, now: float, short_s: float, long_s: float) -> PortTable:
    """Sum ``deltas`` (from :func:`fabric.counters.deltas.compute_deltas`) per (guid, port)."""
    guid = deltas["guid"]
    if isinstance(guid.dtype, pd.CategoricalDtype):  # as compute_deltas returns it: already coded
        guid_codes, guid_names = guid.cat.codes.to_numpy(), guid.cat.categories
    else:
        guid_codes, guid_names = pd.factorize(guid, sort=False)
    port = deltas["port"].to_numpy(dtype=np.int64)
    span = int(port.max(initial=0)) + 1
    codes, keys = pd.factorize(guid_codes.astype(np.int64) * span + port, sort=False)
    n = int(keys.size)
    keys = np.asarray(keys, dtype=np.int64)

    def total(values: NDArray[np.generic]) -> NDArray[np.int64]:
        return np.bincount(codes, weights=values, minlength=n).round().astype(np.int64)

    time = deltas["time"].to_numpy(dtype=np.float64)
    prev_time = deltas["prev_time"].to_numpy(dtype=np.float64)
    same_cable = ~deltas["link_changed"].to_numpy(dtype=bool)
    elapsed = np.where(same_cable, deltas["elapsed"].to_numpy(dtype=np.float64), 0.0)
    counts: dict[str, NDArray[np.int64]] = {}
    sums: dict[str, NDArray[np.int64]] = {}
    finding = np.zeros(len(deltas), dtype=bool)
    for name in SCORED:
        counts[name] = deltas[name].to_numpy(dtype=np.int64, na_value=0)
        # bincount weights are float64: exact for sums below 2**53, far beyond any error count
        sums[name] = total(counts[name]) if counts[name].any() else np.zeros(n, dtype=np.int64)
        if name in FINDING_COUNTERS:
            finding |= counts[name] > 0
    symbol = counts["symbol_errors"]
    saturated = {
        name: np.bincount(codes[flags], minlength=n) > 0
        for name in SCORED
        if name in SATURABLE and (flags := deltas[f"saturated_{name}"].to_numpy(dtype=bool)).any()
    }
    reset = deltas["reset"].to_numpy(dtype=bool)
    found_at = pd.Series(time[finding]).groupby(codes[finding])
    first_finding = np.full(n, np.nan)
    last_finding = np.full(n, np.nan)
    if finding.any():
        first = found_at.min()
        last = found_at.max()
        first_finding[first.index.to_numpy()] = first.to_numpy()
        last_finding[last.index.to_numpy()] = last.to_numpy()
    flap_mask = (counts["link_downed"] > 0) | (counts["link_error_recovery"] > 0)
    flap_rows = pd.DataFrame(
        {
            "guid": np.asarray(guid_names, dtype=object)[guid_codes[flap_mask]],
            "port": port[flap_mask],
            "prev_time": prev_time[flap_mask],
            "time": time[flap_mask],
            "link_downed": counts["link_downed"][flap_mask],
            "link_error_recovery": counts["link_error_recovery"][flap_mask],
        }
    )
    return PortTable(
        guids=np.asarray(guid_names, dtype=object)[keys // span],
        ports=keys % span,
        samples=np.bincount(codes, minlength=n).astype(np.int64),
        seconds=np.bincount(codes, weights=elapsed, minlength=n).astype(np.float64),
        sums=sums,
        symbol_short=total(np.where(prev_time >= now - short_s, symbol, 0)),
        symbol_long=total(np.where(prev_time >= now - long_s, symbol, 0)),
        saturated=saturated,
        reset=np.bincount(codes[reset], minlength=n) > 0,
        link_changes=np.bincount(codes, weights=~same_cable, minlength=n).astype(np.int64),
        first_finding=first_finding,
        last_finding=last_finding,
        flap_rows=flap_rows,
    )
