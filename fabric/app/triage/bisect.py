"""Which node or cable is slow: the rounds of ``ibfab triage``, over any backend (the lab's
simulated one, SSH, Slurm). Each round runs its tests at once; what a round rules out is never
tested again.

1. **single-node runs**, every node alone at once (its GPUs over NVLink/PCIe): a node below
   85 % of its peers' median is the culprit (a GPU-bound node); a node whose run fails is too.
2. **per-rail ib_write_bw pairs**, all rails at once, as a ring: host i writes to host i+1 on
   every rail, so every HCA and cable carries one pair out and one in. A cable slow both ways
   shows as both pairs of its host on its rail: that cable. A pair slow one way only is split
   in the next round against hosts whose rail ran fine; a pair still slow only together points
   at the route between them. Two hosts alone cannot tell their ends apart unless the fabric
   shows one cable trained below its peers.
3. **halving with nccl-tests**: the hosts still under suspicion are split in two and each half
   runs the collective alone (a half of one host is joined by a host already cleared); a half
   below the busbw the fabric should give (:mod:`probes.nccl_model`) holds the culprit, the
   other is cleared. When both halves are fine, the whole set runs once more: fine, the fabric
   is fine and the problem is elsewhere; slow, it is slow only across the halves (the cables
   between them, or the routing: ``ibfab sweep``).

At most ceil(log2 n) + 2 rounds find one slow node or cable among n hosts (2 + ceil(log2 n) for
a node only the collective sees; 3 for a cable or a GPU-bound node; 4 to clear a clean set).
The first culprit ends the triage; other tests that were slow are listed beside it.

A test that lost a node (:mod:`fabric.app.triage.lost`) is not judged, never slow: the node is a
finding of its own, the rounds go on without it (one more round in the budget for each round that
lost one), and a conclusion that rested on a run with it (a slow half) is not drawn by
elimination. A test that did not start for a reason naming no node blames nothing; where the
verdict needed it, the triage ends undecided.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from fabric.app.triage.lost import LostNode, Unjudged
from probes.expect import SLOW_RATIO
from probes.inventory import fold_names
from probes.labtraffic import PERFTEST_EFFICIENCY
from probes.nccl_model import LARGE_BYTES, LOW, BusbwVerdict, FabricFacts, judge_busbw
from probes.nccl_parse import NcclTestResult


@dataclass(frozen=True)
class PairOutcome:
    """One ib_write_bw pair: ``client`` writes to ``server`` on ``rail``; ``expected_gbps`` is what
    its route's cables should give (their design rates)."""

    client: str
    server: str
    rail: int
    gbps: float | None
    expected_gbps: float | None
    error: str | None = None
    route: tuple[str, ...] = ()  # the cables between the two HCAs, as names
    unjudged: Unjudged | None = None  # a node lost, or no start for a reason not known: not judged


@dataclass(frozen=True)
class RunOutcome:
    """One nccl-tests run over ``hosts`` (a result, or why there is none)."""

    hosts: tuple[str, ...]
    result: NcclTestResult | None
    error: str | None = None
    ranks: int | None = None  # the ranks launched, for an output that does not list them
    unjudged: Unjudged | None = None  # a node lost, or no start for a reason not known: not judged


class TriageBackend(Protocol):
    """Runs one round of tests at once."""

    name: str

    def single_nodes(self, hosts: Sequence[str]) -> list[RunOutcome]: ...

    def pairs(self, pairs: Sequence[tuple[str, str, int]]) -> list[PairOutcome]: ...

    def collectives(self, sets: Sequence[Sequence[str]]) -> list[RunOutcome]: ...


@dataclass(frozen=True)
class RoundRun:
    """One test of a round and how it was judged."""

    label: str
    hosts: tuple[str, ...]
    measured: float | None  # GB/s busbw (nccl-tests) or Gb/s (ib_write_bw)
    unit: str
    bar: float | None  # slow under this
    slow: bool
    error: str | None = None
    verdict: BusbwVerdict | None = None
    rail: int | None = None
    route: tuple[str, ...] = ()  # ib_write_bw: the cables between the two HCAs
    unjudged: Unjudged | None = None  # says nothing about the fabric (never slow)


