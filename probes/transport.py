"""What a probe gets back from a host, and the one interface every transport offers.

A :class:`Transport` runs an argv on one host and returns a :class:`HostResult`; it never raises
for a problem of that host (unreachable, refused, wrong key, timeout): the problem is a
:class:`FailureKind` in the record, so a fan-out over 500 hosts keeps the other 499 results.
``LocalTransport`` (this machine, via :mod:`probes.runner`) and ``probes.ssh.SshTransport`` both
implement it, so the callers do not know which one they hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from topology.errors import CommandFailed, TransportError


class FailureKind(StrEnum):
    """Why a command did not run to completion on a host (``None`` in a record: it did)."""

    UNREACHABLE = "unreachable"  # no route, name does not resolve, connection lost
    REFUSED = "refused"  # nothing listens on the SSH port
    AUTH = "auth"  # the server rejected our user or key
    HOST_KEY = "host_key"  # the server's host key is unknown or changed
    TIMEOUT = "timeout"  # the connection or the SSH handshake did not finish in time
    COMMAND_TIMEOUT = "command_timeout"  # the command ran too long and was killed
    ERROR = "error"  # anything else (e.g. the local command does not exist)


@dataclass(frozen=True, slots=True)
class HostResult:
    """One command on one host.

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


class Transport(Protocol):
    """Runs commands on one host."""

    @property
    def host(self) -> str: ...

    def run(self, argv: Sequence[str], timeout: float) -> HostResult: ...

    def close(self) -> None: ...


class LocalTransport:
    """This machine, through :func:`probes.runner.run` (never a shell)."""

    def __init__(self, host: str = "localhost") -> None:
        self._host = host

    @property
    def host(self) -> str:
        return self._host

    def run(self, argv: Sequence[str], timeout: float) -> HostResult:
        from probes import runner

        args = tuple(argv)
        try:
            done = runner.run(args, timeout=timeout, check=False, where=self._host)
        except CommandFailed as exc:
            if exc.returncode is None:
                return HostResult(self._host, args, None, "", exc.stderr, 0.0, FailureKind.ERROR, exc.stderr)
            return HostResult(
                self._host,
                args,
                None,
                "",
                exc.stderr,
                timeout,
                FailureKind.COMMAND_TIMEOUT,
                f"command timed out after {timeout:g} s",
            )
        return HostResult(self._host, args, done.returncode, done.stdout, done.stderr, done.seconds)

    def close(self) -> None:
        """Nothing to release for the local machine."""
