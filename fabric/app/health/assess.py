"""Health use case: from the store to a scored report, and today's findings back into the store.

:func:`assess_store` loads the latest topology, the link events (cables discovery saw go and
come back) and the findings history, runs :func:`fabric.health.assess` over the stored
blocks of the window's counter snapshots, read a few snapshots at a time (so a day of snapshots
needs no more memory than an hour), with the cables that train below their peers (from the topology, the rule behind
discovery's ``degraded_link``), and records today's non-ok links in ``findings_history`` (one row
per link and kind of finding per UTC day, keeping the worst status of the day), so links that
keep failing become repeat offenders across days.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

from fabric.core.units import duration_spec, utc_time
from fabric.counters.deltas import OutOfOrder
from fabric.health import (
    HealthReport,
    HealthThresholds,
    LinkEvent,
    LinkHealth,
    PastFinding,
    Status,
    assess,
    in_time_order,
)
from fabric.health.cables import MIN_LINKS, SharedCableTrait, shared_cable_traits
from fabric.health.reading import ReadingFinding, judge_reading
from fabric.health.score import finding_kind
from fabric.store import CounterSnapshotInfo, FindingRecord, FindingSubject, Store
from topology.bulk import gc_paused
from topology.classify import classify, switch_name
from topology.errors import StoreError
from topology.model import Fabric, Guid, LinkKey, NodeKind
from topology.wiring import BelowPeers, links_below_peers

if TYPE_CHECKING:
    from fabric.app.session import Session, StoreAccess
    from fabric.health.snapshots import Snapshot

DAY_S = 86400.0
# Counter rows read and assessed at a time (whole snapshots): four snapshots of a 16,384-HCA
# fabric, ~100 MB as a frame. With the next piece read ahead, assessing a 50,000-port fabric peaks
# near 0.5 GB whether the window holds 60 snapshots or 240 (bench/bench_health.py).
PIECE_ROWS = 200_000
COLLECT_FIRST = "run `ibfab counters collect` first"
_OLD_STATUS = {"warning": Status.WARN, "error": Status.CRITICAL}


@dataclass(frozen=True, slots=True)
class OneReading:
    """The window holds one counter reading: error and traffic rates need two, so no link could
    be judged on them. ``ibdiagnet``: the reading is an ibdiagnet run's (the next one comes from
    running it again); ``elsewhere``: readings the store holds outside the window."""

    snapshot: CounterSnapshotInfo
    ibdiagnet: bool
    elsewhere: int

    def to_dict(self) -> dict[str, object]:
        return {
            "snapshot_id": self.snapshot.id,
            "taken_at": self.snapshot.taken_at,
            "source": self.snapshot.source,
            "ibdiagnet": self.ibdiagnet,
            "readings_outside_the_window": self.elsewhere,
        }


@dataclass(frozen=True, slots=True)
class AssessedHealth:
    """A report with what the CLI needs to name things."""

    report: HealthReport
    fabric: Fabric
    topology_id: int
    names: Mapping[str, str]  # node GUID -> what an operator calls it
    recorded: int  # findings written to findings_history by this assessment
    # Failing links sharing a cable vendor, part number or length beyond chance (from the newest
    # kept cable inventory; empty without one) and the run that inventory is from.
    cable_notes: tuple[SharedCableTrait, ...] = ()
    inventory: str | None = None
    one_reading: OneReading | None = None  # set when the window holds a single counter reading
    # Cables whose newest reading has a saturated counter, or (one reading) a large error total.
    readings: tuple[ReadingFinding, ...] = ()
    covered: tuple[float, float] | None = None  # the first and last reading in the window

    def to_dict(self) -> dict[str, Any]:
        """``ibfab health --json``: the report (links, nodes, summary), the cable notes, the cable
        inventory they rest on, the one reading when the window holds only one, what the newest
        reading says alone and the span the readings cover."""
        doc = self.report.to_dict()
        doc["cable_notes"] = [n.to_dict() for n in self.cable_notes]
        doc["cable_inventory"] = self.inventory
        doc["one_reading"] = self.one_reading.to_dict() if self.one_reading is not None else None
        doc["readings"] = [f.to_dict() for f in self.readings]
        summary = doc["summary"]
        if isinstance(summary, dict):  # the span the readings cover (the window is summary.window)
            summary["covered"] = list(self.covered) if self.covered is not None else None
        return doc

    def end_label(self, guid: str, port: int) -> str:
        return f"{self.names.get(guid, guid)}:{port}"

    def link_label(self, link: LinkHealth | ReadingFinding) -> str:
        """``leaf-su01-r0:3 <-> dgx-0001 mlx5_0:1`` (switch end first)."""
        a, b = link.a, link.b
        if self._is_hca(a.guid) and not self._is_hca(b.guid):
            a, b = b, a
        return f"{self.end_label(a.guid, a.port)} <-> {self.end_label(b.guid, b.port)}"

    def _is_hca(self, guid: str) -> bool:
        node = self.fabric.nodes.get(Guid(guid))
        return node is not None and node.kind is NodeKind.HCA


def node_names(fabric: Fabric) -> dict[str, str]:
    """Switches by their short name (``leaf-su01-r0``), HCAs by description (``dgx-0001 mlx5_0``)."""
    out: dict[str, str] = {}
    for guid, node in fabric.nodes.items():
        if node.kind is NodeKind.SWITCH:
            out[guid] = switch_name(node.description) or node.description or guid
        else:
            out[guid] = node.description or guid
    return out


def utc_day(epoch: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(epoch))


def _day_start(day: str) -> float:
    return float(calendar.timegm(time.strptime(day, "%Y-%m-%d")))


def _status(text: str) -> Status:
    try:
        return Status(text)
    except ValueError:
        return _OLD_STATUS.get(text, Status.WATCH)


def past_findings(records: Iterable[FindingRecord]) -> list[PastFinding]:
    """History records as the health model takes them: a link finding counts for both its ends."""
    out: list[PastFinding] = []
    for r in records:
        when, status = _day_start(r.day), _status(r.status)
        about = r.about
        if about is not None and about.link is not None:
            out.extend(PastFinding(when, guid, port, status) for guid, port in about.link)
        else:  # a node's finding
            out.append(
                PastFinding(when, about.node if about is not None and about.node else r.subject, None, status)
            )
    return out


def record_today(store: Store, report: HealthReport, now: float) -> int:
    """Record the non-ok links of ``report`` for today's UTC day; idempotent, keeps the worst status."""
    day = utc_day(now)
    earlier = {
        (r.subject, r.kind): _status(r.status) for r in store.load_findings_history(day) if r.day == day
    }
    items: list[tuple[FindingSubject, str, str]] = []
    for link in report.links:
        if link.status is Status.OK or not link.reasons:
            continue
        subject, kind = FindingSubject.of_link(link.key), finding_kind(link.reasons[0])
        status: Status = link.status
        before = earlier.get((subject.key, kind))
        if before is not None and before.rank > status.rank:
            status = before
        items.append((subject, kind, status.value))
    return store.record_findings(day, items) if items else 0