@dataclass(frozen=True)
class TriageRound:
    """One round: its tests, the hosts it cleared for the collective (halves, whole set) and what
    else it ruled out when nothing of its kind was slow (``gpus``: every node's GPUs; ``cables``:
    every HCA and host cable of every rail, both ways)."""

    number: int
    kind: str  # single-node, pairs, split pairs, halves, whole set
    runs: tuple[RoundRun, ...]
    ruled_out: tuple[str, ...]  # hosts cleared by this round
    suspects: tuple[str, ...]  # still under suspicion after it
    cleared_kind: str | None = None  # 'gpus', 'cables' when the round found nothing slow


@dataclass(frozen=True)
class Culprit:
    """What the triage names, and the tests that show it.

    ``kind``: node (a node slow alone, or the only suspect of a slow collective), cable (a host's
    HCA cable on one rail), route (cables between two hosts on one rail), across (slow only when
    both halves run together), pair (two hosts whose ends cannot be told apart).
    """

    kind: str
    hosts: tuple[str, ...]
    rail: int | None
    hca: str | None  # the HCA of a cable culprit
    leaf: str | None
    reason: str  # single_node_slow, single_node_failed, both_ways, split, alone_with_cleared, by_elimination, across_halves, two_hosts
    evidence: tuple[tuple[int, RoundRun], ...]  # (round, test)
    trained_below: tuple[float, float] | None = None  # the cable trains at x Gb/s where its peers give y
    route: tuple[str, ...] = ()


@dataclass(frozen=True)
class TriageReport:
    hosts: tuple[str, ...]
    backend: str
    rounds: tuple[TriageRound, ...]
    culprit: Culprit | None
    also_slow: tuple[str, ...] = ()  # other tests slow beside the culprit (labels)
    budget: int = 0
    lost: tuple[LostNode, ...] = ()  # nodes that stopped answering: node findings, never cables
    undecided: str | None = None  # why the rounds ended without a verdict (see UNDECIDED)
    undecided_evidence: tuple[tuple[int, RoundRun], ...] = ()
    slurm_jobs: tuple[str, ...] = ()  # the Slurm job(s) whose steps ran the tests (sacct -j)

    @property
    def fabric_fine(self) -> bool:
        """Nothing named, nothing lost, nothing left undecided, every test judged."""
        return self.culprit is None and not self.lost and self.undecided is None and not self.not_judged

    @property
    def not_judged(self) -> tuple[tuple[int, RoundRun], ...]:
        return tuple((r.number, run) for r in self.rounds for run in r.runs if run.unjudged is not None)

    @property
    def whole_set_ran(self) -> bool:
        """Whether all the hosts ran one collective together (a clean set of three may not, within
        its round budget: each of its hosts ran in a healthy collective with others)."""
        return any(r.kind == "whole set" and set(r.runs[0].hosts) == set(self.hosts) for r in self.rounds)


def round_budget(n: int) -> int:
    """ceil(log2 n) + 2: the rounds a triage of ``n`` hosts may take."""
    return math.ceil(math.log2(max(n, 2))) + 2


def best_busbw(result: NcclTestResult) -> float | None:
    """The best busbw at the judged sizes (all sizes when none is large)."""
    rows = [r for r in result.rows if r.size >= LARGE_BYTES] or list(result.rows)
    return max((max(r.out_of_place.busbw, r.in_place.busbw) for r in rows), default=None)


# Why the rounds may end without a verdict (TriageReport.undecided).
UNDECIDED = (
    "unknown_failure",  # a test the verdict needed did not start, for a reason that names no node
    "suspects_lost",  # the slow set's hosts still answering ran at rate: its slowness left with the lost node
    "too_few_hosts",  # fewer than two hosts still answer
    "budget",  # the rounds allowed (one more for each round that lost a node) were spent
)


