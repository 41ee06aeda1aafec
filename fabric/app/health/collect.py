"""Counter collection use case: discover, keep topology changes as link events, read every port, store.

One collection (:func:`collect_once`) runs discovery through the given source, saves the topology
snapshot only when its cables differ from the latest stored one (cables removed become ``down``
link events, cables added ``up`` events, at the discovery time: ibsim, like a real switch that
is unplugged, does not always move LinkDownedCounter, so a flap must also be seen this way),
then reads the counters of every cabled port with the two ibqueryerrors passes
(:func:`fabric.counters.reading.collect_fabric`) and stores the raw texts, the parsed rows and
the unreachable ports (``reachable`` False, with the tool's reason) as ONE counter snapshot.

:class:`Collector` repeats that (``ibfab counters collect --every 60s``); a failed collection is
recorded as a failed run and the loop goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fabric.app.discovery.discover import discover
from fabric.counters.merge import sound_row, unreachable_row
from fabric.counters.reading import CollectionResult, RunTool, collect_fabric
from fabric.counters.samples import Unreachable
from fabric.store import RawCapture, Store, StoreDamaged
from fabric.store.captures import CompressAhead
from probes.transport import ANY_EXIT_CODE, CommandResult
from topology._speed import gc_paused
from topology.diff import LinkEvent, diff_fabrics
from topology.errors import IbfabError, UsageError

if TYPE_CHECKING:
    from fabric.app.session import Session
    from topology.model import Fabric

COUNTERS_PARSER_VERSION = "ibqueryerrors/1"
TOOL_TIMEOUT = 300.0


def tool_runner(session: Session) -> RunTool:
    """How the counter tools run for the session's source: a CommandResult for any exit code (ibqueryerrors exits
    1 when it finds errors, perfquery 255 when a node does not answer); CommandFailed or HostError
    only when the tool could not run to the end (not found, timed out, connection lost)."""
    src, driver = session.source, session.driver
    if not src.runs_tools:
        raise UsageError(f"counters cannot be collected from {src.label} (use --lab, --ssh or this machine)")
    return lambda argv: driver.run_tool(argv, TOOL_TIMEOUT, ok_codes=ANY_EXIT_CODE)


@dataclass(frozen=True, slots=True)
class SnapshotOutcome:
    """What one collection stored."""

    snapshot_id: int
    taken_at: float
    topology_id: int
    topology_saved: bool  # the cabling changed (or it was the first): a new topology snapshot
    link_events: tuple[LinkEvent, ...]
    ports_read: int
    unreachable: int
    seconds: float
    notes: tuple[str, ...] = ()
    problems: int = 0  # unparsable tool lines (kept in the raw captures)

    def to_dict(self) -> dict[str, object]:
        return {
            "snapshot_id": self.snapshot_id,
            "taken_at": self.taken_at,
            "topology_id": self.topology_id,
            "topology_saved": self.topology_saved,
            "link_events": [
                {
                    "time": e.time,
                    "kind": e.kind,
                    "a": {"guid": e.link[0][0], "port": e.link[0][1]},
                    "b": {"guid": e.link[1][0], "port": e.link[1][1]},
                }
                for e in self.link_events
            ],
            "ports_read": self.ports_read,
            "unreachable": self.unreachable,
            "seconds": self.seconds,
            "notes": list(self.notes),
            "problems": self.problems,
        }


def snapshot_rows(result: CollectionResult) -> list[tuple[object, ...]]:
    """Store rows (``fabric.store.PORT_COUNTER_FIELDS`` order) of a collection: the rows the
    collector made for the ports it read, then the unreachable ports (``reachable`` False, with the
    reason)."""
    rows: list[tuple[object, ...]] = [sound_row(r) for r in result.rows]
    for u in result.unreachable:
        if u.guid is None or u.port is None:
            continue  # a tool-level failure line: it is in the raw capture and the notes
        rows.append(unreachable_row(u, result.peers.get((u.guid, u.port)), result.time))
    return rows


@dataclass(frozen=True, slots=True)
class StoredCounters:
    """What :func:`store_counters` stored."""

    snapshot_id: int
    taken_at: float
    ports_read: int
    unreachable: int
    notes: tuple[str, ...]
    problems: int


def store_counters(
    store: Store,
    run_tool: RunTool,
    fabric: Fabric,
    clock: Callable[[], float],
    source: str,
    topology_id: int | None,
    before: Fabric | None = None,
) -> StoredCounters:
    """Read every cabled port of ``fabric`` and store the reading as one counter snapshot.

    ``before`` is the previous topology when the cabling changed: the cabled ports of nodes
    discovery no longer finds are stored as unreachable. The raw tool texts are compressed in a
    background thread as each run comes back (while the next one runs and while they are parsed),
    and the cycle collector stays paused until the ~200,000 short-lived containers of the
    collection are gone again (each full collection would walk the whole fabric model too).
    """
    with CompressAhead() as ahead, gc_paused():

        def run_and_compress(argv: Sequence[str]) -> CommandResult:
            result = run_tool(argv)
            ahead.add(capture_text(result))
            return result

        result = collect_fabric(run_and_compress, fabric, clock())
        rows = snapshot_rows(result)
        if before is not None:
            rows += vanished_rows(before, fabric, result.time)
        snapshot_id = store.save_counter_snapshot(
            result.time, source, topology_id, rows, raw_captures(result, source), ahead=ahead
        )
        read = sum(1 for r in rows if r[5])
        stored = StoredCounters(
            snapshot_id=snapshot_id,
            taken_at=result.time,
            ports_read=read,
            unreachable=len(rows) - read,
            notes=result.notes,
            problems=len(result.problems),
        )
        del result, rows  # freed while the collector is still paused: no collection walks them
    return stored


def vanished_rows(before: Fabric, after: Fabric, when: float) -> list[tuple[object, ...]]:
    """Unreachable rows for the cabled ports of nodes that discovery no longer finds (an unplugged
    or dead HCA, a switch that went away): their counters could not be read this time."""
    rows: list[tuple[object, ...]] = []
    for guid in sorted(before.nodes.keys() - after.nodes.keys()):
        node = before.nodes[guid]
        for port, far, _ in sorted(before.neighbours(guid), key=lambda x: x[0]):
            reason = f"not found by ibnetdiscover (was cabled to {far.guid} port {far.port})"
            rows.append(unreachable_row(Unreachable(guid, port, reason, node.lid), far, when))
    return rows


def capture_text(result: CommandResult) -> str:
    """How a tool run is kept: stdout, then stderr after a marker line."""
    if not result.stderr:
        return result.stdout
    return f"{result.stdout}\n# --- stderr (exit {result.exit_code})\n{result.stderr}"


def raw_captures(result: CollectionResult, source: str) -> list[RawCapture]:
    """Every tool run of a collection as it came back (see :func:`capture_text`)."""
    out = []
    for argv, res in result.raw.items():
        tool = argv[0].rsplit("/", 1)[-1] if argv else "?"
        out.append(
            RawCapture(
                "counters", tool, capture_text(res), result.time, source, argv, COUNTERS_PARSER_VERSION
            )
        )
    return out


def link_events_between(before: Fabric, after: Fabric, when: float, source: str) -> list[LinkEvent]:
    """Cables gone from ``before`` to ``after`` are ``down`` events, new ones ``up`` events."""
    d = diff_fabrics(before, after)
    return [LinkEvent(when, lk.key, "down", source) for lk in d.links_removed] + [
        LinkEvent(when, lk.key, "up", source) for lk in d.links_added
    ]


@dataclass
class Collector:
    """Collects snapshots from the session's source into one open store, remembering the latest
    topology."""

    store: Store
    session: Session
    clock: Callable[[], float] = time.time
    _topology: tuple[int, Fabric] | None = field(default=None, init=False)

    def _latest_topology(self) -> tuple[int, Fabric] | None:
        if self._topology is None and self.store.list_topologies():
            try:
                stored = self.store.load_topology("latest")
            except StoreDamaged:  # none reads: this collection stores a new one
                return None
            if stored.id != self.store.resolve_topology("latest"):
                # the newest is damaged: against an older one, its cable changes would be new again
                return None
            self._topology = (stored.id, stored.fabric)
        return self._topology

    def collect_once(self) -> SnapshotOutcome:
        """Discover, keep topology changes, read every port, store one snapshot (see module doc)."""
        self.store.close_dead_runs(self.clock())  # runs a killed collector or daemon left open
        start = time.monotonic()
        discovered_at = self.clock()
        d = discover(self.session)
        label = self.session.source.label
        latest = self._latest_topology()
        events: list[LinkEvent] = []
        saved = False
        if latest is None or not diff_fabrics(latest[1], d.fabric).empty:
            if latest is not None:
                events = link_events_between(latest[1], d.fabric, discovered_at, label)
            # one transaction: a topology change is never stored without its link events
            with self.store._write():
                topology_id = self.store.save_topology(
                    d.fabric, d.raw_text, tool="ibnetdiscover", source=label, taken_at=discovered_at
                )
                if events:
                    self.store.add_link_events(events)
            self._topology = (topology_id, d.fabric)
            saved = True
        else:
            topology_id = latest[0]
        stored = store_counters(
            self.store,
            tool_runner(self.session),
            d.fabric,
            self.clock,
            label,
            topology_id,
            latest[1] if latest is not None and saved else None,
        )
        return SnapshotOutcome(
            snapshot_id=stored.snapshot_id,
            taken_at=stored.taken_at,
            topology_id=topology_id,
            topology_saved=saved,
            link_events=tuple(events),
            ports_read=stored.ports_read,
            unreachable=stored.unreachable,
            seconds=time.monotonic() - start,
            notes=stored.notes,
            problems=stored.problems,
        )

    def run(
        self,
        every: float,
        count: int | None,
        on_snapshot: Callable[[SnapshotOutcome], None],
        on_failure: Callable[[IbfabError], None],
        sleep: Callable[[float], None] = time.sleep,
    ) -> tuple[int, int]:
        """Collect every ``every`` seconds, ``count`` times (None: until interrupted).

        Each collection is a run in the store (ok, or failed with its one-line error); a failed
        one is reported through ``on_failure`` and the loop goes on. Returns (stored, failed).
        """
        done = failed = 0
        next_at = time.monotonic()
        while count is None or done + failed < count:
            run_id = self.store.start_run(None, self.clock())
            try:
                outcome = self.collect_once()
            except IbfabError as exc:
                failed += 1
                self.store.finish_run(run_id, False, exc.one_line(), self.clock())
                on_failure(exc)
            else:
                done += 1
                self.store.finish_run(run_id, True, None, self.clock())
                on_snapshot(outcome)
            if count is not None and done + failed >= count:
                break
            next_at += every
            delay = next_at - time.monotonic()
            if delay < 0:  # a collection took longer than the interval: start the next one now
                next_at = time.monotonic()
                delay = 0.0
            sleep(delay)
        return done, failed


def collect_loop(
    session: Session,
    every: float,
    count: int | None,
    on_snapshot: Callable[[SnapshotOutcome], None],
    on_failure: Callable[[IbfabError], None],
) -> tuple[int, int]:
    """``ibfab counters collect``: :meth:`Collector.run` into the session's store (its fabric must
    be reachable: a lab must be running). Returns (stored, failed); Ctrl-C leaves every stored
    snapshot complete."""
    session.driver.check_ready()
    with session.store.write() as store:
        return Collector(store, session).run(every, count, on_snapshot, on_failure)


__all__ = [
    "Collector",
    "SnapshotOutcome",
    "StoredCounters",
    "capture_text",
    "collect_loop",
    "link_events_between",
    "raw_captures",
    "snapshot_rows",
    "store_counters",
    "tool_runner",
    "vanished_rows",
]
