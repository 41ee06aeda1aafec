"""What a command gives back, wherever it ran, and the one interface every transport offers.

A :class:`Transport` runs an argv on one host and returns a :class:`CommandResult`; it never
raises for a problem of that host (unreachable, refused, wrong key, timeout, tool not found): the
problem is a :class:`FailureKind` in the record, so a fan-out over 500 hosts keeps the other 499
results. :meth:`Transport.require` turns a record into the one error a single command owes its
caller. ``probes.runner.LocalTransport`` (this machine, or a lab fabric's environment)
and ``probes.ssh.SshTransport`` implement it, so callers do not know which one they hold.

Every command that runs is registered here while it runs (:func:`running`), whichever transport
runs it, so :func:`stop_all` (the daemon, when it stops) ends them all: a local one with its
process group, a remote one with its whole SSH session on the host. The threads whose work is
being ended are refused from then on (``stop_all(refusing=...)``, :func:`refused`): a job past the daemon's
grace starts no new command, here or on a host, in the moments before the process exits.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from probes.output import FANOUT_OUTPUT_BYTES, MAX_OUTPUT_BYTES, OutputCap, as_bytes, decode
from topology.errors import CommandFailed, IbfabError, TransportError

__all__ = [  # OutputCap and MAX_OUTPUT_BYTES live in probes.output; named here as before
    "ANY_EXIT_CODE",
    "MAX_OUTPUT_BYTES",
    "REFUSED_MESSAGE",
    "CommandResult",
    "FailureKind",
    "HostError",
    "OutputCap",
    "Transport",
    "exit_code_error",
    "output_cut_error",
    "refused",
    "running",
    "running_count",
    "stop_all",
]


class FailureKind(StrEnum):
    """Why a command did not run to completion on a host (``None`` in a record: it did)."""

    UNREACHABLE = "unreachable"  # no route, name does not resolve, connection lost
    REFUSED = "refused"  # nothing listens on the SSH port
    AUTH = "auth"  # the server rejected our user or key
    HOST_KEY = "host_key"  # the server's host key is unknown or changed
    TIMEOUT = "timeout"  # the connection or the SSH handshake did not finish in time
    COMMAND_TIMEOUT = "command_timeout"  # the command ran too long and was killed
    ERROR = "error"  # anything else (e.g. the command does not exist)


@dataclass(frozen=True, slots=True)
class CommandResult:
    """One command on one host (``host`` is ``localhost`` or ``lab NAME`` for this machine).

    ``exit_code`` is ``None`` when the command did not finish (``failure`` then says why and
    ``message`` says it in words without the host name, so identical failures fold together).
    The output is kept as the bytes that came (a transport's) or the text given (a result made
    here); :attr:`stdout` and :attr:`stderr` decode it each time they are read, so read them once
    (:mod:`probes.output`: decoding can double or triple the size).
    """

    host: str
    argv: tuple[str, ...]
    exit_code: int | None
    raw_stdout: bytes | str
    raw_stderr: bytes | str
    duration: float
    failure: FailureKind | None = None
    message: str = ""
    cut: int = 0  # bytes of output left out over the cap or the budget (the text says where)

    @property
    def ok(self) -> bool:
        return self.failure is None and self.exit_code == 0

    @property
    def stdout(self) -> str:
        return decode(self.raw_stdout)

    @property
    def stderr(self) -> str:
        return decode(self.raw_stderr)

    @property
    def stdout_bytes(self) -> bytes:
        return as_bytes(self.raw_stdout)

    @property
    def stderr_bytes(self) -> bytes:
        return as_bytes(self.raw_stderr)


def output_cut_error(result: CommandResult) -> CommandFailed | None:
    """The error owed to a caller that parses ``result``'s output when some of it was cut: a
    table or a topology with its middle missing would look like a fabric with parts gone."""
    if not result.cut:
        return None
    return CommandFailed(
        result.argv,
        result.exit_code,
        f"output too large: {result.cut} bytes were cut (a stream keeps at most"
        f" {MAX_OUTPUT_BYTES // 2**20} MiB, a fan-out's hosts {FANOUT_OUTPUT_BYTES // 2**20} MiB in all)",
        result.host,
    )


class HostError(TransportError):
    """A host could not be reached, authenticated or verified; names the host and the kind."""

    def __init__(self, host: str, kind: FailureKind, message: str) -> None:
        self.host = host
        self.kind = kind
        self.message = message
        super().__init__(f"{host}: {message}")


# ``ok_codes`` that take any exit code (signals as negative codes included): for tools whose exit
# code is data (ibqueryerrors exits 1 when it finds errors, perfquery 255 when a node is silent).
ANY_EXIT_CODE = range(-255, 256)


def exit_code_error(
    result: CommandResult, ok_codes: Sequence[int] = (0,), where: str | None = None
) -> IbfabError | None:
    """CommandFailed (at ``where``, default the result's host) when the command finished with an
    exit code outside ``ok_codes``, or when its output was cut (:func:`output_cut_error`)."""
    if result.exit_code is not None and result.exit_code not in ok_codes:
        return CommandFailed(result.argv, result.exit_code, result.stderr, where or result.host)
    return output_cut_error(result)


class Transport(Protocol):
    """Runs commands on one host."""

    @property
    def host(self) -> str: ...

    def run(self, argv: Sequence[str], timeout: float) -> CommandResult: ...

    def require(self, result: CommandResult, ok_codes: Sequence[int] = (0,)) -> CommandResult:
        """``result``, or the error it owes a caller that ran one command: the transport's own
        error when it did not run to the end, CommandFailed for an exit code outside ``ok_codes``."""
        ...

    def close(self) -> None: ...


# -- ending what runs ----------------------------------------------------------------------------
# One registry for every transport: ``end(grace)`` ends one running command with everything it
# started (SIGTERM, up to ``grace`` seconds, SIGKILL) and returns when it is gone or cannot be
# reached. Keyed by a counter: the same transport may run several commands at once.
Ender = Callable[[float], None]
_ENDERS: dict[int, Ender] = {}
_ENDERS_LOCK = threading.Lock()
_TICKETS = itertools.count()
# How long stop_all waits for the enders past the grace: a remote kill opens a channel and waits
# for it (each bounded by the transport's own timeouts, ~20 s); a stuck one is not waited for.
_END_SLACK = 30.0


# Threads whose work is being ended: they start nothing more (checked before a command starts,
# and again once it is registered, so one started while stop_all ran is ended at once).
_REFUSED: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
REFUSED_MESSAGE = "not run: ibfab is stopping this job"


def refused() -> bool:
    """Whether the calling thread may start no new command (its job is being ended)."""
    return threading.current_thread() in _REFUSED


@contextmanager
def running(end: Ender) -> Iterator[None]:
    """Register one command for as long as the ``with`` block runs it: :func:`stop_all` calls
    ``end(grace)`` (from another thread) to end it; a refused thread's command is ended at once."""
    ticket = next(_TICKETS)
    with _ENDERS_LOCK:
        _ENDERS[ticket] = end
        late = threading.current_thread() in _REFUSED
    if late:  # started between the check before it and stop_all: end it as stop_all would
        _end_quietly(end, 0.0)
    try:
        yield
    finally:
        with _ENDERS_LOCK:
            _ENDERS.pop(ticket, None)


def stop_all(grace: float = 2.0, refusing: Sequence[threading.Thread] = ()) -> int:
    """End every command any transport has running in this process, all at once (local ones with
    their process group, SSH ones with their remote session); returns how many there were. The
    daemon calls it when it stops, so no tool outlives it, here or on a host; ``refusing`` are its
    job threads still running, which start no new command from then on (:func:`refused`)."""
    with _ENDERS_LOCK:
        _REFUSED.update(refusing)
        enders = list(_ENDERS.values())
    threads = [
        threading.Thread(target=_end_quietly, args=(end, grace), name="stop-command", daemon=True)
        for end in enders
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + grace + _END_SLACK
    for thread in threads:  # all run in parallel: one deadline for all
        thread.join(max(0.0, deadline - time.monotonic()))
    return len(enders)


def running_count() -> int:
    """How many commands are registered as running now (in this process)."""
    with _ENDERS_LOCK:
        return len(_ENDERS)


def _end_quietly(end: Ender, grace: float) -> None:
    # One command that cannot be ended (its host gone) must not keep the others running.
    with contextlib.suppress(Exception):
        end(grace)
