"""The links filter language and the precomputed sort orders the links table filters through.

Words are ANDed. ``status:warn`` (or a bare ``ok``/``watch``/``warn``/``critical``), ``tier:leaf-spine``
(or a bare tier pair), ``rail:3``, ``group:2``; any other word must appear in an end's name
(host or switch), e.g. ``dgx-0042`` or ``spine-03``.

>>> q = parse_query("crit rail:3 dgx-00")
>>> q.statuses, q.rails, q.words
(('critical',), (3,), ('dgx-00',))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fabric.app.readmodel.views import NO_DATA, STATUSES, LinkRow, RowStatus, status_order

SORT_KEYS = ("score", "ber", "flaps", "name")
_STATUS_WORDS: dict[str, RowStatus] = {
    **{s.value: s for s in STATUSES if s is not NO_DATA},
    "crit": STATUSES[0],
    "nodata": NO_DATA,
}
# What a bare tier pair may be made of (LinkRow.tiers: tier names, spaces as underscores).
_TIER_WORDS = ("hca", "leaf", "spine", "core", "hostless", "side_leaf", "side_spine", "side_core")


@dataclass(frozen=True, slots=True)
class Query:
    statuses: tuple[RowStatus | str, ...] = ()  # a str: a status word that is none (matches nothing)
    tiers: tuple[str, ...] = ()
    rails: tuple[int, ...] = ()
    groups: tuple[int, ...] = ()
    words: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.statuses or self.tiers or self.rails or self.groups or self.words)


def parse_query(text: str) -> Query:
    statuses: list[RowStatus | str] = []
    tiers: list[str] = []
    rails: list[int] = []
    groups: list[int] = []
    words: list[str] = []
    for word in text.lower().split():
        key, _, value = word.partition(":")
        if value and key == "status":
            statuses.append(_STATUS_WORDS.get(value, value))
        elif value and key == "tier":
            tiers.append(value)
        elif value and key in ("rail", "group") and value.isdigit():
            (rails if key == "rail" else groups).append(int(value))
        elif word in _STATUS_WORDS:
            statuses.append(_STATUS_WORDS[word])
        elif "-" in word and all(part in _TIER_WORDS for part in word.split("-")):
            tiers.append(word)
        else:
            words.append(word)
    return Query(tuple(statuses), tuple(tiers), tuple(rails), tuple(groups), tuple(words))


class LinkIndex:
    """The rows, their search text and one precomputed order per sort key (built once per data load)."""

    def __init__(self, rows: Sequence[LinkRow]) -> None:
        self.rows = rows
        self._orders: dict[str, list[int]] = {}

    def order(self, key: str) -> list[int]:
        if key not in self._orders:
            rows = self.rows
            n = range(len(rows))
            if key == "score":
                order = sorted(n, key=lambda i: (status_order(rows[i].status), _score(rows[i]), i))
            elif key == "ber":
                order = sorted(n, key=lambda i: (-(rows[i].ber or -1.0), i))
            elif key == "flaps":
                order = sorted(
                    n, key=lambda i: (-(rows[i].flaps_per_hour or 0.0), status_order(rows[i].status), i)
                )
            elif key == "name":
                order = sorted(n, key=lambda i: (rows[i].a_name, rows[i].a_port, i))
            else:
                raise ValueError(f"unknown sort key {key!r}")
            self._orders[key] = order
        return self._orders[key]

    def select(self, query: Query, sort: str) -> list[int]:
        """Row indexes that match ``query``, in ``sort`` order."""
        order = self.order(sort)
        if query.empty:
            return order
        rows = self.rows
        keep = order
        if query.statuses:
            wanted = set(query.statuses)
            keep = [i for i in keep if rows[i].status in wanted]
        if query.tiers:
            tiers = set(query.tiers)
            keep = [i for i in keep if rows[i].tiers in tiers]
        if query.rails:
            rails = set(query.rails)
            keep = [i for i in keep if rows[i].rail in rails]
        if query.groups:
            groups = set(query.groups)
            keep = [i for i in keep if rows[i].group in groups]
        for word in query.words:
            keep = [i for i in keep if word in rows[i].search]
        return keep


def _score(row: LinkRow) -> int:
    return row.score if row.score is not None else 101