@dataclass
class _State:
    facts: FabricFacts
    hosts: list[str]  # the hosts still answering
    rounds: list[TriageRound] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)
    also_slow: list[str] = field(default_factory=list)
    lost: list[LostNode] = field(default_factory=list)
    budget: int = 0
    undecided: str | None = None
    undecided_evidence: tuple[tuple[int, RoundRun], ...] = ()

    def lose(self, number: int, runs: Sequence[RoundRun]) -> set[str]:
        """Record the nodes round ``number`` lost and test without them from now on; a round that
        lost one gives the bisection one more round (its tests run again without it)."""
        gone: set[str] = set()
        for r in runs:
            for x in r.unjudged.lost if r.unjudged is not None else ():
                if x.host in self.hosts and x.host not in gone:
                    self.lost.append(LostNode(x.host, number, r.label, x.said, x.state))
                    gone.add(x.host)
        if gone:
            self.hosts = [h for h in self.hosts if h not in gone]
            self.budget += 1
        return gone

    def undecide(self, why: str, evidence: Sequence[tuple[int, RoundRun]]) -> None:
        self.undecided, self.undecided_evidence = why, tuple(evidence)

    def add(
        self,
        kind: str,
        runs: list[RoundRun],
        ruled_out: Sequence[str],
        suspects: Sequence[str],
        cleared: str | None = None,
    ) -> int:
        fresh = [h for h in ruled_out if h not in self.cleared]
        self.cleared += fresh
        number = len(self.rounds) + 1
        self.rounds.append(TriageRound(number, kind, tuple(runs), tuple(fresh), tuple(suspects), cleared))
        return number


def _lost_in(runs: Sequence[RoundRun]) -> set[str]:
    return {x.host for r in runs if r.unjudged is not None for x in r.unjudged.lost}


def _unjudged_run(label: str, hosts: Sequence[str], unit: str, u: Unjudged, error: str | None) -> RoundRun:
    return RoundRun(label, tuple(hosts), None, unit, None, False, error or u.said, unjudged=u)


def _single_round(st: _State, backend: TriageBackend) -> Culprit | None:
    outcomes = backend.single_nodes(st.hosts)
    best = {
        o.hosts[0]: best_busbw(o.result)
        if o.unjudged is None and o.result is not None and o.result.ok
        else None
        for o in outcomes
    }
    runs: list[RoundRun] = []
    bad: list[RoundRun] = []
    for o in outcomes:
        host = o.hosts[0]
        if o.unjudged is not None:
            runs.append(_unjudged_run(f"{host} alone", (host,), "GB/s busbw", o.unjudged, o.error))
            continue
        others = [v for h, v in best.items() if h != host and v is not None]
        ref = statistics.median(others) if others else None
        value = best[host]
        error = o.error or (o.result.error if o.result is not None else None)
        bar = None if ref is None else ref * LOW
        slow = error is not None or (value is not None and bar is not None and value < bar)
        run = RoundRun(f"{host} alone", (host,), value, "GB/s busbw", bar, slow, error)
        runs.append(run)
        if slow:
            bad.append(run)
    gone = _lost_in(runs)
    suspects = [r.hosts[0] for r in bad] or [h for h in st.hosts if h not in gone]
    judged_all = all(r.unjudged is None for r in runs)
    number = st.add("single-node", runs, [], suspects, None if bad or not judged_all else "gpus")
    st.lose(number, runs)
    if not bad:
        return None
    first = min(bad, key=lambda r: (r.error is None, r.measured or 0.0))
    st.also_slow += [r.label for r in bad if r is not first]
    reason = "single_node_failed" if first.error else "single_node_slow"
    return Culprit("node", first.hosts, None, None, None, reason, ((number, first),))


def _pair_bar(p: PairOutcome) -> float | None:
    return None if p.expected_gbps is None else p.expected_gbps * PERFTEST_EFFICIENCY * SLOW_RATIO


def _pair_run(p: PairOutcome) -> RoundRun:
    label = f"{p.client} -> {p.server} rail {p.rail}"
    if p.unjudged is not None:
        return replace(_unjudged_run(label, (p.client, p.server), "Gb/s", p.unjudged, p.error), rail=p.rail)
    bar = _pair_bar(p)
    slow = p.error is not None or p.gbps is None or (bar is not None and p.gbps < bar)
    return RoundRun(
        label, (p.client, p.server), p.gbps, "Gb/s", bar, slow, p.error, None, p.rail, p.route
    )  # fmt: skip


