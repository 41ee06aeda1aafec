"""What ``ibfab exporter`` serves, read from the store: the port and link families rendered once per
refresh, with the exporter's status. Reading never raises: a missing, empty or broken store is a
view with the reason (the exporter keeps serving the last good data through a store error)."""

from __future__ import annotations

import dataclasses
import gzip
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Self

from fabric.app.health import assess_store, node_names
from fabric.exports.prometheus import ExporterStatus, link_families, port_families, render
from fabric.store import Store
from fabric.store.records import CounterSnapshotInfo
from topology.errors import StoreError

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from fabric.health import HealthReport

# Health window: the PDR plugin's long symbol-error window (7,500 s, anchors.md 1.3), rounded up
# to 2 h 10 min so that the window's first snapshot is in it at a 5-minute collection interval.
DEFAULT_WINDOW_S = 7800.0


@dataclass(frozen=True, slots=True)
class ExporterView:
    """What scrapes serve until the next refresh: the data families rendered once, as text and as
    one gzip member (scrapes append the small exporter families to either)."""

    text: bytes  # Prometheus text format 0.0.4 of the port and link families
    status: ExporterStatus
    key: tuple[int, int] | None = None  # (topology id, counter snapshot id) it was built from
    gzipped: bytes = b""  # ``text`` compressed (empty when ``text`` is)

    @classmethod
    def of(cls, families: Sequence[Metric], status: ExporterStatus, key: tuple[int, int] | None) -> Self:
        text = render(families)
        return cls(text, status, key, gzip.compress(text, 6) if text else b"")


def read_view(
    db_path: Path,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    previous: ExporterView | None = None,
    clock: Callable[[], float] = time.time,
) -> ExporterView:
    """Read the store at ``db_path`` into a view (never raises for a missing, empty or broken store)."""
    started = time.monotonic()

    def stamp(view: ExporterView) -> ExporterView:
        status = dataclasses.replace(
            view.status, refreshed_at=clock(), refresh_seconds=time.monotonic() - started
        )
        return dataclasses.replace(view, status=status)

    if not db_path.exists():
        return stamp(failed_view("store_missing", f"{db_path}: no ibfab store there (yet)"))
    try:
        with Store.open(db_path, create=False) as store:
            return stamp(_read(store, window_s, previous))
    except StoreError as exc:
        return stamp(failed_view("store_error", exc.one_line(), previous))


def failed_view(reason: str, message: str, previous: ExporterView | None = None) -> ExporterView:
    """A view for a refresh that failed; a store error keeps the previous data (without its key,
    so the next good read rebuilds)."""
    if reason == "store_error" and previous is not None and previous.text:
        status = dataclasses.replace(previous.status, errors=frozenset({reason}), message=message)
        return dataclasses.replace(previous, status=status, key=None)
    return ExporterView(b"", ExporterStatus(errors=frozenset({reason}), message=message), None)


def _read(store: Store, window_s: float, previous: ExporterView | None) -> ExporterView:
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
    key = (topology_id, latest.id)
    if previous is not None and previous.key == key:
        return previous
    fabric = store.load_topology(topology_id).fabric
    names = node_names(fabric)
    ports = port_families(fabric, names, store.load_port_counters(latest.id))
    families: list[Metric] = list(ports.families)
    errors: set[str] = set()
    message = ""
    try:
        families += link_families(_health(store, latest, window_s), names)
    except Exception as exc:  # counters are still worth serving when health cannot be computed
        errors.add("health_error")
        message = f"link health of snapshot {latest.id}: {type(exc).__name__}: {exc}"
    status = ExporterStatus(
        errors=frozenset(errors),
        message=message,
        last_snapshot_time=latest.taken_at,
        ports_unreachable=ports.unreachable,
        ports_unknown=ports.unknown,
    )
    return ExporterView.of(families, status, key)


def _health(store: Store, latest: CounterSnapshotInfo, window_s: float) -> HealthReport:
    """``ibfab health``'s assessment (without recording findings: the exporter only reads), over
    the window that ends at the latest snapshot, so scores do not decay while collection is down."""
    return assess_store(store, since_s=window_s, now=latest.taken_at, record=False).report
