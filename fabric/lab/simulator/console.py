"""The simulator console: one command line to a lab's ibsim through its FIFO, the reply read from
ibsim's stdout up to the next prompt; a reply that is an error is a LabError.
"""

from __future__ import annotations

import os
import re
import time

from fabric.lab.simulator.state import LabPaths, locked, running_lab
from topology.errors import LabError, UsageError

PROMPT = "sim> "
# Console replies that are errors: "# nodeid "x" not found", "# port 9 ... is not linked",
# "command 'x' unknown - skipped". Informational lines start "# Net status", "#  dumped", "#\t".
_CONSOLE_ERROR = re.compile(r"^(# [a-z].*|command '.*' unknown.*)$", re.MULTILINE)


def console(name: str, command: str, *, timeout: float = 30.0) -> str:
    """Send one console command to lab ``name``'s ibsim and return its reply (LabError on errors)."""
    command = command.strip()
    if not command or "\n" in command or "\r" in command:
        raise UsageError(f"console command {command!r}: give exactly one non-empty line")
    paths, _state = running_lab(name)
    with locked(paths.root / "console.lock"):
        line = command
        if len(command.encode()) > 120:  # ibsim splits lines at 127 bytes; a command file has 4096
            (paths.root / "console.cmd").write_text(command + "\n")
            line = "!console.cmd"  # relative to ibsim's CWD, the lab directory
        offset = paths.ibsim_out.stat().st_size
        fd = os.open(paths.fifo, os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
        reply = _read_reply(paths, offset, timeout, command)
    bad = _CONSOLE_ERROR.search(reply)
    if bad:
        raise LabError(f"ibsim console: {command}: {bad.group(0).lstrip('# ')}")
    return reply


def _read_reply(paths: LabPaths, offset: int, timeout: float, command: str) -> str:
    deadline = time.monotonic() + timeout
    data = b""
    with paths.ibsim_out.open("rb") as fh:
        fh.seek(offset)
        while True:
            data += fh.read()
            if data.endswith(PROMPT.encode()):
                return data[: -len(PROMPT)].decode(errors="replace").rstrip()
            if time.monotonic() > deadline:
                raise LabError(f"ibsim console: no reply to {command!r} within {timeout:g} s")
            time.sleep(0.01)