def _cable_culprit(
    st: _State, host: str, rail: int, reason: str, evidence: list[tuple[int, RoundRun]]
) -> Culprit:
    hcas = st.facts.of(host) or ()
    hca = hcas[rail] if rail < len(hcas) else None
    below = (
        (hca.trained_gbps, hca.gbps)
        if hca is not None and hca.trained_gbps is not None and hca.below_design
        else None
    )
    return Culprit(
        "cable", (host,), rail, hca.name if hca else None, hca.leaf if hca else None, reason, tuple(evidence),
        below,
    )  # fmt: skip


def _pairs_round(st: _State, backend: TriageBackend) -> Culprit | None:
    ring = list(st.hosts)
    n = len(ring)
    rails = min(len(st.facts.of(h) or ()) for h in ring)
    # a ring: host i writes to host i+1 (two hosts: each to the other), on every rail at once
    wanted = [(ring[i], ring[(i + 1) % n], r) for r in range(rails) for i in range(n)]
    outcomes = backend.pairs(wanted)
    runs = [_pair_run(p) for p in outcomes]
    slow = [r for r in runs if r.slow]
    gone = _lost_in(runs)
    judged_all = all(r.unjudged is None for r in runs)
    suspects = sorted({h for r in slow for h in r.hosts}) or [h for h in ring if h not in gone]
    number = st.add("pairs", runs, [], suspects, None if slow or not judged_all else "cables")
    st.lose(number, runs)
    if not slow:
        return None
    by_rail: dict[int, list[RoundRun]] = {}
    for r in slow:
        by_rail.setdefault(r.rail or 0, []).append(r)
    for rail, bad in sorted(by_rail.items()):
        count: dict[str, list[RoundRun]] = {}
        for r in bad:
            for h in r.hosts:
                count.setdefault(h, []).append(r)
        both = [h for h, rs in count.items() if len(rs) >= 2]
        if n > 2 and both:
            host = both[0]
            culprit = _cable_culprit(st, host, rail, "both_ways", [(number, r) for r in count[host]])
            st.also_slow += [r.label for r in slow if r not in count[host]]
            return culprit
        if n == 2:
            a, b = ring
            for h in (a, b):
                hca = (st.facts.of(h) or ())[rail]
                if hca.below_design:
                    st.also_slow += [r.label for r in slow if r not in bad]
                    return _cable_culprit(st, h, rail, "both_ways", [(number, r) for r in bad])
            return Culprit("pair", (a, b), rail, None, None, "two_hosts", tuple((number, r) for r in bad))
        return _split_pair(st, backend, bad[0], [(number, r) for r in bad], slow)
    return None


def _split_pair(
    st: _State,
    backend: TriageBackend,
    pair: RoundRun,
    evidence: list[tuple[int, RoundRun]],
    slow: list[RoundRun],
) -> Culprit | None:
    """One pair slow one way: each end against a host whose rail ran fine, in one round. A test of
    it that lost a node leaves the pair to the halving (None), unless the other test was slow."""
    a, b = pair.hosts
    rail = pair.rail or 0
    busy = {h for r in slow if r.rail == rail for h in r.hosts}
    fine = [h for h in st.hosts if h not in busy]
    if len(fine) < 2:
        return Culprit("pair", (a, b), rail, None, None, "two_hosts", tuple(evidence))
    c, d = fine[0], fine[1]
    outcomes = backend.pairs([(a, c, rail), (d, b, rail)])
    runs = [_pair_run(p) for p in outcomes]
    number = st.add("split pairs", runs, [], [a, b])
    st.lose(number, runs)
    a_slow, b_slow = runs[0].slow, runs[1].slow
    st.also_slow += [r.label for r in slow if r is not pair]
    unjudged = [r for r in runs if r.unjudged is not None]
    if unjudged and not (a_slow or b_slow):
        st.also_slow.append(pair.label)
        if not _lost_in(unjudged):
            st.undecide("unknown_failure", [*evidence, *((number, r) for r in unjudged)])
        return None
    if a_slow and not b_slow:  # (b's test slow, or not judged: a's is slow against a fine rail)
        return _cable_culprit(st, a, rail, "split", [*evidence, (number, runs[0]), (number, runs[1])])
    if b_slow and not a_slow:
        return _cable_culprit(st, b, rail, "split", [*evidence, (number, runs[1]), (number, runs[0])])
    if not a_slow and not b_slow:
        return Culprit(
            "route", (a, b), rail, None, None, "split", (*evidence, (number, runs[0]), (number, runs[1])), None,
            pair.route,
        )  # fmt: skip
    return Culprit(
        "pair", (a, b), rail, None, None, "two_hosts", (*evidence, (number, runs[0]), (number, runs[1]))
    )


