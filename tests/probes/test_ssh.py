"""SshTransport and fan-out against a real sshd on 127.0.0.2-9 (see tests/sshd.py)."""

from __future__ import annotations

import re
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from probes.fanout import HostLocks, fan_out, fold
from probes.inventory import HostEntry, parse_inventory
from probes.preflight import preflight_hosts
from probes.ssh import SshTransport, ssh_transport_factory
from probes.transport import FailureKind, HostError
from tests.servers import free_port
from tests.sshd import Sshd, keygen, sshd_server, start_sshd

pytestmark = pytest.mark.sshd
__all__ = ["sshd_server"]  # the fixture, imported so pytest finds it here


@pytest.fixture
def known_hosts(sshd_server: Sshd, tmp_path: Path) -> Path:
    return sshd_server.write_known_hosts(tmp_path / "known_hosts")


def entry(server: Sshd, n: int = 2, **kw: object) -> HostEntry:
    fields: dict[str, object] = {
        "address": f"127.0.0.{n}",
        "user": server.user,
        "port": server.port,
        "key_file": str(server.user_key),
    }
    fields.update(kw)
    return HostEntry(f"node{n}", **fields)  # type: ignore[arg-type]


def transport(server: Sshd, known_hosts: Path, n: int = 2, **kw: object) -> SshTransport:
    opts: dict[str, object] = {"known_hosts": known_hosts, "ssh_config": None, "connect_timeout": 5.0}
    opts.update(kw)
    return SshTransport(entry(server, n), **opts)  # type: ignore[arg-type]


def connections_logged(server: Sshd, address: str) -> int:
    return len(re.findall(rf"Connection from \S+ port \d+ on {re.escape(address)} ", server.log_text()))


def test_success_gives_stdout_and_exit_code(sshd_server: Sshd, known_hosts: Path) -> None:
    with transport(sshd_server, known_hosts) as t:
        r = t.run(["uname", "-s"], timeout=10)
        again = t.run(["sh", "-c", "exit 7"], timeout=10)
    assert (r.host, r.exit_code, r.stdout, r.stderr, r.failure) == ("node2", 0, "Linux\n", "", None)
    assert r.ok and r.argv == ("uname", "-s") and r.duration > 0
    assert (again.exit_code, again.failure, again.ok) == (7, None, False)


def test_partial_output_then_failure_keeps_both_streams(sshd_server: Sshd, known_hosts: Path) -> None:
    with transport(sshd_server, known_hosts) as t:
        r = t.run(["sh", "-c", "echo part one; echo 'disk on fire' >&2; exit 3"], timeout=10)
    assert (r.exit_code, r.stdout, r.stderr, r.failure) == (3, "part one\n", "disk on fire\n", None)


