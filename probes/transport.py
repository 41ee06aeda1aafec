"""What a command gives back, wherever it ran, and the one interface every transport offers.

A :class:`Transport` runs an argv on one host and returns a :class:`CommandResult`; it never
raises for a problem of that host (unreachable, refused, wrong key, timeout, tool not found): the
problem is a :class:`FailureKind` in the record, so a fan-out over 500 hosts keeps the other 499
results. :meth:`Transport.require` turns a record into the one error a single command owes its
caller. ``LocalTransport`` (this machine, or a lab fabric's environment, via :mod:`probes.runner`)
and ``probes.ssh.SshTransport`` implement it, so callers do not know which one they hold.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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


class LocalTransport:
    """This machine, through :func:`probes.runner.run` (never a shell).

    ``env`` is added to the environment and ``cwd`` is the working directory of every command
    (a lab fabric is this machine with its simulator's environment); ``after`` runs after each
    command (the lab clears the litter its simulator library leaves).
    """

    def __init__(
        self,
        host: str = "localhost",
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        after: Callable[[], None] | None = None,
    ) -> None:
        self._host = host
        self._env = dict(env) if env else None
        self._cwd = cwd
        self._after = after

    @property
    def host(self) -> str:
        return self._host

    def run(self, argv: Sequence[str], timeout: float) -> CommandResult:
        from probes import runner

        try:
            return runner.run(
                argv, env=self._env, cwd=self._cwd, timeout=timeout, check=False, where=self._host
            )
        except CommandFailed as exc:
            args = tuple(argv)
            if exc.returncode is None:
                return CommandResult(
                    self._host, args, None, "", exc.stderr, 0.0, FailureKind.ERROR, exc.stderr
                )
            return CommandResult(
                self._host,
                args,
                None,
                "",
                exc.stderr,
                timeout,
                FailureKind.COMMAND_TIMEOUT,
                f"command timed out after {timeout:g} s",
            )
        finally:
            if self._after is not None:
                self._after()

    def require(self, result: CommandResult, ok_codes: Sequence[int] = (0,)) -> CommandResult:
        """As :meth:`Transport.require`; a command that did not run to the end here is a
        CommandFailed too (exit code None: not found; -9: timed out)."""
        if result.failure is not None:
            code = None if result.failure is FailureKind.ERROR else -9
            stderr = result.stderr if code is None else f"{result.stderr}\n{result.message}".strip()
            raise CommandFailed(result.argv, code, stderr, self._host)
        error = exit_code_error(result, ok_codes)
        if error is not None:
            raise error
        return result

    def close(self) -> None:
        """Nothing to release for the local machine."""
