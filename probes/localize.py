"""From slow pairs and their routes to the cables most likely at fault. Pure.

A pair is *slow* when it failed or measured under what its route should give in its round
(:mod:`probes.expect`); when a pair was re-tested, its last attempt decides. Every link is
looked at per direction of travel (a port that drops what arrives breaks one direction only)
and both directions together (a cable trained at 1x breaks both).

A link is a **suspect** only when every pair that crossed it (in that direction, or in both) was
slow: one fast pair across it clears it, if it proves the link healthy: what it measured, times
the probes of its round sharing the link, reaches 93 % of the sweep's efficiency times the
link's design rate. A fast pair whose bottleneck was another, more shared link proves nothing
about a cable that could give more (a 2x host cable hidden behind a shared uplink). The suspects are then chosen as a cover of the slow
pairs: the link that explains the most slow pairs first, then the one explaining the most of
those left, and so on; a link whose slow pairs are all explained by a suspect already chosen is
not one (a healthy host cable crossed only by the pairs that also crossed a bad uplink). Links
that explain exactly the same slow pairs are a **tie** (one *group*): the sweep alone cannot
tell them apart, and :func:`followup_probes` picks probes that cross one of them and as few of
the others as possible, so a second look separates them. Slow pairs that no such link explains
(every link of their route carried a fast pair too) are reported by :func:`unexplained`, never
pinned on a cable.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from probes.expect import SLOW_RATIO, Crossing, DesignRates, crossings, design_rate
from probes.pairs import Endpoint, PairResult, Probe
from topology.model import Fabric, Guid, Link
from topology.route_pairs import PairRoutes, RouteTables, bind_tables
from topology.routes import RouteError

Paths = Mapping[tuple[Guid, Guid], Sequence[Link]]
# (link, GUID the data leaves from); None for "either direction".
_Key = tuple[Link, Guid | None]


@dataclass(frozen=True, slots=True)
class Suspect:
    link: Link
    score: float  # slow pairs crossing it / all pairs crossing it (1.0 for every suspect)
    slow_pairs: tuple[PairResult, ...]
    fast_pairs: tuple[PairResult, ...]
    reason: str
    direction: Guid | None = None  # the end data leaves from when one direction is worse; None: both
    group: int = 0  # suspects of one group explain the same slow pairs: a tie when more than one


def final_results(results: Iterable[PairResult]) -> list[PairResult]:
    """The last attempt of every pair (a re-test replaces the earlier verdict)."""
    last: dict[tuple[Guid, Guid], PairResult] = {}
    for r in results:
        if r.key not in last or r.attempt >= last[r.key].attempt:
            last[r.key] = r
    return list(last.values())


def _crossings(path: Sequence[Link], src: Guid) -> list[_Key]:
    keys: list[_Key] = []
    here = src
    for lk in path:
        keys += [(lk, here), (lk, None)]
        here = lk.other(here).guid
    return keys


def rank(
    results: Sequence[PairResult],
    paths: Paths,
    names: Mapping[Guid, str] | None = None,
    *,
    design: DesignRates | None = None,
    efficiency: float | None = None,
) -> list[Suspect]:
    """Suspect links, in the order the cover chose them (see the module docstring).

    With ``design`` (the plan's design rates) and ``efficiency`` (the sweep's), a fast pair clears
    only the links it proves healthy (:func:`_proves`); without them any fast pair clears.
    """
    names = names or {}
    finals = final_results(results)
    shared = _Sharing(results, paths) if efficiency is not None else None
    slow_by: dict[_Key, list[PairResult]] = defaultdict(list)
    fast_by: dict[_Key, list[PairResult]] = defaultdict(list)
    masked_by: dict[_Key, list[PairResult]] = defaultdict(list)
    for r in finals:
        path = paths.get(r.key)
        if not path:
            continue
        here = r.client.guid
        for lk in path:
            keys: tuple[_Key, _Key] = ((lk, here), (lk, None))
            if not r.ok:
                target = slow_by
            elif shared is None or _proves(r, lk, here, shared, design or {}, efficiency or 1.0):
                target = fast_by
            else:
                target = masked_by
            for key in keys:
                target[key].append(r)
            here = lk.other(here).guid
    # per link, the key (a direction or both) that every crossing pair was slow on, most pairs first
    best: dict[Link, _Key] = {}
    for key, slows in slow_by.items():
        if key in fast_by:
            continue
        lk, direction = key
        old = best.get(lk)
        if old is None or (len(slows), direction is not None) > (len(slow_by[old]), old[1] is not None):
            best[lk] = key
    explained_by = {lk: frozenset(r.key for r in slow_by[key]) for lk, key in best.items()}
    left = set().union(*explained_by.values()) if explained_by else set()
    out: list[Suspect] = []
    group = 0
    while left:
        gain = {lk: pairs & left for lk, pairs in explained_by.items()}
        most = max((len(g) for g in gain.values()), default=0)
        if not most:
            break
        first = min((lk for lk, g in gain.items() if len(g) == most), key=lambda lk: lk.key)
        same = sorted((lk for lk, g in gain.items() if g == gain[first]), key=lambda lk: lk.key)
        trained = [
            lk
            for lk in same
            if shared is not None
            and _trained_below(lk, slow_by[best[lk]], design or {}, shared, efficiency or 1.0, paths)
        ]
        if len(same) > 1 and 0 < len(trained) < len(same):
            # discovery's evidence splits the tie: these train below their peers, at a rate that
            # explains what the slow pairs measured; the others are explained by them
            for lk in same:
                if lk not in trained:
                    del explained_by[lk]
            note = f"; it trains at {{}} where its peers give {{:g}} Gb/s, which explains the slow pairs; {len(same) - len(trained)} other link(s) they cross do not"
            same = trained
        else:
            note = ""
        for lk in same:
            key = best[lk]
            slows, masked = slow_by[key], masked_by.get(key, [])
            reason = f"all {len(slows)} pair(s) crossing it were slow ({_where(key, fast_by, names)})"
            if masked:
                reason += (
                    f"; {len(masked)} fast pair(s) crossed it sharing it with others: they cannot clear it"
                )
            if note:
                reason += note.format(f"{lk.width}x{lk.speed}", design_rate(lk, design or {}))
            if len(same) > 1:
                reason += f"; tied with {len(same) - 1} other link(s) that the same slow pairs cross"
            out.append(Suspect(lk, 1.0, tuple(slows), tuple(masked), reason, key[1], group))
            del explained_by[lk]
        left -= gain[first]
        group += 1
    return out


class _Sharing:
    """How many probes of each pass and round crossed each link in each direction, counted from
    the results on first use (a pass is an attempt number: re-tests and follow-ups are their own
    rounds)."""

    def __init__(self, results: Sequence[PairResult], paths: Paths) -> None:
        self.results = results
        self.paths = paths
        self.rounds: dict[tuple[int, int], Counter[Crossing]] | None = None

    def count(self, r: PairResult, lk: Link, src: Guid) -> int:
        if self.rounds is None:
            self.rounds = defaultdict(Counter)
            for x in self.results:
                path = self.paths.get(x.key)
                if path:
                    self.rounds[(x.attempt, x.round)].update(crossings(path, x.client.guid))
        return max(1, self.rounds[(r.attempt, r.round)][(lk.key, src)])


def _trained_below(
    lk: Link,
    slows: Sequence[PairResult],
    design: DesignRates,
    shared: _Sharing,
    efficiency: float,
    paths: Paths,
) -> bool:
    """Whether ``lk`` trains below its peers (discovery) at a rate that explains every slow pair:
    each measured at least the slow bar of ``lk``'s trained share in its round (a pair slower
    than that was slowed by something else too)."""
    if lk.key not in design:
        return False
    for r in slows:
        src = _source(paths.get(r.key, ()), r.client.guid, lk)
        if r.gbps is None or src is None:
            return False
        if r.gbps < SLOW_RATIO * efficiency * lk.gbps / shared.count(r, lk, src):
            return False
    return True


def _source(path: Sequence[Link], client: Guid, lk: Link) -> Guid | None:
    """The end of ``lk`` that data from ``client`` along ``path`` leaves by."""
    for key, src in crossings(path, client):
        if key == lk.key:
            return src
    return None


def _proves(
    r: PairResult, lk: Link, src: Guid, shared: _Sharing, design: DesignRates, efficiency: float
) -> bool:
    """Whether fast pair ``r`` shows ``lk`` healthy in that direction: what it measured times the
    probes of its round sharing ``lk`` reaches the slow bar of ``lk``'s design rate. A pair whose
    bottleneck was elsewhere (``lk`` shared less) says nothing of a cable that could give more."""
    if r.gbps is None:
        return False
    return r.gbps * shared.count(r, lk, src) >= SLOW_RATIO * efficiency * design_rate(lk, design)


def _where(key: _Key, fast_by: Mapping[_Key, list[PairResult]], names: Mapping[Guid, str]) -> str:
    """Which way the slow pairs crossed the link, and what is known of the other way."""
    lk, direction = key
    if direction is None:
        return "both directions"
    other = lk.other(direction).guid
    here = names.get(direction, direction)
    if (lk, other) in fast_by:
        return f"from {here}; pairs the other way were fast"
    return f"all from {here}; no pair crossed it the other way"


def unexplained(results: Sequence[PairResult], paths: Paths, suspects: Sequence[Suspect]) -> list[PairResult]:
    """Slow or failed pairs (last attempt) that cross no suspect: no single cable explains them."""
    keys = {(s.link, s.direction) for s in suspects}
    out = []
    for r in final_results(results):
        if r.ok:
            continue
        path = paths.get(r.key)
        if not path or not keys & set(_crossings(path, r.client.guid)):
            out.append(r)
    return out


def tied_groups(suspects: Sequence[Suspect]) -> list[list[Suspect]]:
    """Every group of two or more suspects that the same slow pairs cross."""
    groups: dict[int, list[Suspect]] = defaultdict(list)
    for s in suspects:
        groups[s.group].append(s)
    return [g for _, g in sorted(groups.items()) if len(g) > 1]


def tied(suspects: Sequence[Suspect]) -> list[Suspect]:
    """The top group when it is a tie (nothing to separate when one link leads alone)."""
    if not suspects:
        return []
    group = [s for s in suspects if s.group == suspects[0].group]
    return group if len(group) > 1 else []


def followup_probes(
    suspects: Sequence[Suspect],
    candidates: Sequence[Endpoint],
    fabric_paths: Paths | None = None,
    *,
    fabric: Fabric | None = None,
    tables: RouteTables | None = None,
    limit: int = 64,
    budget: int = 4096,
) -> tuple[list[Probe], dict[tuple[Guid, Guid], list[Link]]]:
    """Probes that separate tied suspects (every tied group): each crosses one tied link (its bad
    direction) and as few other links of its group as possible; no HCA twice in a round. Returns
    the probes and their paths.

    Pairs are tried nearest first: HCAs on the leaves at the tied links' ends with each other
    (two hosts on one leaf cross their own cables and no uplink: what separates a host cable from
    the uplink its slow pairs share), then those HCAs with every other one. At most ``budget``
    pairs are looked at per tied link, so a 16k-HCA fabric costs no more than a small one.
    Paths come from ``fabric_paths`` when it has the pair, else from ``fabric`` + ``tables``.
    """
    groups = tied_groups(suspects)
    if not groups:
        return [], {}
    known: dict[tuple[Guid, Guid], list[Link] | None] = {}
    if fabric_paths is not None:
        known.update({k: list(v) for k, v in fabric_paths.items()})

    routers: list[PairRoutes] = []  # the tables bound once, when a path is first missing

    def paths_of(batch: list[tuple[Endpoint, Endpoint]]) -> None:
        missing = [(a.guid, b.guid) for a, b in batch if (a.guid, b.guid) not in known]
        if not missing:
            return
        if fabric is None or tables is None:
            known.update(dict.fromkeys(missing))
            return
        if not routers:
            routers.append(PairRoutes(bind_tables(fabric, tables)))
        for k, got in routers[0](missing).items():
            known[k] = None if isinstance(got, RouteError) else list(got)

    used_pairs = {r.key for g in groups for s in g for r in (*s.slow_pairs, *s.fast_pairs)}
    chosen: list[Probe] = []
    busy: dict[int, set[Guid]] = defaultdict(set)
    targets = [((s.link, s.direction), [(t.link, t.direction) for t in g]) for g in groups for s in g]
    for (lk, direction), tied_keys in targets:
        best: tuple[int, tuple[Endpoint, Endpoint]] | None = None
        nearest = itertools.islice(_nearest_pairs(lk, candidates), budget)
        # in batches, so paths are computed 256 at a time and the search stops at a clean pair
        while batch := list(itertools.islice(nearest, 256)):
            best = _best_of(batch, best, (lk, direction), tied_keys, used_pairs, known, paths_of)
            if best is not None and best[0] == 0:
                break
        if best is None:
            continue
        a, b = best[1]
        used_pairs.add((a.guid, b.guid))
        r = 0
        while a.guid in busy[r] or b.guid in busy[r]:
            r += 1
        busy[r] |= {a.guid, b.guid}
        chosen.append(Probe(a, b, r))
        if len(chosen) >= limit:
            break
    out: dict[tuple[Guid, Guid], list[Link]] = {}
    for p in chosen:
        found = known[(p.client.guid, p.server.guid)]
        assert found is not None  # chosen only with a path
        out[(p.client.guid, p.server.guid)] = found
    return chosen, out


def _nearest_pairs(lk: Link, candidates: Sequence[Endpoint]) -> Iterator[tuple[Endpoint, Endpoint]]:
    """Ordered probe pairs (client, server) on distinct hosts: among the HCAs near ``lk`` (on a
    switch at one of its ends, or an HCA at one of its ends) first, then near x far both ways."""
    ends = {lk.a.guid, lk.b.guid}
    near = [e for e in candidates if e.guid in ends or e.leaf in ends]
    if not near:  # a link between two upper switches: no HCA is near it
        near = list(candidates)
    near_set = {e.guid for e in near}
    far = [e for e in candidates if e.guid not in near_set]
    for a in near:
        for b in near:
            if a.host != b.host:
                yield a, b
    for b in far:
        for a in near:
            if a.host != b.host:
                yield a, b
                yield b, a


def _best_of(
    batch: list[tuple[Endpoint, Endpoint]],
    best: tuple[int, tuple[Endpoint, Endpoint]] | None,
    target: _Key,
    tied_keys: list[_Key],
    used_pairs: set[tuple[Guid, Guid]],
    known: Mapping[tuple[Guid, Guid], list[Link] | None],
    paths_of: Callable[[list[tuple[Endpoint, Endpoint]]], None],
) -> tuple[int, tuple[Endpoint, Endpoint]] | None:
    """The pair of ``batch`` crossing ``target`` with the fewest other tied links, if better."""
    paths_of(batch)
    for a, b in batch:
        key = (a.guid, b.guid)
        found = known.get(key)
        if not found or key in used_pairs:
            continue
        crossed = set(_crossings(found, a.guid))
        if target not in crossed:
            continue
        overlap = sum(1 for t in tied_keys if t in crossed and t != target)
        if best is None or overlap < best[0]:
            best = (overlap, (a, b))
            if overlap == 0:
                break
    return best
