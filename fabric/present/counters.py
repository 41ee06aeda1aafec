"""Counter collection for people: one line per stored snapshot."""

from __future__ import annotations

import time

from fabric.app.discovery.ibdiagnet import StoredRun
from fabric.app.health.collect import SnapshotOutcome


def snapshot_line(outcome: SnapshotOutcome) -> str:
    """The one-line summary the CLI prints per snapshot."""
    when = time.strftime("%H:%M:%S", time.localtime(outcome.taken_at))
    parts = [
        f"{when} snapshot {outcome.snapshot_id}: {outcome.ports_read} ports read, "
        f"{outcome.unreachable} unreachable, {outcome.seconds:.2f} s"
    ]
    if outcome.topology_saved:
        parts.append(f"topology {outcome.topology_id} saved")
    if outcome.link_events:
        downs = sum(1 for e in outcome.link_events if e.kind == "down")
        parts.append(f"{downs} links down, {len(outcome.link_events) - downs} up")
    if outcome.problems:
        parts.append(f"{outcome.problems} unparsable lines")
    return "; ".join(parts)


def stored_run_line(run: StoredRun) -> str:
    """What storing an ibdiagnet run's counters did, in one line."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.taken_at))
    when += "" if run.time_from == "run" else " (the file's time: the run did not say when it ran)"
    if run.already_stored:
        return f"already stored: snapshot {run.counter_snapshot_id} ({run.ports} ports) is this run of {when}"
    topology = (
        f"topology {run.topology_id} saved"
        if run.topology_saved
        else f"topology {run.topology_id} (same cabling)"
    )
    parts = [f"snapshot {run.counter_snapshot_id}: {run.ports} ports read by ibdiagnet at {when}", topology]
    if run.modules:
        parts.append(f"cable inventory of {run.modules} modules kept")
    if run.problems:
        parts.append(f"{run.problems} unreadable counter rows (kept in the raw capture)")
    return "; ".join(parts)
