"""What ``ibfab exporter`` serves, read from the store: the port, link, switch and sweep families
rendered once per refresh, with the exporter's status. Reading never raises: a missing, empty or
broken store is a view with the reason (the exporter keeps serving the last good data through a
store error)."""

from __future__ import annotations

import dataclasses
import gzip
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Self

from fabric.app.health.assess import assess_store
from fabric.app.session import Session, StoreAccess
from fabric.app.sweeps.sweep import show
from fabric.exports.prometheus import (
    ExporterStatus,
    ScheduleRun,
    SweepSuspects,
    collection_interval,
    exporter_families,
    link_families,
    port_families,
    render,
    sweep_families,
    switch_families,
)
from fabric.store import Store
from fabric.store.records import CounterSnapshotInfo
from topology.errors import StoreError

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from fabric.health import HealthReport, HealthThresholds
    from topology.model import Fabric

# Health window: the PDR plugin's long symbol-error window (7,500 s, anchors.md 1.3), rounded up
# to 2 h 10 min so that the window's first snapshot is in it at a 5-minute collection interval.
DEFAULT_WINDOW_S = 7800.0


@dataclass(frozen=True, slots=True)
class ExporterView:
    """What scrapes serve until the next refresh: the data families rendered once, as text and as
    one gzip member (scrapes append the small exporter families to either)."""

    text: bytes  # Prometheus text format 0.0.4 of the port and link families
    status: ExporterStatus
    key: tuple[int, ...] | None = None  # (topology id, counter snapshot id, sweep id) it was built from
    gzipped: bytes = b""  # ``text`` compressed (empty when ``text`` is)
    sweep: SweepSuspects | None = None  # kept: a sweep is re-ranked only when a new one lands
    # kept: ((topology id, its stored tables' stamp), their route families): judged again when the
    # tables or their lanes are stored again
    routes: tuple[tuple[int, tuple[float, int] | None], tuple[Metric, ...]] | None = None

    @classmethod
    def of(cls, families: Sequence[Metric], status: ExporterStatus, key: tuple[int, ...] | None) -> Self:
        text = render(families)
        return cls(text, status, key, gzip.compress(text, 6) if text else b"")


def unread_view() -> ExporterView:
    """What scrapes get before the store was first read: no data, a ``store_error`` saying so."""
    return ExporterView(b"", ExporterStatus(errors=frozenset({"store_error"}), message="store not read yet"))


def exporter_page(status: ExporterStatus, seconds: float) -> bytes:
    """The exporter's own families for one scrape (its status, and ``seconds`` spent on the scrape)."""
    return render(exporter_families(status, seconds))


def read_view(
    session: Session,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    previous: ExporterView | None = None,
    clock: Callable[[], float] = time.time,
) -> ExporterView:
    """Read the session's store into a view, judged by its thresholds (never raises for a
    missing, empty or broken store)."""
    started = time.monotonic()

    def stamp(view: ExporterView) -> ExporterView:
        status = dataclasses.replace(
            view.status, refreshed_at=clock(), refresh_seconds=time.monotonic() - started
        )
        return dataclasses.replace(view, status=status)

    if not session.store.exists():
        return stamp(failed_view("store_missing", f"{session.store.path}: no ibfab store there (yet)"))
    try:
        with session.store.require() as store:
            return stamp(_read(store, window_s, previous, session.thresholds))
    except StoreError as exc:
        return stamp(failed_view("store_error", exc.one_line(), previous))


def failed_view(reason: str, message: str, previous: ExporterView | None = None) -> ExporterView:
    """A view for a refresh that failed; a store error keeps the previous data (without its key,
    so the next good read rebuilds)."""
    if reason == "store_error" and previous is not None and previous.text:
        status = dataclasses.replace(previous.status, errors=frozenset({reason}), message=message)
        return dataclasses.replace(previous, status=status, key=None)
    return ExporterView(b"", ExporterStatus(errors=frozenset({reason}), message=message), None)


def _read(
    store: Store, window_s: float, previous: ExporterView | None, thresholds: HealthThresholds | None = None
) -> ExporterView:
    view = _read_data(store, window_s, previous, thresholds)
    # Schedules and the collection pace are read on every refresh: a failed run adds no snapshot.
    status = dataclasses.replace(
        view.status,
        schedules=_schedule_runs(store),
        collection_interval=collection_interval([s.taken_at for s in store.list_counter_snapshots()]),
    )
    return dataclasses.replace(view, status=status)


