"""Run a local command: the one place that calls subprocess for tools on this machine, and the
transport for this machine (:class:`LocalTransport`).

Every failure becomes :class:`CommandFailed` carrying argv, exit code and stderr, so the CLI can
print one line. A missing binary is reported as such (exit code ``None``).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

from probes.transport import CommandResult, FailureKind, exit_code_error
from topology.errors import CommandFailed


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    timeout: float | None = 120.0,
    check: bool = True,
    ok_codes: Sequence[int] = (0,),
    where: str = "local",
    stdin: str | None = None,
) -> CommandResult:
    """Run ``argv`` (never through a shell); ``env`` is added to the current environment."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    start = time.monotonic()
    try:
        proc = subprocess.run(
            list(argv),
            env=full_env,
            cwd=cwd,
            input=stdin,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise CommandFailed(argv, None, f"{argv[0]}: command not found", where) from exc
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        raise CommandFailed(argv, -9, (err + f"\ntimed out after {timeout:g} s").strip(), where) from exc
    result = CommandResult(
        where, tuple(argv), proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start
    )
    if check and proc.returncode not in ok_codes:
        raise CommandFailed(argv, proc.returncode, proc.stderr, where)
    return result


class LocalTransport:
    """This machine, through :func:`run` (never a shell).

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