def test_shell_metacharacters_in_argv_reach_the_command_literally(
    sshd_server: Sshd, known_hosts: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "pwned"
    nasty = [f"; touch {victim}", f"$(touch {victim})", f"`touch {victim}`", "a'b\"c", "x\ny", "*"]
    with transport(sshd_server, known_hosts) as t:
        r = t.run(["printf", "%s|", *nasty], timeout=10)
    assert r.exit_code == 0
    assert r.stdout == "".join(f"{a}|" for a in nasty)
    assert not victim.exists()


def test_wrong_user_key_is_an_auth_failure_and_not_retried(sshd_server: Sshd, tmp_path: Path) -> None:
    kh = sshd_server.write_known_hosts(tmp_path / "kh")
    stranger = keygen(tmp_path / "stranger")
    before = connections_logged(sshd_server, "127.0.0.3")
    t = SshTransport(
        entry(sshd_server, 3, key_file=str(stranger)),
        known_hosts=kh,
        ssh_config=None,
        retries=3,
        retry_delay=0.1,
    )
    r = t.run(["true"], timeout=5)
    assert r.failure is FailureKind.AUTH and r.exit_code is None
    assert "authentication failed" in r.message
    with pytest.raises(HostError, match=r"^node3: authentication failed") as info:
        t.connect()
    assert info.value.kind is FailureKind.AUTH
    time.sleep(0.2)
    assert connections_logged(sshd_server, "127.0.0.3") - before == 2  # one per call, no retries


def test_unknown_host_key_is_refused_unless_accept_new_then_remembered(
    sshd_server: Sshd, tmp_path: Path
) -> None:
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    refused = SshTransport(entry(sshd_server, 4), known_hosts=kh, ssh_config=None).run(["true"], timeout=5)
    assert refused.failure is FailureKind.HOST_KEY
    assert refused.message.startswith(f"unknown host key (ssh-ed25519), not in {kh}; verify it")
    with pytest.raises(HostError, match=r"^node4: unknown host key"):
        SshTransport(entry(sshd_server, 4), known_hosts=kh, ssh_config=None).connect()
    assert kh.read_text() == ""

    accepted = SshTransport(entry(sshd_server, 4), known_hosts=kh, ssh_config=None, accept_new=True)
    assert accepted.run(["echo", "hi"], timeout=5).stdout == "hi\n"
    accepted.close()
    expected = sshd_server.known_hosts_lines(("127.0.0.4",))
    assert kh.read_text() == expected

    later = SshTransport(entry(sshd_server, 4), known_hosts=kh, ssh_config=None)
    assert later.run(["true"], timeout=5).ok
    later.close()
    assert kh.read_text() == expected  # nothing appended twice


def test_changed_host_key_names_the_host_even_with_accept_new(sshd_server: Sshd, tmp_path: Path) -> None:
    other = keygen(tmp_path / "impostor")
    kind, blob = other.with_suffix(".pub").read_text().split()[:2]
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.5]:{sshd_server.port} {kind} {blob}\n")
    for accept_new in (False, True):
        t = SshTransport(entry(sshd_server, 5), known_hosts=kh, ssh_config=None, accept_new=accept_new)
        with pytest.raises(HostError, match=r"^node5: host key of \[127\.0\.0\.5\]:\d+ has CHANGED") as info:
            t.connect()
        assert info.value.kind is FailureKind.HOST_KEY
        assert t.run(["true"], timeout=5).failure is FailureKind.HOST_KEY
    assert kh.read_text().count("\n") == 1


def test_closed_port_is_refused_after_retries(tmp_path: Path) -> None:
    port = free_port()
    t = SshTransport(
        HostEntry("ghost", "127.0.0.1", "root", port), known_hosts=tmp_path / "kh", ssh_config=None, retries=2
    )
    t._retry_delay = 0.1
    start = time.monotonic()
    r = t.run(["true"], timeout=5)
    assert r.failure is FailureKind.REFUSED
    assert r.message == f"connection refused on port {port}"
    assert time.monotonic() - start >= 0.3  # slept 0.1 + 0.2 between three attempts


