"""Bit error rate from symbol-error counts, with exact Poisson confidence bounds.

Symbol errors are rare independent events, so a count ``k`` over ``bits`` is Poisson: the point
estimate is ``k / bits`` and the one-sided bounds at confidence ``c`` are the means for which
seeing ``k`` (or fewer / more) errors has probability ``1 - c``. For ``k = 0`` the upper bound is
``-ln(1 - c)``, i.e. 3.0 errors at 95%.

>>> round(poisson_upper(0, 0.95), 3)
2.996
>>> round(poisson_upper(10, 0.95), 2), round(poisson_lower(10, 0.95), 2)
(16.96, 5.43)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

# Above this count the exact sums are slow and the Wilson-Hilferty cube-root approximation is
# better than 0.1 %, far below anything the thresholds can tell apart.
_EXACT_LIMIT = 400


@dataclass(frozen=True, slots=True)
class BerEstimate:
    """BER of one link over a window. ``value``/``lower``/``upper`` are None when no bits were seen.

    ``bits`` counts one direction (rate x seconds both ends were read): the errors of both ends
    are summed against it, which equals the per-port BER that NVIDIA's PDR rule uses when one end
    sees the errors (the usual case: one bad transceiver or fibre) and is at most 2x pessimistic
    when both do; counting both directions would halve a one-sided fault and hide it.
    """

    errors: int
    bits: float
    value: float | None
    lower: float | None
    upper: float | None
    confidence: float
    target: float
    certified: bool  # the upper bound is below the target: the link has shown it meets it
    at_least: bool  # a counter saturated or was reset: the true count, and BER, may be higher

    def to_dict(self) -> dict[str, object]:
        return {
            "value": self.value,
            "lower": self.lower,
            "upper": self.upper,
            "errors": self.errors,
            "bits": self.bits,
            "confidence": self.confidence,
            "target": self.target,
            "certified": self.certified,
            "at_least": self.at_least,
        }


def estimate_ber(
    errors: int, bits: float, target: float, confidence: float = 0.95, at_least: bool = False
) -> BerEstimate:
    """The BER estimate for ``errors`` symbol errors over ``bits`` bits.

    >>> e = estimate_ber(10, 200e9 * 600, target=1e-14)
    >>> f"{e.value:.3g} {e.upper:.3g} {e.certified}"
    '8.33e-14 1.41e-13 False'
    """
    if bits <= 0:
        return BerEstimate(errors, 0.0, None, None, None, confidence, target, False, at_least)
    upper = poisson_upper(errors, confidence) / bits
    return BerEstimate(
        errors=errors,
        bits=bits,
        value=errors / bits,
        lower=poisson_lower(errors, confidence) / bits,
        upper=upper,
        confidence=confidence,
        target=target,
        certified=upper < target and not at_least,
        at_least=at_least,
    )


def bits_to_certify(errors: int, target: float, confidence: float = 0.95) -> float:
    """How many bits must be carried with ``errors`` errors before the upper bound is under ``target``."""
    return poisson_upper(errors, confidence) / target


@lru_cache(maxsize=4096)
def poisson_upper(k: int, confidence: float) -> float:
    """The mean above which seeing ``k`` or fewer events has probability below ``1 - confidence``."""
    if k < 0:
        raise ValueError(f"negative count {k}")
    alpha = 1.0 - confidence
    if k == 0:
        return -math.log(alpha)
    if k > _EXACT_LIMIT:
        z = NormalDist().inv_cdf(confidence)
        n = k + 1
        return n * (1 - 1 / (9 * n) + z / (3 * math.sqrt(n))) ** 3
    # P(X <= k; mu) falls as mu grows: bisect for the mu where it equals alpha.
    return _bisect(lambda mu: _cdf(k, mu) - alpha, float(k), k + 10.0 * math.sqrt(k + 1) + 10.0)


@lru_cache(maxsize=4096)
def poisson_lower(k: int, confidence: float) -> float:
    """The mean below which seeing ``k`` or more events has probability below ``1 - confidence``."""
    if k < 0:
        raise ValueError(f"negative count {k}")
    if k == 0:
        return 0.0
    alpha = 1.0 - confidence
    if k > _EXACT_LIMIT:
        z = NormalDist().inv_cdf(confidence)
        return k * (1 - 1 / (9 * k) - z / (3 * math.sqrt(k))) ** 3
    # P(X >= k; mu) = 1 - P(X <= k - 1; mu) grows with mu: bisect for where it equals alpha.
    return _bisect(lambda mu: alpha - (1.0 - _cdf(k - 1, mu)), 0.0, float(k))


def _cdf(k: int, mu: float) -> float:
    """P(X <= k) for X ~ Poisson(mu), summed in log space so large mu does not underflow early."""
    if mu <= 0:
        return 1.0
    log_mu = math.log(mu)
    return math.fsum(math.exp(i * log_mu - mu - math.lgamma(i + 1)) for i in range(k + 1))


def _bisect(f: Callable[[float], float], lo: float, hi: float) -> float:
    """Root of a function that is positive at ``lo`` and negative at ``hi`` (relative 1e-9)."""
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-9 * max(1.0, hi):
            break
    return (lo + hi) / 2
