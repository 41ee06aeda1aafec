"""Counter collection for people: one line per stored snapshot."""

from __future__ import annotations

import time

from fabric.app.collect import SnapshotOutcome


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