@pytest.fixture
def silent_listener() -> Iterator[tuple[int, list[socket.socket]]]:
    """A TCP port on loopback that accepts connections and never says a word."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(2)
    for s in [*accepted, server]:
        s.close()


def test_server_that_never_speaks_ssh_is_a_connect_timeout_and_retried(
    silent_listener: tuple[int, list[socket.socket]], tmp_path: Path
) -> None:
    port, accepted = silent_listener
    t = SshTransport(
        HostEntry("mute", "127.0.0.1", "root", port),
        known_hosts=tmp_path / "kh",
        ssh_config=None,
        connect_timeout=0.5,
        retries=1,
        retry_delay=0.05,
    )
    start = time.monotonic()
    r = t.run(["true"], timeout=5)
    elapsed = time.monotonic() - start
    assert r.failure is FailureKind.TIMEOUT
    assert r.message == f"no SSH handshake on port {port} within 0.5 s"
    assert len(accepted) == 2
    # each attempt waited its 0.5 s; the upper bound is a deadline far below paramiko's own
    # defaults (15 s a banner), which a connect timeout not applied would wait
    assert 1.0 <= elapsed < 20.0


def test_hanging_command_is_killed_on_the_remote_side(sshd_server: Sshd, known_hosts: Path) -> None:
    marker = f"ibfab-hang-{uuid.uuid4().hex[:12]}"
    naps = f"{600 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 1000}"  # also unique, for the children
    with transport(sshd_server, known_hosts) as t:
        start = time.monotonic()
        script = f"echo started; sleep {naps} & sleep {naps}; echo never"
        r = t.run(["sh", "-c", script, marker], timeout=1.0)
        elapsed = time.monotonic() - start
        assert r.failure is FailureKind.COMMAND_TIMEOUT
        assert r.stdout == "started\n" and r.exit_code is None
        assert "timed out after 1 s and was killed" in r.message
        assert elapsed < 60.0  # a deadline, not a speed: the command sleeps 600 s
        # the connection still works after the kill
        assert t.run(["echo", "alive"], timeout=5).stdout == "alive\n"
    deadline = time.monotonic() + 30
    while True:
        pattern = f"{marker}|sleep {naps}"
        left = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert left == [], f"remote command survived: {left}"


def test_jump_host_reaches_the_target_through_a_direct_tcpip_channel(
    sshd_server: Sshd, known_hosts: Path
) -> None:
    jump = entry(sshd_server, 2)
    target = entry(sshd_server, 6, jump=jump)
    before = connections_logged(sshd_server, "127.0.0.6")
    with SshTransport(target, known_hosts=known_hosts, ssh_config=None) as t:
        r = t.run(["echo", "via jump"], timeout=10)
    assert (r.exit_code, r.stdout) == (0, "via jump\n")
    time.sleep(0.2)
    assert connections_logged(sshd_server, "127.0.0.6") == before + 1

    closed = HostEntry("far", "127.0.0.1", sshd_server.user, free_port(), str(sshd_server.user_key), jump)
    r = SshTransport(closed, known_hosts=known_hosts, ssh_config=None, retries=0).run(["true"], timeout=5)
    assert r.failure is FailureKind.UNREACHABLE
    assert r.message.startswith("jump host node2 could not connect to port")


@pytest.mark.parametrize("workers", [1, 2], ids=["threads", "2-workers"])
def test_fan_out_to_many_hosts_folds_identical_output(
    sshd_server: Sshd, known_hosts: Path, workers: int
) -> None:
    inv = parse_inventory(
        f"node[2-9] address=127.0.0.[2-9] user={sshd_server.user} port={sshd_server.port} "
        f"key_file={sshd_server.user_key}\nnode10 address=127.0.0.1 port={free_port()}\n",
        "test-hosts.txt",
    )
    factory = ssh_transport_factory(known_hosts=known_hosts, ssh_config=None, retries=0, connect_timeout=5)

    def argv(h: HostEntry) -> list[str]:
        return ["sh", "-c", "echo special; exit 1"] if h.name in ("node4", "node7") else ["echo", "same"]

    results = fan_out(inv.hosts, argv, factory, concurrency=4, timeout=10, locks=HostLocks(), workers=workers)
    assert [r.host for r in results] == [f"node{i}" for i in range(2, 11)]
    folded = fold(results)
    assert [(f.hosts, f.count, f.exit_code, f.stdout, f.failure) for f in folded] == [
        ("node[2-3,5-6,8-9]", 6, 0, "same\n", None),
        ("node[4,7]", 2, 1, "special\n", None),
        ("node10", 1, None, "", FailureKind.REFUSED),
    ]


def test_remote_preflight_on_this_machine_finds_no_rdma_device(sshd_server: Sshd, known_hosts: Path) -> None:
    hosts = [entry(sshd_server, n) for n in (2, 3, 4)]
    factory = ssh_transport_factory(known_hosts=known_hosts, ssh_config=None)
    reports = preflight_hosts(hosts, factory, timeout=10)
    assert [r.host for r in reports] == ["node2", "node3", "node4"]
    for r in reports:
        assert r.result.exit_code == 0 and r.result.stdout == "no-rdma\n"
        assert r.ports == () and r.problem == "no RDMA device" and r.summary() == "no RDMA device"


def test_remote_preflight_reads_a_sysfs_tree(sshd_server: Sshd, known_hosts: Path, tmp_path: Path) -> None:
    from tests.probes.test_preflight import make_sysfs

    root = make_sysfs(tmp_path / "ib")
    factory = ssh_transport_factory(known_hosts=known_hosts, ssh_config=None)
    (report,) = preflight_hosts([entry(sshd_server, 8)], factory, timeout=10, sysfs_root=str(root))
    assert report.problem is None
    assert [(p.host, p.device, p.port, p.state, p.rate_gbps, p.lid) for p in report.ports] == [
        ("node8", "mlx5_0", 1, "ACTIVE", 400.0, 0x1A),
        ("node8", "mlx5_1", 1, "DOWN", 40.0, 0),
        ("node8", "mlx5_1", 2, "ACTIVE", 200.0, 0x22),
    ]


def test_cli_hosts_run_and_check_fold_hosts(sshd_server: Sshd, known_hosts: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from fabric.cli.main import main

    inv = tmp_path / "inv.toml"
    inv.write_text(
        f'[defaults]\nuser = "{sshd_server.user}"\nport = {sshd_server.port}\nkey_file = "{sshd_server.user_key}"\n'
        '[[hosts]]\nname = "dgx-[01-04]"\naddress = "127.0.0.[2-5]"\n'
    )
    common = ["-i", str(inv), "--known-hosts", str(known_hosts), "--ssh-config", ""]
    res = CliRunner().invoke(main, ["hosts", "run", *common, "--", "echo", "$HOME;x"])
    assert res.exit_code == 0, res.output
    assert res.stdout == "== dgx-[01-04] (4 hosts): exit 0\n$HOME;x\n"

    res = CliRunner().invoke(
        main, ["hosts", "run", *common, "-w", "dgx-[02-03]", "--json", "--", "sh", "-c", "exit 4"]
    )
    assert res.exit_code == 1
    assert '"host": "dgx-02"' in res.stdout and '"exit_code": 4' in res.stdout and "dgx-01" not in res.stdout
    assert "ibfab: 2 of 2 hosts failed: dgx-[02-03]" in res.stderr

    res = CliRunner().invoke(main, ["hosts", "check", *common])
    assert res.exit_code == 1
    assert res.stdout == "dgx-[01-04] (4): FAIL: no RDMA device\n"

    empty = tmp_path / "empty_kh"
    empty.write_text("")
    res = CliRunner().invoke(main, ["hosts", "run", *common[:2], "--known-hosts", str(empty), "--", "true"])
    assert res.exit_code == 7
    assert res.stdout == (
        f"== dgx-[01-04] (4 hosts): host_key: unknown host key (ssh-ed25519), not in {empty}; "
        "verify it, then connect once with accept-new\n"
    )


def test_gcm_is_chosen_when_offered_and_an_older_server_still_connects(
    sshd_server: Sshd, known_hosts: Path, tmp_path: Path
) -> None:
    with transport(sshd_server, known_hosts) as t:
        t.connect()
        assert t._client is not None
        negotiated = t._client.get_transport()
        assert negotiated is not None and negotiated.local_cipher == "aes128-gcm@openssh.com"
    # A server without GCM (its Ciphers line) still gets a cipher from the rest of the offer.
    with start_sshd(tmp_path / "old", hosts=1, extra_config=("Ciphers aes256-ctr",)) as old:
        kh = old.write_known_hosts(tmp_path / "old_known_hosts")
        with SshTransport(
            HostEntry("old", old.addresses[0], old.user, old.port, str(old.user_key)),
            known_hosts=kh,
            ssh_config=None,
        ) as t:
            r = t.run(["echo", "ok"], timeout=10)
            assert t._client is not None
            negotiated = t._client.get_transport()
            assert negotiated is not None and negotiated.local_cipher == "aes256-ctr"
        assert r.ok and r.stdout == "ok\n"
