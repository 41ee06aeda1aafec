"""Health status and the score cut-offs that give it.

A score runs 0-100 (100 = healthy): 100 minus the penalties of every finding. Cut-offs:
``ok`` >= 90, ``watch`` 70-89, ``warn`` 40-69, ``critical`` < 40. Penalties are sized so that one
finding lands in its intended band: a budget-breaking BER or repeated link-downs alone is
critical; a statistically certain BER above target, one link-down, receive errors or heavy
congestion is warn; small signs (an uncertified link, a few retrains) are watch.
"""

from __future__ import annotations

from enum import StrEnum

SCORE_OK = 90
SCORE_WATCH = 70
SCORE_WARN = 40


class Status(StrEnum):
    OK = "ok"
    WATCH = "watch"
    WARN = "warn"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _RANK[self]

    @classmethod
    def of_score(cls, score: int) -> Status:
        if score >= SCORE_OK:
            return cls.OK
        if score >= SCORE_WATCH:
            return cls.WATCH
        if score >= SCORE_WARN:
            return cls.WARN
        return cls.CRITICAL


_RANK = {Status.OK: 0, Status.WATCH: 1, Status.WARN: 2, Status.CRITICAL: 3}
_BY_TEXT = {s.value: s for s in Status}


def status_rank(text: str, default: int = 0) -> int:
    """The rank of a status given as text (``ok`` 0 .. ``critical`` 3), ``default`` for anything
    that is not a status (a row with no health data yet).

    >>> status_rank("warn"), status_rank("no data", -1)
    (2, -1)
    """
    s = _BY_TEXT.get(text)
    return default if s is None else _RANK[s]


def is_status(text: str) -> bool:
    return text in _BY_TEXT
