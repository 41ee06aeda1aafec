"""One meaning for every rate: events per hour of the time a link was actually observed.

A link is observed from its first to its last counter sample in the window (both ends read: the
shorter of the two; one end read: that end's), never the window an operator asked for: a flap
seen between two samples a minute apart is not 84 flaps an hour because ``--since 1m``, nor
0.04 because ``--since 24h``. ``ibfab health``, ``ibfab recommend``, the TUI and the exporter
all read :attr:`fabric.health.LinkHealth.flaps_per_hour`, which is made here, and the reasons
quote the same figure.

A rate needs a span to be one: under :data:`MIN_RATE_SPAN_S` of samples (two readings a second
apart, as a lab collects them) three link-downs would read as 10,000 an hour. There the rate is
unknown (None) and the reasons give the count and the span instead; zero events are zero at any
span.

>>> per_hour(2, 1800.0)
4.0
>>> per_hour(1, 0.0) is None, per_hour(3, 1.0) is None, per_hour(0, 1.0)
(True, True, 0.0)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

HOUR_S = 3600.0
MIN_RATE_SPAN_S = 600.0  # the shortest span of samples a rate per hour is given for (10 min)


def per_hour(count: float, observed_s: float) -> float | None:
    """``count`` events per hour over ``observed_s`` seconds: 0 for no events, None when events
    were seen over less than :data:`MIN_RATE_SPAN_S` (too short a span for a rate, or none)."""
    if count == 0:
        return 0.0
    if observed_s < MIN_RATE_SPAN_S:
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