def counters_store(stored: StoreAccess) -> Store:
    """The store to assess, which must exist (a one-line error saying what to do otherwise)."""
    return stored.require(COLLECT_FIRST)


def assess_session(
    session: Session, *, since_s: float | None = 86400.0, record: bool = True
) -> AssessedHealth:
    """``ibfab health``: :func:`assess_store` over the session's store, by its thresholds."""
    with counters_store(session.store) as store:
        return assess_store(store, since_s=since_s, thresholds=session.thresholds, record=record)


def assess_store(
    store: Store,
    *,
    since_s: float | None = 86400.0,
    now: float | None = None,
    thresholds: HealthThresholds | None = None,
    record: bool = True,
) -> AssessedHealth:
    """Score every link of the latest topology over the counters of the last ``since_s`` seconds
    (None: all of them) and, if ``record``, add today's findings to the history.

    The stored blocks are summed column-wise a few snapshots at a time
    (:func:`fabric.health.assess`); a window whose readings are out of time order (a collection
    imported after newer ones) is put in order first, whole (:func:`fabric.health.in_time_order`)."""
    t = thresholds or HealthThresholds()
    now = time.time() if now is None else now
    since = None if since_s is None else now - since_s
    if not store.list_topologies():
        raise StoreError(f"{store.path}: no topology stored; {COLLECT_FIRST}")
    snapshots = store.list_counter_snapshots(since=since, until=now)
    if not any(s.ports for s in snapshots):
        window = "" if since_s is None else f" in the last {duration_spec(since_s)}"
        older = [s for s in store.list_counter_snapshots(until=now) if s.ports] if since_s is not None else []
        if older:  # an imported run from months ago: say where it is rather than to collect
            taken = utc_time(older[-1].taken_at)
            raise StoreError(
                f"{store.path}: no counter snapshots{window}; the newest is snapshot {older[-1].id} "
                f"at {taken} (--since all reads it)"
            )
        raise StoreError(f"{store.path}: no counter snapshots{window}; {COLLECT_FIRST}")
    with gc_paused():  # ~100,000 new objects, none in a cycle
        stored = store.load_topology("latest")
        below = below_peers(stored.fabric)
    lookback = now - t.repeat_lookback_days * DAY_S
    events = [
        LinkEvent(e.time, e.link, e.kind)
        for e in store.load_link_events(since=lookback, until=now)
        if e.kind in ("down", "up")
    ]
    # today's own records are left out: assess counts today from what it finds now, and first_seen
    # stays the real time of the first sample instead of the start of the day
    today = utc_day(now)
    history = past_findings(r for r in store.load_findings_history(utc_day(lookback)) if r.day != today)
    groups = _groups(snapshots)

    def score(snapshots: Iterable[Snapshot]) -> HealthReport:
        with gc_paused():  # the report is ~150,000 new records at 50,000 ports, none in a cycle
            return assess(
                snapshots,
                stored.fabric,
                since=since,
                now=now,
                events=events,
                history=history,
                thresholds=t,
                below_peers=below,
            )

    pieces = store.load_counter_block_pieces(groups, since, now)
    try:
        report = score(chain.from_iterable(pieces))
    except OutOfOrder:  # a port's readings out of time order: the window put in order, whole
        pieces.close()
        ids = [i for group in groups for i in group]
        report = score(in_time_order(store.load_counter_blocks(ids, since, now)))
    recorded = record_today(store, report, now) if record else 0
    notes, inventory = cable_notes(store, report)
    read = [s for s in snapshots if s.ports]
    return AssessedHealth(
        report,
        stored.fabric,
        stored.id,
        node_names(stored.fabric),
        recorded,
        notes,
        inventory,
        one_reading(store, snapshots),
        reading_findings(store, stored.fabric, read, t),
        (read[0].taken_at, read[-1].taken_at) if read else None,
    )


