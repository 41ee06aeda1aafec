"""The TUI's routes judged in a child Python process, as its health is
(:class:`fabric.app.health.window.HealthProcess`, whose reasons hold here too: a subprocess, not
multiprocessing, under Textual; killed when no longer wanted).

The child reads the topology snapshot, its tables and their lanes (per VL where stored) from the store, classifies the fabric,
judges the tables (:func:`fabric.app.routes.check_routes_of`) with the flags and isolations the
parent read, and writes back a pickled :class:`fabric.app.readmodel.routes.JudgedRoutes` (or the
error in one line): on a 16,384-HCA fabric ~6 s of the child's CPU, none of the UI's GIL.
"""

from __future__ import annotations

import pickle
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fabric.app.childjob import ChildJob, child_main
from topology.errors import StoreError
from topology.model import LinkKey

if TYPE_CHECKING:
    from fabric.app.readmodel.route_loads import JudgedRoutes


@dataclass(frozen=True)
class RoutesJob:
    """What the child judges: the tables stored with ``topology_id`` in the store at ``db``."""

    db: str
    topology_id: int
    flagged: dict[LinkKey, str]  # cables health flags, with their status
    flagged_from: str  # where the flags came from, in words
    isolated: tuple[set[LinkKey], int]  # isolated cables, and how many isolations
    sm_log: str | None  # the SM's log to read (None: what the SM runs stays unknown)


def judge_stored(job: RoutesJob) -> JudgedRoutes | None:
    """The judgement (None: no tables stored with the snapshot); what the child runs."""
    from fabric.app.discovery.discover import analyse
    from fabric.app.readmodel.route_loads import judged_of
    from fabric.app.routes.check import check_routes_of
    from fabric.app.routes.lanes import stored_lanes
    from fabric.app.routes.tables import TablesRead
    from fabric.app.session import open_session

    session = open_session(db=Path(job.db))
    stored = session.store.read()
    if stored is None:
        return None
    with stored as store:
        lfts = store.load_routes(job.topology_id)
        if lfts is None:
            return None
        lanes = stored_lanes(store, job.topology_id)
        topo = store.load_topology(job.topology_id)
    d = analyse(topo.fabric, source=topo.summary.source)
    check = check_routes_of(
        session,
        d,
        TablesRead(lfts, None, f"snapshot {job.topology_id}", job.topology_id),
        sm_log=job.sm_log,
        flagged=job.flagged,
        flagged_from=job.flagged_from,
        isolated=job.isolated,
        ask_sm=job.sm_log is not None,
        lanes=lanes,
    )
    return judged_of(check)


# Not ``-m``: run as __main__, the module would pickle its records under that name.
_CHILD = "import sys; from fabric.app.readmodel.routes_process import _child_main; sys.exit(_child_main())"


def _child_main() -> int:
    """The pickled job on stdin; the pickled judgement (or the error in one line) on stdout
    (:func:`fabric.app.childjob.child_main`)."""

    def compute() -> bytes:
        job = pickle.loads(sys.stdin.buffer.read())  # our own parent wrote it
        return pickle.dumps(("ok", judge_stored(job)), protocol=pickle.HIGHEST_PROTOCOL)

    return child_main(compute)


class RoutesProcess(ChildJob):
    """One judgement in a child Python process (:class:`fabric.app.childjob.ChildJob`):
    ``.result()`` waits (the GIL free meanwhile), ``.cancel()`` kills it."""

    def __init__(self, job: RoutesJob) -> None:
        super().__init__(
            _CHILD,
            [],
            topic="routes",
            process="judging process",
            work="judgement",
            job=pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL),
        )

    def result(self) -> JudgedRoutes | None:
        """The judgement (None: no tables stored); a StoreError when the child failed."""
        data = self.output()
        try:
            kind, payload = pickle.loads(data)  # our own child wrote it
        except Exception as exc:  # a child of another ibfab version, a truncated pipe
            raise StoreError(f"routes: unreadable result from the judging process ({exc!r})") from exc
        if kind != "ok":
            raise StoreError(str(payload))
        result: JudgedRoutes | None = payload
        return result
