"""Run a local command: the one place that calls subprocess for tools on this machine.

Every failure becomes :class:`CommandFailed` carrying argv, exit code and stderr, so the CLI can
print one line. A missing binary is reported as such (exit code ``None``).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence

from probes.transport import CommandResult
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
