"""Probe sweeps for the TUI: stored sweeps, starting one on a lab with progress, the suspect
report, and the measured bandwidth of every cable the latest sweep crossed.

Everything goes through :mod:`fabric.app.sweeps.sweep` (what ``ibfab sweep run|show`` call); this module
only reshapes what it returns for a screen.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from fabric.app.session import Session, StoreAccess
from fabric.store import StoredSweep
from probes.sweep import SweepStep
from topology.errors import StoreError, UsageError
from topology.model import Guid, Link, LinkKey, PortRef


@dataclass(frozen=True, slots=True)
class CableBandwidth:
    """What the pairs crossing one cable measured, each as a share of its line rate."""

    key: LinkKey
    pairs: int
    median_share: float
    min_share: float
    median_gbps: float | None  # of the pairs that gave a figure


@dataclass(frozen=True)
class SweepBandwidth:
    """Per-cable bandwidth of one stored sweep (the last attempt of each pair counts)."""

    sweep_id: int
    pattern: str
    started: float
    cables: Mapping[LinkKey, CableBandwidth]


def sweeps_of(stored: StoreAccess, host: str | None = None, limit: int = 20) -> list[StoredSweep]:
    """The newest ``limit`` sweeps, newest first (only their pairs involving ``host`` if given);
    none without a store (looking creates none)."""
    found = stored.read()
    if found is None:
        return []
    with found as store:
        heads = store.list_sweeps()[-limit:]
        loaded = [store.load_sweep(s.id) for s in reversed(heads)]
    if host is None:
        return loaded
    return [
        StoredSweep(s.sweep, tuple(r for r in s.results if host in (r.client_host, r.server_host)))
        for s in loaded
    ]


def run_sweep(session: Session, progress: Callable[[SweepStep], None], pattern: str = "rail-pairs") -> int:
    """Plan and run a sweep on the session's lab (what ``ibfab sweep run --lab`` does); returns its id."""
    from fabric.app.sweeps import sweep as sweeps

    if not session.driver.simulated:
        raise UsageError("a sweep from the TUI needs --lab NAME")
    ctx = sweeps.prepare(session, pattern)
    outcome = sweeps.run_lab(ctx, session, progress=progress)
    return sweeps.save(outcome, ctx.source, sweeps.names_of(ctx.discovery), session.store)


def sweep_bandwidth(stored: StoreAccess, sweep_id: int | None = None) -> SweepBandwidth | None:
    """Per cable, the pairs of a sweep (the newest when no id) whose route crossed it: median and
    minimum share of line rate (a failed pair counts 0). None when no sweep is stored.

    Routes come from the sweep's stored records (``fabric.app.sweeps.sweep.save`` keeps each pair's path);
    a sweep stored without them (nccl runs) gives no cables.
    """
    with stored.write() as store:
        heads = store.list_sweeps()
        if not heads:
            return None
        head = heads[-1] if sweep_id is None else next((h for h in heads if h.id == sweep_id), None)
        if head is None:
            raise StoreError(f"{store.path}: no probe sweep {sweep_id}")
        loaded = store.load_sweep(head.id)
        caps = sorted({r.capture_id for r in loaded.results if r.capture_id is not None})
        docs = [store.load_capture(c).text for c in caps]
    latest: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    for text in docs:
        for rec in _records(text, head.id):
            pair = (str(rec["client"]["guid"]), str(rec["server"]["guid"]))
            attempt = int(rec.get("attempt", 0))
            if pair not in latest or attempt >= latest[pair][0]:
                latest[pair] = (attempt, rec)
    shares: dict[LinkKey, list[float]] = defaultdict(list)
    gbps: dict[LinkKey, list[float]] = defaultdict(list)
    for _, rec in latest.values():
        rate, got = rec.get("line_rate_gbps"), rec.get("gbps")
        if not rate:
            continue
        # a slow pair (stored with ok false since ibfab-sweep/2) still measured: its figure counts
        share = float(got) / float(rate) if got is not None else 0.0
        for a, pa, b, pb, width, speed in rec.get("path") or ():
            key = Link(PortRef(Guid(a), int(pa)), PortRef(Guid(b), int(pb)), int(width), str(speed)).key
            shares[key].append(share)
            if got is not None:
                gbps[key].append(float(got))
    cables = {
        key: CableBandwidth(
            key,
            len(values),
            statistics.median(values),
            min(values),
            statistics.median(gbps[key]) if gbps.get(key) else None,
        )
        for key, values in shares.items()
    }
    return SweepBandwidth(head.id, head.pattern, head.started, MappingProxyType(cables))


def _records(text: str, sweep_id: int) -> list[dict[str, Any]]:
    try:
        doc = json.loads(text)
        records = doc["results"] if isinstance(doc, dict) else []
    except (ValueError, KeyError) as exc:
        raise StoreError(f"sweep {sweep_id}: unreadable stored records ({exc})") from exc
    return [r for r in records if isinstance(r, dict) and "client" in r and "server" in r]
