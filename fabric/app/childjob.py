"""A computation the TUI hands to a child Python process (the health window, the routes'
judgement), so that it does not hold the UI's GIL: the child's side (its result alone on stdout,
the store's warnings as lines on stderr, any failure as one line) and the parent's (start it,
wait for its output, kill it). Each caller keeps its own job and the decoding of its result.

A subprocess rather than multiprocessing: under Textual ``sys.stderr`` is not a real file, and
multiprocessing's spawn start (its resource tracker) fails on that; a subprocess has its own pipes
and a pid to kill.
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from topology.errors import IbfabError, StoreError

# How the child hands the store's warnings (a damaged snapshot skipped...) to the parent: one line
# each on its stderr, which the parent reads (the child's stderr is a pipe, never the terminal).
WARNING_PREFIX = "ibfab-warning: "


class _WarningLines(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write(WARNING_PREFIX + " ".join(record.getMessage().split()) + "\n")
        sys.stderr.flush()


def child_main(compute: Callable[[], bytes]) -> int:
    """The child's whole run: ``compute``'s bytes (a pickled ``("ok", payload)``), or the error in
    one line pickled as ``("error", line)``, alone on stdout (stray prints go to stderr)."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    logging.getLogger("fabric").addHandler(_WarningLines(logging.WARNING))
    try:
        data = compute()
    except IbfabError as exc:
        data = pickle.dumps(("error", exc.one_line()))
    except Exception as exc:  # to the parent as one line, never a traceback
        data = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
    out.write(data)
    out.close()
    return 0


class ChildJob:
    """``python -c CODE ARGS...`` with ``job`` on its stdin (None: nothing); :meth:`output` waits
    (the GIL free meanwhile) and raises a StoreError worded ``TOPIC: ...`` when it failed; the
    store's warnings it logged are in :attr:`warnings` then."""

    def __init__(
        self, code: str, args: Sequence[str], *, topic: str, process: str, work: str, job: bytes | None = None
    ) -> None:
        self.topic, self.process, self.work = topic, process, work
        root = str(Path(__file__).resolve().parents[2])  # the directory holding the fabric package
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        self.cancelled = False
        self.warnings: tuple[str, ...] = ()
        self._input = job
        self._process = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdin=subprocess.DEVNULL if job is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # a Ctrl-C meant for the UI does not reach it
        )

    def output(self) -> bytes:
        """The child's stdout once it ended well; a StoreError when it was cancelled or failed."""
        try:
            data, err = self._process.communicate(self._input)
        except (BrokenPipeError, OSError) as exc:  # killed before it read its job
            raise StoreError(f"{self.topic}: the {self.process} stopped ({exc})") from exc
        lines = err.decode(errors="replace").splitlines()
        self.warnings = tuple(
            ln.removeprefix(WARNING_PREFIX) for ln in lines if ln.startswith(WARNING_PREFIX)
        )
        if self.cancelled:
            raise StoreError(f"{self.topic}: {self.work} cancelled")
        if self._process.returncode != 0 or not data:
            last = [ln for ln in lines if ln.strip() and not ln.startswith(WARNING_PREFIX)][-1:] or [
                "no output"
            ]
            raise StoreError(
                f"{self.topic}: the {self.process} failed (exit code {self._process.returncode}): {last[0]}"
            )
        return data

    def cancel(self) -> None:
        """Stop the child now (a newer computation replaces it, or the UI is closing)."""
        self.cancelled = True
        if self._process.poll() is None:
            self._process.kill()

    @property
    def pid(self) -> int:
        return self._process.pid