def reading_findings(
    store: Store, fabric: Fabric, read: list[CounterSnapshotInfo], thresholds: HealthThresholds
) -> tuple[ReadingFinding, ...]:
    """What the window's newest reading says alone (fabric.health.reading): saturated counters,
    and large totals when it is the only reading."""
    if not read:
        return ()
    newest = read[-1]
    try:
        rows = store.load_port_counters(newest.id)
    except StoreError:  # a damaged block: the store has warned of it, health judged without it
        return ()
    values = {(r.guid, r.port): r.counters for r in rows if r.reachable}
    found = judge_reading(
        values,
        (lk.key for lk in fabric.links),
        one_reading=len(read) == 1,
        thresholds=thresholds,
        taken_at=newest.taken_at,
    )
    return tuple(found)


def one_reading(store: Store, window: list[CounterSnapshotInfo]) -> OneReading | None:
    """What to say when the window's counters are a single reading (None: two or more)."""
    read = [s for s in window if s.ports]
    if len(read) != 1:
        return None
    only = read[0]
    ibdiagnet = any(
        c.source == only.source and c.taken_at == only.taken_at
        for c in store.list_captures(kind="counters", tool="ibdiagnet")
    )
    elsewhere = sum(1 for s in store.list_counter_snapshots() if s.ports and s.id != only.id)
    return OneReading(only, ibdiagnet, elsewhere)


def cable_notes(store: Store, report: HealthReport) -> tuple[tuple[SharedCableTrait, ...], str | None]:
    """What the failing (warn, critical) links' modules share beyond chance, and the inventory's
    run; nothing is read when fewer than two links fail."""
    failing = [lk.key for lk in report.links if lk.status.rank >= Status.WARN.rank]
    if len(failing) < MIN_LINKS:
        return (), None
    from fabric.app.discovery.cables import stored_inventory

    inv = stored_inventory(store)
    if inv is None or not inv.cables:
        return (), None
    cabled = [lk.key for lk in report.links]
    return shared_cable_traits(failing, inv.cables, cabled), inv.source


def below_peers(fabric: Fabric) -> dict[LinkKey, BelowPeers]:
    """The cables of ``fabric`` trained narrower or slower than their peers, by link key."""
    return {d.link.key: d for d in links_below_peers(fabric, classify(fabric))}


def _groups(snapshots: list[CounterSnapshotInfo]) -> list[list[int]]:
    """The window's snapshot ids in groups of PIECE_ROWS rows or so (whole snapshots, by id)."""
    groups: list[list[int]] = [[]]
    rows = 0
    for info in sorted(snapshots, key=lambda s: s.id):
        if rows >= PIECE_ROWS:
            groups.append([])
            rows = 0
        groups[-1].append(info.id)
        rows += info.ports
    return groups


__all__ = [
    "AssessedHealth",
    "assess_session",
    "assess_store",
    "below_peers",
    "cable_notes",
    "counters_store",
    "node_names",
    "past_findings",
    "record_today",
    "utc_day",
]
