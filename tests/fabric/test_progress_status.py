"""The transient status line of slow steps: shown and erased on a terminal, absent otherwise."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

from tests.conftest import REALDATA, ROOT

SMALL = REALDATA / "ibnetdiscover" / "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt"
CMD = [sys.executable, "-c", "from fabric.cli import main; main()", "sweep", "plan", "--input", str(SMALL)]


def _run(stderr_is_terminal: bool) -> tuple[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if not stderr_is_terminal:
        done = subprocess.run(CMD, capture_output=True, text=True, env=env, cwd=ROOT, timeout=60, check=True)
        return done.stdout, done.stderr
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            CMD, stdout=subprocess.PIPE, stderr=follower, env=env, cwd=ROOT, timeout=60, check=True
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    return proc.stdout.decode(), b"".join(chunks).decode()


def test_a_terminal_sees_the_step_and_then_its_erasure() -> None:
    out, err = _run(True)
    # the step, erased; then what the plan left out, a line of its own
    assert err == "planning a rail-pairs sweep ...\r\x1b[Kleft out: 1 aggregation node\r\n"
    assert "planning" not in out


def test_a_pipe_gets_the_result_only() -> None:
    out, err = _run(False)
    # no status line; what the plan has no probe ends for is one line (the lab's aggregation node)
    assert err == "left out: 1 aggregation node\n" and out.startswith("pattern rail-pairs:")