def _collective_runs(st: _State, outcomes: Sequence[RunOutcome], suspects: set[str]) -> list[RoundRun]:
    runs = []
    for o in outcomes:
        joined = [h for h in o.hosts if h not in suspects]
        label = (
            ", ".join(o.hosts)
            if len(o.hosts) <= 4
            else f"{fold_names(o.hosts)} ({len(o.hosts)} hosts)"  # a lost host's gap shows
        )
        if joined:
            label += f" (with cleared {', '.join(joined)})"
        if o.unjudged is not None:
            runs.append(_unjudged_run(label, o.hosts, "GB/s busbw", o.unjudged, o.error))
            continue
        # Judged on the hosts the test ran on: nccl-tests names each rank's host as the machine
        # calls itself, which need not be the fabric's name for it (or is not printed at all).
        verdict = (
            judge_busbw(o.result, st.facts, hosts=o.hosts, nranks=o.result.nranks or o.ranks)
            if o.result is not None
            else None
        )
        error = o.error or (o.result.error if o.result is not None else None)
        slow = error is not None or (verdict is not None and verdict.verdict == "low")
        bar = verdict.model.low_gbs if verdict is not None and verdict.model is not None else None
        measured = best_busbw(o.result) if o.result is not None else None
        runs.append(RoundRun(label, o.hosts, measured, "GB/s busbw", bar, slow, error, verdict))
    return runs


def _tests(st: _State, pool: list[str]) -> tuple[list[list[str]], list[list[str]]]:
    """The pool's two halves as tests; a half of one host joined by a cleared host (else by a host
    outside the pool), a different one for each; a half left without one waits (untested)."""
    cut = (len(pool) + 1) // 2
    halves = [h for h in (pool[:cut], pool[cut:]) if h]
    pads = [h for h in st.cleared if h not in pool and h in st.hosts] + [
        h for h in st.hosts if h not in pool and h not in st.cleared
    ]
    tests: list[list[str]] = []
    untested: list[list[str]] = []
    for half in halves:
        if len(half) >= 2:
            tests.append(half)
        elif pads:
            tests.append([*half, pads.pop(0)])
        else:
            untested.append(half)
    if not tests:  # two hosts and nothing cleared: they run together
        return [pool], []
    return tests, untested