def _schedule_runs(store: Store) -> tuple[ScheduleRun, ...]:
    out = []
    for schedule in store.list_schedules(enabled_only=True):
        last = next((r for r in store.list_runs(schedule.id, limit=5) if r.finished is not None), None)
        if last is not None:
            out.append(
                ScheduleRun(
                    schedule.name, schedule.kind, last.finished or 0.0, bool(last.ok), last.error or ""
                )
            )
    return tuple(out)


def _latest_sweep(store: Store) -> int | None:
    return next((s.id for s in reversed(store.list_sweeps()) if s.finished is not None), None)


def _read_data(
    store: Store, window_s: float, previous: ExporterView | None, thresholds: HealthThresholds | None
) -> ExporterView:
    try:
        topology_id: int | None = store.resolve_topology("latest")
    except StoreError:
        topology_id = None
    snapshots = store.list_counter_snapshots()
    missing = set()
    if topology_id is None:
        missing.add("no_topology")
    if not snapshots:
        missing.add("no_counters")
    if topology_id is None or not snapshots:
        what = " and ".join(
            w for r, w in (("no_topology", "topology"), ("no_counters", "counter snapshot")) if r in missing
        )
        return ExporterView(
            b"", ExporterStatus(errors=frozenset(missing), message=f"{store.path}: no {what} yet")
        )
    latest = snapshots[-1]
    sweep_id = _latest_sweep(store)
    key = (topology_id, latest.id, sweep_id or 0)
    if previous is not None and previous.key == key:
        return previous
    from fabric.app.health.assess import node_names
    from topology.classify import classify

    fabric = store.load_topology(topology_id).fabric
    names = node_names(fabric)
    ports = port_families(fabric, names, store.load_port_counters(latest.id))
    families: list[Metric] = [*ports.families, *switch_families(classify(fabric), names)]
    errors: set[str] = set()
    messages = []
    try:
        families += link_families(_health(store, latest, window_s, thresholds), names)
    except Exception as exc:  # counters are still worth serving when health cannot be computed
        errors.add("health_error")
        messages.append(f"link health of snapshot {latest.id}: {type(exc).__name__}: {exc}")
    sweep = previous.sweep if previous is not None and sweep_id is not None else None
    if sweep_id is not None:
        try:
            if sweep is None or sweep.sweep_id != sweep_id:
                sweep = _sweep(store, sweep_id)
            families += sweep_families(sweep, names)
        except Exception as exc:  # a sweep that cannot be read must not hide the counters
            errors.add("sweep_error")
            messages.append(f"probe sweep {sweep_id}: {type(exc).__name__}: {exc}")
    routes = previous.routes if previous is not None else None
    try:
        routes_key = (topology_id, store.routes_stamp(topology_id))
        if routes is None or routes[0] != routes_key:
            routes = (routes_key, _routes(store, topology_id, fabric, names))
        families += routes[1]
    except Exception as exc:  # tables that cannot be judged must not hide the counters
        errors.add("routes_error")
        messages.append(f"routes of topology {topology_id}: {type(exc).__name__}: {exc}")
    message = "; ".join(messages)
    status = ExporterStatus(
        errors=frozenset(errors),
        message=message,
        last_snapshot_time=latest.taken_at,
        ports_unreachable=ports.unreachable,
        ports_unknown=ports.unknown,
    )
    return dataclasses.replace(ExporterView.of(families, status, key), sweep=sweep, routes=routes)


def _health(
    store: Store, latest: CounterSnapshotInfo, window_s: float, thresholds: HealthThresholds | None
) -> HealthReport:
    """``ibfab health``'s assessment (without recording findings: the exporter only reads), over
    the window that ends at the latest snapshot, so scores do not decay while collection is down."""
    return assess_store(
        store, since_s=window_s, now=latest.taken_at, thresholds=thresholds, record=False
    ).report


def _routes(store: Store, topology_id: int, fabric: Fabric, names: dict[str, str]) -> tuple[Metric, ...]:
    """The route families of the tables stored with the topology (none when it has none), credit
    loops judged per VL where lanes are stored with them."""
    lfts = store.load_routes(topology_id)
    if lfts is None:
        return ()
    from fabric.app.routes.lanes import stored_lanes
    from fabric.exports.prometheus_routes import route_families
    from topology.classify import classify
    from topology.route_checks import check_routes

    lanes = stored_lanes(store, topology_id)  # per VL where stored with the tables, else one lane and why
    return route_families(check_routes(fabric, classify(fabric), lfts, lanes=lanes), names)


def _sweep(store: Store, sweep_id: int) -> SweepSuspects:
    """The suspects of a stored sweep, ranked again from its records as ``ibfab sweep show`` does."""
    shown = show(sweep_id, StoreAccess(store.path))
    return SweepSuspects(shown.id, shown.finished or shown.started, shown.suspects)
