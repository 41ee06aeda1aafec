"""The TUI's routes judged in a child Python process, as its health is
(:class:`fabric.app.health.window.HealthProcess`, whose reasons hold here too: a subprocess, not
multiprocessing, under Textual; killed when no longer wanted).

The child reads the topology snapshot and its tables from the store, classifies the fabric,
judges the tables (:func:`fabric.app.routes.check_routes_of`) with the flags and isolations the
parent read, and writes back a pickled :class:`fabric.app.readmodel.routes.JudgedRoutes` (or the
error in one line): on a 16,384-HCA fabric ~6 s of the child's CPU, none of the UI's GIL.
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fabric.app.health.window import WARNING_PREFIX
from topology.errors import IbfabError, StoreError
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
        topo = store.load_topology(job.topology_id)
    d = analyse(topo.fabric, source=topo.summary.source)
    check = check_routes_of(
        session,
        d,
        TablesRead(lfts, None, f"snapshot {job.topology_id}"),
        sm_log=job.sm_log,
        flagged=job.flagged,
        flagged_from=job.flagged_from,
        isolated=job.isolated,
        ask_sm=job.sm_log is not None,
    )
    return judged_of(check)


class _WarningLines(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write(WARNING_PREFIX + " ".join(record.getMessage().split()) + "\n")
        sys.stderr.flush()


# Not ``-m``: run as __main__, the module would pickle its records under that name.
_CHILD = "import sys; from fabric.app.readmodel.routes_process import _child_main; sys.exit(_child_main())"


def _child_main() -> int:
    """The pickled job on stdin; the pickled judgement (or the error in one line) on stdout,
    nothing else there (stray prints go to stderr)."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    logging.getLogger("fabric").addHandler(_WarningLines(logging.WARNING))
    try:
        job = pickle.loads(sys.stdin.buffer.read())  # our own parent wrote it
        data = pickle.dumps(("ok", judge_stored(job)), protocol=pickle.HIGHEST_PROTOCOL)
    except IbfabError as exc:
        data = pickle.dumps(("error", exc.one_line()))
    except Exception as exc:  # to the parent as one line, never a traceback
        data = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
    out.write(data)
    out.close()
    return 0


class RoutesProcess:
    """One judgement in a child Python process: ``.result()`` waits (the GIL free meanwhile),
    ``.cancel()`` kills it."""

    def __init__(self, job: RoutesJob) -> None:
        root = str(Path(__file__).resolve().parents[3])  # the directory holding the fabric package
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        self.cancelled = False
        self.warnings: tuple[str, ...] = ()
        self._input = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
        self._process = subprocess.Popen(
            [sys.executable, "-c", _CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # a Ctrl-C meant for the UI does not reach it
        )

    def result(self) -> JudgedRoutes | None:
        """The judgement (None: no tables stored); a StoreError when the child failed."""
        try:
            data, err = self._process.communicate(self._input)
        except (BrokenPipeError, OSError) as exc:  # killed before it read its job
            raise StoreError(f"routes: the judging process stopped ({exc})") from exc
        lines = err.decode(errors="replace").splitlines()
        self.warnings = tuple(
            ln.removeprefix(WARNING_PREFIX) for ln in lines if ln.startswith(WARNING_PREFIX)
        )
        if self.cancelled:
            raise StoreError("routes: judgement cancelled")
        if self._process.returncode != 0 or not data:
            last = [ln for ln in lines if ln.strip() and not ln.startswith(WARNING_PREFIX)][-1:] or [
                "no output"
            ]
            raise StoreError(
                f"routes: the judging process failed (exit code {self._process.returncode}): {last[0]}"
            )
        try:
            kind, payload = pickle.loads(data)  # our own child wrote it
        except Exception as exc:  # a child of another ibfab version, a truncated pipe
            raise StoreError(f"routes: unreadable result from the judging process ({exc!r})") from exc
        if kind != "ok":
            raise StoreError(str(payload))
        result: JudgedRoutes | None = payload
        return result

    def cancel(self) -> None:
        self.cancelled = True
        if self._process.poll() is None:
            self._process.kill()
