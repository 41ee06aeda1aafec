"""What a command gives back, wherever it ran, and the one interface every transport offers.

A :class:`Transport` runs an argv on one host and returns a :class:`CommandResult`; it never
raises for a problem of that host (unreachable, refused, wrong key, timeout, tool not found): the
problem is a :class:`FailureKind` in the record, so a fan-out over 500 hosts keeps the other 499
results. :meth:`Transport.require` turns a record into the one error a single command owes its
caller. ``probes.runner.LocalTransport`` (this machine, or a lab fabric's environment)
and ``probes.ssh.SshTransport`` implement it, so callers do not know which one they hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from topology.errors import CommandFailed, IbfabError, TransportError


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
    """

    host: str
    argv: tuple[str, ...]
    exit_code: int | None
    stdout: str
    stderr: str
    duration: float
    failure: FailureKind | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.failure is None and self.exit_code == 0


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
    exit code outside ``ok_codes``."""
    if result.exit_code is not None and result.exit_code not in ok_codes:
        return CommandFailed(result.argv, result.exit_code, result.stderr, where or result.host)
    return None


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
