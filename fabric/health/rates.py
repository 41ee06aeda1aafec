"""One meaning for every rate: events per hour of the time a link was actually observed.

A link is observed from its first to its last counter sample in the window (both ends read: the
shorter of the two; one end read: that end's), never the window an operator asked for: a flap
seen between two samples a minute apart is not 84 flaps an hour because ``--since 1m``, nor
0.04 because ``--since 24h``. ``ibfab health``, ``ibfab recommend``, the TUI and the exporter
all read :attr:`fabric.health.LinkHealth.flaps_per_hour`, which is made here, and the reasons
quote the same figure.

>>> per_hour(2, 1800.0)
4.0
>>> per_hour(1, 0.0) is None
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

HOUR_S = 3600.0


def per_hour(count: float, observed_s: float) -> float | None:
    """``count`` events per hour over ``observed_s`` seconds; None when no time was observed."""
    if observed_s <= 0:
        return None
    return count * HOUR_S / observed_s


def observed_seconds(
    seconds_a: NDArray[np.float64],
    seconds_b: NDArray[np.float64],
    seen_a: NDArray[np.bool_],
    seen_b: NDArray[np.bool_],
) -> NDArray[np.float64]:
    """Per link, the time it was observed, from the sampled time of its two ends (first to last
    sample of each end in the window; see the module docstring)."""
    both = np.minimum(seconds_a, seconds_b)
    one = np.where(seen_a, seconds_a, np.where(seen_b, seconds_b, 0.0))
    out: NDArray[np.float64] = np.where(seen_a & seen_b, both, one)
    return out
