"""From slow pairs and their routes to the links most likely at fault. Pure.

A pair is *slow* when it failed or measured below 93 % of the best pair (ClusterKit's bar); when a
pair was re-tested, its last attempt decides. Every link is scored per direction of travel (a port
that drops what arrives breaks one direction only) and both directions together (a cable trained
at 1x breaks both)::

    score = slow pairs crossing it / all pairs crossing it

and a link keeps the better of the two scores. Links crossed by slow pairs only score 1.0; a link
that also carries fast pairs is partly cleared. Ties (a pair's whole path is crossed by that pair
alone) are broken by :func:`followup_probes`: probes that cross one tied link and as few of the
others as possible, so a second look separates them.

"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from probes.pairs import Endpoint, PairResult, Probe
from probes.plan import outliers
from topology.model import Fabric, Guid, Link
from topology.routes import ForwardingTables, RouteError, all_paths

Paths = Mapping[tuple[Guid, Guid], Sequence[Link]]
# (link, GUID the data leaves from); None for "either direction".
_Key = tuple[Link, Guid | None]


@dataclass(frozen=True, slots=True)
class Suspect:
    link: Link
    score: float
    slow_pairs: tuple[PairResult, ...]
    fast_pairs: tuple[PairResult, ...]
    reason: str
    direction: Guid | None = None  # the end data leaves from when one direction is worse; None: both


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
    reference_gbps: float | None = None,
    names: Mapping[Guid, str] | None = None,
) -> list[Suspect]:
    """Suspect links worst first (only links that at least one slow pair crosses)."""
    names = names or {}
    finals = final_results(results)
    firsts = [r for r in results if r.attempt == 0] or list(results)
    best = reference_gbps
    if best is None:
        best = max((r.gbps for r in firsts if r.ok and r.gbps is not None), default=0.0)
    slow = {r.key for r in outliers(finals, best)}
    slow_by: dict[_Key, list[PairResult]] = defaultdict(list)
    fast_by: dict[_Key, list[PairResult]] = defaultdict(list)
    for r in finals:
        path = paths.get(r.key)
        if not path:
            continue
        for key in _crossings(path, r.client.guid):
            (slow_by if r.key in slow else fast_by)[key].append(r)
    best_for: dict[Link, Suspect] = {}
    for key, slows in slow_by.items():
        lk, direction = key
        fasts = fast_by.get(key, [])
        score = len(slows) / (len(slows) + len(fasts))
        old = best_for.get(lk)
        if old is not None and (old.score, len(old.slow_pairs)) >= (score, len(slows)):
            continue
        where = "both directions" if direction is None else f"from {names.get(direction, direction)}"
        reason = f"{len(slows)} slow and {len(fasts)} fast pair(s) cross it ({where})"
        best_for[lk] = Suspect(lk, round(score, 4), tuple(slows), tuple(fasts), reason, direction)
    return sorted(best_for.values(), key=lambda s: (-s.score, -len(s.slow_pairs), s.link.key))


def tied(suspects: Sequence[Suspect]) -> list[Suspect]:
    """The suspects sharing the top score and slow-pair count (nothing to separate if one)."""
    if not suspects:
        return []
    top = (suspects[0].score, len(suspects[0].slow_pairs))
    group = [s for s in suspects if (s.score, len(s.slow_pairs)) == top]
    return group if len(group) > 1 else []


def followup_probes(
    suspects: Sequence[Suspect],
    candidates: Sequence[Endpoint],
    fabric_paths: Paths | None = None,
    *,
    fabric: Fabric | None = None,
    tables: ForwardingTables | None = None,
    limit: int = 64,
    budget: int = 4096,
) -> tuple[list[Probe], dict[tuple[Guid, Guid], list[Link]]]:
    """Probes that separate tied suspects: each crosses one tied link (its bad direction) and as
    few other tied links as possible; no HCA twice in a round. Returns the probes and their paths.

    Pairs are tried nearest first: HCAs on the leaves at the tied links' ends with each other
    (two hosts on one leaf cross their own cables and no uplink: what separates a host cable from
    the uplink its slow pairs share), then those HCAs with every other one. At most ``budget``
    pairs are looked at per tied link, so a 16k-HCA fabric costs no more than a small one.
    Paths come from ``fabric_paths`` when it has the pair, else from ``fabric`` + ``tables``.
    """
    group = tied(suspects)
    if not group:
        return [], {}
    tied_keys = [(s.link, s.direction) for s in group]
    known: dict[tuple[Guid, Guid], list[Link] | None] = {}
    if fabric_paths is not None:
        known.update({k: list(v) for k, v in fabric_paths.items()})

    def paths_of(batch: list[tuple[Endpoint, Endpoint]]) -> None:
        missing = [(a.guid, b.guid) for a, b in batch if (a.guid, b.guid) not in known]
        if not missing:
            return
        if fabric is None or tables is None:
            known.update(dict.fromkeys(missing))
            return
        for k, got in all_paths(fabric, tables, missing).items():
            known[k] = None if isinstance(got, RouteError) else got

    used_pairs = {r.key for s in group for r in (*s.slow_pairs, *s.fast_pairs)}
    chosen: list[Probe] = []
    busy: dict[int, set[Guid]] = defaultdict(set)
    for lk, direction in tied_keys:
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
