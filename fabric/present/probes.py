"""A sweep's pairs for people, each once with its re-test history (the TUI's probes screens)."""

from __future__ import annotations

from collections.abc import Sequence

from fabric.app.readmodel.operations import PairHistory
from fabric.app.sweeps.sweep import ShownSweep
from probes.localize import Suspect
from topology.model import Guid


def pair_verdict(p: PairHistory) -> str:
    """SLOW (measured, judged slow), FAILED (no measurement) or ok, from the pair's last attempt."""
    if p.slow:
        return "SLOW"
    return "FAILED" if not p.final.ok else "ok"


def attempts_text(p: PairHistory) -> str:
    """``120 → 118 → 119 of 400`` (every attempt in order; one without a measurement as its error),
    ``97 of 100 expected (line 200)`` where the pair's route gives less than its line rate (a pair
    sharing a cable in its round): the line rate alone read as half speed."""
    parts = [
        f"{r.gbps:.0f}"
        if r.gbps is not None
        else ("failed" + (f" ({r.error})" if r.error else ""))
        if not r.ok
        else "-"
        for r in p.attempts
    ]
    line = p.final.line_rate_gbps
    expected = p.final.expected_gbps
    if expected and (not line or abs(expected - line) >= 0.5):
        rest = f" of {expected:.0f} expected" + (f" (line {line:.0f})" if line else "")
    else:
        rest = f" of {line:.0f}" if line else ""
    return " → ".join(parts) + rest


def pair_counts(shown: ShownSweep, pairs: Sequence[PairHistory]) -> str:
    """The figures above the pairs table, counted from the same rows it lists."""
    slow = sum(1 for p in pairs if p.slow)
    failed = sum(1 for p in pairs if not p.final.ok and not p.slow)
    retested = sum(1 for p in pairs if len(p.attempts) > 1)
    return (
        f"{len(pairs)} pairs ({len(shown.results)} results, {retested} re-tested): "
        f"{slow} slow, {failed} failed ({shown.pattern})"
    )


def suspect_row(s: Suspect, names: dict[Guid, str]) -> tuple[str, str, str, int, int, str]:
    a, b = s.link.a, s.link.b
    return (
        f"{names.get(a.guid, a.guid)}/{a.port}",
        f"{names.get(b.guid, b.guid)}/{b.port}",
        f"{s.score:.2f}",
        len(s.slow_pairs),
        len(s.fast_pairs),
        s.reason,
    )
