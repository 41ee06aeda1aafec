"""Per-port sums over the window: what health scores links from (:class:`PortTable`, made by
:class:`fabric.health.columns.ColumnSums`) and which counters it sums."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

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