def _halves(st: _State, backend: TriageBackend) -> Culprit | None:
    """Halve the hosts under suspicion until one is left (see the module docstring). A test that
    lost a node is not judged: the rest of its hosts stay suspect and run again without it."""
    pool = list(st.hosts)
    known_slow = False  # the pool is known to hold a culprit (a run of it, or of its half, was slow)
    slow_evidence: tuple[tuple[int, RoundRun], ...] = ()
    slow_hosts: set[str] = set()  # the hosts of that slow run (the culprit was one of them)
    while len(st.rounds) < st.budget:
        pool = [h for h in pool if h in st.hosts]
        if known_slow and not pool and slow_hosts & {x.host for x in st.lost}:
            st.undecide("suspects_lost", slow_evidence)  # the slow run's hosts left were all lost
            return None
        if len(st.hosts) < 2 or not pool:
            if len(st.hosts) < 2:
                st.undecide("too_few_hosts", slow_evidence)
            return None
        tests, untested = _tests(st, pool)
        whole = tests == [pool]
        runs = _collective_runs(st, backend.collectives(tests), set(pool))
        done = list(zip(tests, runs, strict=True))
        gone = _lost_in(runs)
        slow = [(t, r) for t, r in done if r.slow]
        fine = [h for t, r in done if not r.slow and r.unjudged is None for h in t]
        waiting = [h for t, r in done if r.unjudged is not None for h in t if h in pool and h not in gone]
        unknown = [r for _, r in done if r.unjudged is not None and not r.unjudged.lost]
        kind = "whole set" if whole else "halves"
        if slow:
            test, run = slow[0]
            st.also_slow += [r.label for _, r in slow[1:]]
            suspects = [h for h in test if h in pool]
            number = st.add(kind, runs, fine, suspects)
            st.lose(number, runs)
            if len(suspects) == 1:
                reason = "alone_with_cleared" if len(test) > 1 else "by_elimination"
                return Culprit("node", tuple(suspects), None, None, None, reason, ((number, run),))
            if whole and len(pool) == 2 and not untested and not st.cleared:
                return Culprit("pair", tuple(pool), None, None, None, "two_hosts", ((number, run),))
            pool, known_slow, slow_evidence, slow_hosts = suspects, True, ((number, run),), set(test)
            continue
        number = st.add(kind, runs, fine, [*waiting, *(h for u in untested for h in u)])
        st.lose(number, runs)
        if unknown:  # no node to blame, and nothing to follow: say so and stop
            st.undecide("unknown_failure", [*slow_evidence, *((number, r) for r in unknown)])
            return None
        trusted = known_slow and not slow_hosts & {x.host for x in st.lost}
        if gone:  # the lost test's other hosts (and any half left waiting) run again without it
            pool = [*waiting, *(h for u in untested for h in u)]
            if not pool and known_slow:
                st.undecide("suspects_lost", (*slow_evidence, *((number, r) for r in runs)))
            if not pool:
                return None
            continue
        if untested:
            pool = untested[0]
            if trusted:  # its other half ran fine: the one left holds the culprit
                evidence = (*slow_evidence, *((number, r) for r in runs))
                return Culprit("node", tuple(pool), None, None, None, "by_elimination", evidence)
            continue
        if known_slow and not trusted:  # slow with a node since lost, fine without it
            st.undecide("suspects_lost", (*slow_evidence, *((number, r) for r in runs)))
            return None
        if whole or len(pool) == 1:
            return (
                None  # the whole set ran at the rate the fabric should give (or every host did, with others)
            )
        if known_slow:  # slow together, fine in halves
            return Culprit(
                "across",
                tuple(pool),
                None,
                None,
                None,
                "across_halves",
                (*slow_evidence, *((number, r) for r in runs)),
            )
        runs = _collective_runs(st, backend.collectives([pool]), set(pool))
        again = st.add("whole set", runs, [] if runs[0].slow else pool, pool if runs[0].slow else [])
        if st.lose(again, runs) or runs[0].unjudged is not None:
            if not runs[0].unjudged or not runs[0].unjudged.lost:
                st.undecide("unknown_failure", [(again, runs[0])])
            return None  # the halves ran at rate; the whole set (without the lost node) could not be judged
        if not runs[0].slow:
            return None
        evidence = (*((number, r) for r in st.rounds[number - 1].runs), (again, runs[0]))
        return Culprit("across", tuple(pool), None, None, None, "across_halves", evidence)
    if st.lost or any(r.unjudged is not None for rnd in st.rounds for r in rnd.runs):
        st.undecide("budget", slow_evidence)
    return None


def triage(hosts: Sequence[str], facts: FabricFacts, backend: TriageBackend) -> TriageReport:
    """Run the rounds (see the module docstring) and name the culprit, or none; name the nodes
    lost on the way, and what could not be decided."""
    st = _State(facts, list(hosts), budget=round_budget(len(hosts)))
    culprit = None
    for stage in (_single_round, _pairs_round, _halves):
        if len(st.hosts) < 2:
            st.undecide("too_few_hosts", ())
        if culprit is not None or st.undecided is not None:
            break
        culprit = stage(st, backend)
    return TriageReport(
        tuple(hosts), backend.name, tuple(st.rounds), culprit, tuple(st.also_slow), st.budget,
        tuple(st.lost), st.undecided, st.undecided_evidence,
    )  # fmt: skip


__all__ = [
    "UNDECIDED",
    "Culprit",
    "PairOutcome",
    "RoundRun",
    "RunOutcome",
    "TriageBackend",
    "TriageReport",
    "TriageRound",
    "best_busbw",
    "round_budget",
    "triage",
]
