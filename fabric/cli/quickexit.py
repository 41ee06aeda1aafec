"""Ending a read-only command without freeing its heap, when the process is the ``ibfab`` program.

A discovery of 8,192 HCAs leaves about a million small objects alive when its report is written;
Python frees them one by one on the way out (3% of the whole ``ibfab discover``), only for the
operating system to drop the pages right after. A command that has written all its output and
holds no store, lock or child process calls :func:`finish` as its last act: the streams are
flushed, the exit handlers run (atexit: logging's shutdown, a caller's own), and the process
ends at once with status 0.

Only the program's own entry point allows it (:func:`allow`, called by the root group when it
reads ``sys.argv`` and exits itself), and only while stdout and stderr are the process's own:
under CliRunner, pytest's capture, or a caller that passes its own arguments, :func:`finish`
does nothing and the command returns as usual.
"""

from __future__ import annotations

import atexit
import os
import sys

_allowed = False


def allow() -> None:
    """The running ``ibfab`` program owns this process: a read-only command may end it."""
    global _allowed
    _allowed = True


def finish() -> None:
    """End the process now (status 0) when :func:`allow` was called and the output goes to the
    process's own streams; otherwise return. A stream that cannot be flushed (a closed pipe)
    raises here, as the normal exit would find it, and the caller's handling applies."""
    out, err = sys.__stdout__, sys.__stderr__
    if not _allowed or out is None or err is None or sys.stdout is not out or sys.stderr is not err:
        return
    out.flush()
    err.flush()
    atexit._run_exitfuncs()  # what the normal exit would run first (they may write: flush again)
    out.flush()
    err.flush()
    os._exit(0)
