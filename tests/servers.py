"""Small helpers for tests that start real servers on loopback (sshd, slurmctld, the exporter,
Prometheus): a free port, a JSON GET, and stopping a process the test started."""

from __future__ import annotations

import json
import socket
import subprocess
import urllib.request
from contextlib import closing
from typing import Any


def free_port(address: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on at ``address`` right now."""
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def get_json(url: str, timeout: float = 10.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read())


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    """SIGTERM the process this test started, SIGKILL if it does not end within ``timeout``."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
