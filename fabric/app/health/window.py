"""Health for the read side: a :class:`HealthWindow` over the newest counter window, computed here or
in a child process.

On a 16,384-HCA fabric with an hour of snapshots the assessment takes ~20 s of pure Python and
numpy, holding the GIL; run in a thread it made every keypress of the TUI wait seconds. A
:class:`HealthProcess` runs :func:`compute_health` in a spawned child instead and hands the
report back pickled (:func:`dump_health` / :func:`load_health`): the UI thread keeps the GIL
and the child's memory (a few hundred MB: the counters are read and summed a few snapshots at a
time, see :func:`fabric.app.health.assess.assess_store`) goes back to the system when it exits.
A child of our own rather than a ``ProcessPoolExecutor``: the UI must be able to kill a
computation it no longer needs (a newer snapshot arrived, the user quit), and a pool only cancels
work that has not started (and waits for running work at exit).
"""

from __future__ import annotations

import dataclasses
import io
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from fabric.app.childjob import ChildJob, child_main
from topology.errors import StoreError
from topology.model import LinkKey

if TYPE_CHECKING:
    from fabric.app.session import Session
    from fabric.health import HealthReport, LinkHealth
    from fabric.health.reading import ReadingFinding

# How far back health looks from the newest counter snapshot.
HEALTH_WINDOW_S = 3600.0
# Ports of a snapshot are read in the seconds after it starts; keep them in the window.
SNAPSHOT_SPREAD_S = 5.0


@dataclass(frozen=True)
class HealthWindow:
    """A health report over the counter window ending at the newest snapshot."""

    report: HealthReport
    snapshot_id: int
    since: float
    now: float
    by_key: Mapping[LinkKey, LinkHealth]
    readings: tuple[ReadingFinding, ...] = ()  # the newest reading's saturated (or large) counters


def compute_health(session: Session, window_s: float = HEALTH_WINDOW_S) -> HealthWindow | None:
    """Health (fabric.app.health.assess, nothing recorded) over the window ending at the newest counter
    snapshot of the session's store, by the site's thresholds (``ibfab health --thresholds``; None:
    the defaults); None when there are no snapshots or no topology."""
    from fabric.app.health.assess import assess_store

    stored = session.store.read()
    if stored is None:  # no store yet: nothing to judge, and looking creates none
        return None
    with stored as store:
        snaps = store.list_counter_snapshots()
        if not snaps or not store.list_topologies():
            return None
        now = snaps[-1].taken_at + SNAPSHOT_SPREAD_S
        hv = assess_store(store, since_s=window_s, now=now, thresholds=session.thresholds, record=False)
    return view_of(hv.report, snaps[-1].id, now - window_s, now, hv.readings)


def view_of(
    report: HealthReport,
    snapshot_id: int,
    since: float,
    now: float,
    readings: tuple[ReadingFinding, ...] = (),
) -> HealthWindow:
    return HealthWindow(
        report, snapshot_id, since, now, MappingProxyType({lh.key: lh for lh in report.links}), readings
    )


# -- across a process boundary ------------------------------------------------------------------
# A 49,152-link report is ~300,000 slotted dataclasses; pickle's own way back calls
# dataclasses.fields() for each (2.5 s of the UI process's GIL); _rebuild sets the slots directly
# (0.6 s) and skips __post_init__, whose checks the values already passed in the child.
_NAMES: dict[type, tuple[str, ...]] = {}
_SETTERS: dict[type, tuple[Any, ...]] = {}


def _names(cls: type) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _rebuild(cls: type, values: tuple[Any, ...]) -> Any:
    setters = _SETTERS.get(cls)
    if setters is None:
        setters = _SETTERS[cls] = tuple(getattr(cls, name).__set__ for name in _names(cls))
    obj: Any = object.__new__(cls)
    for set_slot, value in zip(setters, values, strict=True):
        set_slot(obj, value)
    return obj


def _proxy(items: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(items)


class _Pickler(pickle.Pickler):
    """Read-only mappings (MappingProxyType, which pickle refuses) as dicts; slotted dataclasses as
    their field values."""

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        if cls is MappingProxyType:
            return _proxy, (dict(obj),)
        if dataclasses.is_dataclass(cls) and "__slots__" in cls.__dict__:
            return _rebuild, (cls, tuple(getattr(obj, name) for name in _names(cls)))
        return NotImplemented


def dump_health(view: HealthWindow | None) -> bytes:
    """``view`` as bytes for :func:`load_health` (the report only; the index is rebuilt)."""
    buf = io.BytesIO()
    payload = None if view is None else (view.report, view.snapshot_id, view.since, view.now)
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(("ok", payload))
    return buf.getvalue()


def load_health(data: bytes) -> HealthWindow | None:
    """What :func:`dump_health` (or a failed child's message) carried; a failure raises StoreError."""
    try:
        kind, payload = pickle.loads(data)  # our own child process wrote it
    except Exception as exc:  # a child of another ibfab version, a truncated pipe
        raise StoreError(f"health: unreadable result from the computing process ({exc!r})") from exc
    if kind != "ok":
        raise StoreError(f"health: {payload}")
    return None if payload is None else view_of(*payload)


# Not ``-m fabric.app.health.window``: run as __main__, the module would pickle its helpers under
# that name and the parent could not find them.
_CHILD = "import sys; from fabric.app.health.window import _child_main; sys.exit(_child_main(sys.argv[1:]))"


def _child_main(argv: list[str]) -> int:
    """``python -c _CHILD DB WINDOW_S THRESHOLDS|-``: the pickled view (or the error in one line)
    on stdout (:func:`fabric.app.childjob.child_main`)."""

    def compute() -> bytes:
        from fabric.app.session import open_session

        window_s = float(argv[1])
        session = open_session(db=Path(argv[0]), thresholds_file=None if argv[2] == "-" else Path(argv[2]))
        return dump_health(compute_health(session, window_s))

    return child_main(compute)


class HealthProcess(ChildJob):
    """One health computation in a child Python process (:class:`fabric.app.childjob.ChildJob`).

    >>> job = HealthProcess(session)  # doctest: +SKIP
    >>> view = job.result()        # doctest: +SKIP  (waits; raises StoreError if it failed)
    """

    def __init__(self, session: Session, window_s: float = HEALTH_WINDOW_S) -> None:
        """The child builds its own session from the store's path and the thresholds file (a path
        crosses the process boundary; the file was checked when the session was built)."""
        thresholds_file = session.thresholds_file
        super().__init__(
            _CHILD,
            [
                str(session.store.path),
                repr(window_s),
                str(thresholds_file) if thresholds_file is not None else "-",
            ],
            topic="health",
            process="computing process",
            work="computation",
        )

    def result(self) -> HealthWindow | None:
        """Wait for the child and return its view; the store's warnings it logged are in
        :attr:`warnings` then."""
        return load_health(self.output())
