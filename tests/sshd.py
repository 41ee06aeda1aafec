"""A real OpenSSH sshd on loopback for tests and benchmarks.

It listens on 127.0.0.2 ... 127.0.0.(N+1), so one daemon plays N "hosts"; keys, config, PID file
and log live in a private directory, and it is stopped by PID. Use :func:`start_sshd` (a context
manager) from a benchmark, or the ``sshd_server`` fixture (import it into a test module).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers import free_port

SSHD = "/usr/sbin/sshd"


@dataclass(frozen=True)
class Sshd:
    directory: Path
    addresses: tuple[str, ...]
    port: int
    pids: tuple[int, ...]  # one daemon per 16 addresses
    user: str
    user_key: Path  # private key authorised for ``user``
    host_key: Path  # private host key; ``host_key.pub`` is its public half
    logs: tuple[Path, ...]

    def log_text(self) -> str:
        return "".join(p.read_text() for p in self.logs if p.exists())

    def known_hosts_lines(self, addresses: tuple[str, ...] | None = None) -> str:
        """known_hosts lines for our host key on every (or the given) address."""
        kind, blob = self.host_key.with_suffix(".pub").read_text().split()[:2]
        return "".join(f"[{a}]:{self.port} {kind} {blob}\n" for a in (addresses or self.addresses))

    def write_known_hosts(self, path: Path) -> Path:
        path.write_text(self.known_hosts_lines())
        return path


def keygen(path: Path, kind: str = "ed25519") -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "ibfab-test", "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return path


def _answers(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1.0) as s:
            return s.recv(64).startswith(b"SSH-")
    except OSError:
        return False


# OpenSSH's MAX_LISTEN_SOCKS: one daemon listens on at most 16 addresses.
_ADDRESSES_PER_DAEMON = 16


@contextmanager
def start_sshd(
    directory: Path,
    hosts: int = 8,
    user: str | None = None,
    skip_bashrc: bool = False,
    session_env: dict[str, str] | None = None,
    extra_config: tuple[str, ...] = (),
) -> Iterator[Sshd]:
    """Start sshd on ``hosts`` loopback addresses (127.0.0.2 ...) and stop it afterwards.

    More than 16 addresses take several daemons on the same port, sharing the keys.
    ``skip_bashrc``: Debian's bash sources ``~/.bashrc`` for every command run over ssh (and
    root's here runs ``pyenv init``, ~0.3 s of CPU); ``SHLVL=1`` in the session makes bash skip it,
    so a benchmark measures the transport rather than one user's shell start-up.
    ``session_env``: variables sshd sets in every session (``SetEnv``), e.g. to point the real
    infiniband-diags tools on this "host" at a lab fabric.
    ``extra_config``: more sshd_config lines (e.g. ``Ciphers aes128-ctr`` for an older server).
    """
    if not os.path.exists(SSHD) or shutil.which("ssh-keygen") is None:
        pytest.skip("openssh-server is not installed")
    if os.geteuid() != 0:
        pytest.skip("sshd needs root to switch to the logged-in user")
    if not 1 <= hosts <= 250:
        raise ValueError("1 to 250 loopback hosts")
    directory.mkdir(parents=True, exist_ok=True)
    user = user or os.environ.get("USER") or "root"
    host_key = keygen(directory / "host_ed25519")
    user_key = keygen(directory / "user_ed25519")
    authorized = directory / "authorized_keys"
    authorized.write_text(user_key.with_suffix(".pub").read_text())
    addresses = tuple(f"127.0.0.{n}" for n in range(2, hosts + 2))
    port = free_port()
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    pids: list[int] = []
    logs: list[Path] = []
    try:
        for i in range(0, len(addresses), _ADDRESSES_PER_DAEMON):
            chunk = addresses[i : i + _ADDRESSES_PER_DAEMON]
            pid, log = _start_one(
                directory / f"d{i // _ADDRESSES_PER_DAEMON}",
                chunk,
                port,
                host_key,
                authorized,
                skip_bashrc,
                session_env or {},
                extra_config,
            )
            pids.append(pid)
            logs.append(log)
        yield Sshd(directory, addresses, port, tuple(pids), user, user_key, host_key, tuple(logs))
    finally:
        for pid in pids:
            _stop(pid)


def _start_one(
    directory: Path,
    addresses: tuple[str, ...],
    port: int,
    host_key: Path,
    authorized: Path,
    skip_bashrc: bool,
    session_env: dict[str, str],
    extra_config: tuple[str, ...] = (),
) -> tuple[int, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    env = {**({"SHLVL": "1"} if skip_bashrc else {}), **session_env}
    pidfile, log = directory / "sshd.pid", directory / "sshd.log"
    config = directory / "sshd_config"
    lines = [
        f"Port {port}",
        *(f"ListenAddress {a}" for a in addresses),
        f"HostKey {host_key}",
        f"PidFile {pidfile}",
        f"AuthorizedKeysFile {authorized}",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PubkeyAuthentication yes",
        "PermitRootLogin prohibit-password",
        "UsePAM no",
        "StrictModes no",
        "UseDNS no",
        "AllowTcpForwarding yes",
        # fan-out opens many connections at once; the default 10:30:100 drops some of them
        "MaxStartups 200",
        "MaxSessions 50",
        "LogLevel VERBOSE",
        # One SetEnv line: sshd keeps only the first line of most keywords.
        *([f"SetEnv {' '.join(f'{k}={v}' for k, v in env.items())}"] if env else []),
        *extra_config,
    ]
    config.write_text("\n".join(lines) + "\n")
    subprocess.run([SSHD, "-f", str(config), "-E", str(log)], check=True, capture_output=True)
    deadline = time.monotonic() + 15
    while not (pidfile.exists() and pidfile.read_text().strip()):
        text = log.read_text() if log.exists() else ""
        if time.monotonic() > deadline or "fatal" in text.lower() or "Too many" in text:
            raise RuntimeError(f"sshd did not start: {text.strip().splitlines()[-1:] or 'no log'}")
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    try:
        for a in addresses:
            while not _answers(a, port):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"sshd does not answer on {a}:{port}: {log.read_text()}")
                time.sleep(0.05)
    except BaseException:
        _stop(pid)
        raise
    return pid, log


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def sshd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """One sshd per test module, playing 8 hosts on 127.0.0.2-9."""
    with start_sshd(tmp_path_factory.mktemp("sshd"), hosts=8) as server:
        yield server
