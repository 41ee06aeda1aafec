"""Run a local command: the one place that calls subprocess for tools on this machine, and the
transport for this machine (:class:`LocalTransport`).

Every failure becomes :class:`CommandFailed` carrying argv, exit code and stderr, so the CLI can
print one line. A missing binary is reported as such (exit code ``None``). Every command runs in
a process group of its own, with its output and its time bounded (:func:`run`).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

from probes.output import decode
from probes.transport import (
    MAX_OUTPUT_BYTES,
    REFUSED_MESSAGE,
    CommandResult,
    FailureKind,
    OutputCap,
    exit_code_error,
    refused,
    running,
)
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
    max_output: int = MAX_OUTPUT_BYTES,
) -> CommandResult:
    """Run ``argv`` (never through a shell); ``env`` is added to the current environment.

    The command runs in a session (process group) of its own: a timeout, an interrupt or
    :func:`probes.transport.stop_all` ends it with everything it started. ``timeout`` bounds the
    whole run, reading included; each of stdout and stderr keeps at most ``max_output`` bytes (its
    head and tail, with a line saying where and how much was cut: ``CommandResult.cut``).
    """
    if refused():  # this job is being ended (the daemon is stopping): start nothing more
        raise CommandFailed(argv, None, REFUSED_MESSAGE, where)
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    start = time.monotonic()
    deadline = None if timeout is None else start + timeout
    try:
        proc = subprocess.Popen(
            list(argv),
            env=full_env,
            cwd=cwd,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise CommandFailed(argv, None, f"{argv[0]}: command not found", where) from exc
    except PermissionError as exc:
        raise CommandFailed(argv, None, f"{argv[0]}: permission denied", where) from exc
    out, err = _Newlines(OutputCap(max_output)), _Newlines(OutputCap(max_output))
    try:
        with running(lambda grace: _end_group(proc, grace)):
            finished = _pump(proc, None if stdin is None else stdin.encode(), out, err, deadline)
            if not finished:
                _kill_group(proc)
                message = f"timed out after {timeout:g} s"
                raise CommandFailed(argv, -9, (decode(err.take()) + "\n" + message).strip(), where)
            returncode = proc.wait()
    except BaseException:
        _kill_group(proc)  # an interrupt or a bug here must not leave the tool running
        raise
    finally:
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    cut = out.cut + err.cut
    result = CommandResult(
        where,
        tuple(argv),
        returncode,
        out.take(),
        err.take(),
        time.monotonic() - start,
        cut=cut,
    )
    if check and returncode not in ok_codes:
        raise CommandFailed(argv, returncode, result.stderr, where)
    return result


def _pump(
    proc: subprocess.Popen[bytes],
    stdin: bytes | None,
    out: _Newlines,
    err: _Newlines,
    deadline: float | None,
) -> bool:
    """Feed stdin and read stdout/stderr until both end (True) or the deadline passes (False)."""
    assert proc.stdout is not None and proc.stderr is not None
    sel = selectors.DefaultSelector()
    try:
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        pending = memoryview(stdin or b"")
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            if pending:
                sel.register(proc.stdin, selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
        readers = 2
        while readers:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                return False
            for key, _ in sel.select(wait):
                if key.fileobj is proc.stdin:
                    try:
                        pending = pending[os.write(proc.stdin.fileno(), pending[:65536]) :]
                    except BrokenPipeError:
                        pending = pending[:0]  # the tool does not read its input: fine
                    if not pending:
                        sel.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                fileobj = key.fileobj
                assert hasattr(fileobj, "fileno")
                chunk = os.read(fileobj.fileno(), 65536)
                if chunk:
                    key.data.feed(chunk)
                else:
                    sel.unregister(fileobj)
                    readers -= 1
        return True
    finally:
        sel.close()


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)  # the tool's own session: its pid is the group id


def _end_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """How :func:`probes.transport.stop_all` ends a running tool: SIGTERM to its group, then
    SIGKILL after ``grace`` seconds to what is left (children that outlived their parent too)."""
    _signal_group(proc, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(grace)
    _signal_group(proc, signal.SIGKILL)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    _signal_group(proc, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL is not refused: seldom waits
        proc.wait(5.0)


class _Newlines:
    """One stream of a local command, with universal newlines as text mode read them before
    (CR LF and a lone CR become LF) as it arrives, a CR at the end of a read held back until
    the next read says which it was; kept in ``cap``."""

    def __init__(self, cap: OutputCap) -> None:
        self.cap = cap
        self._cr = False  # the last read ended with a CR

    @property
    def cut(self) -> int:
        return self.cap.cut

    def feed(self, data: bytes) -> None:
        if self._cr:
            data = b"\r" + data
        self._cr = data.endswith(b"\r")
        if self._cr:
            data = data[:-1]
        self.cap.feed(data.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))

    def take(self) -> bytes:
        if self._cr:
            self.cap.feed(b"\n")
            self._cr = False
        return self.cap.take()


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
