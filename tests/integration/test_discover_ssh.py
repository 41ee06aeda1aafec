"""``ibfab discover --ssh``: the real ibnetdiscover on a "management host" reached over a real sshd.

The sshd on loopback sets the lab's LD_PRELOAD and IBSIM_SOCKNAME in its sessions (SetEnv), so
the remote ibnetdiscover talks to a running ibsim fabric, as on a host with an HCA.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.lab import simulator as lab
from tests.sshd import Sshd, start_sshd

pytestmark = [pytest.mark.lab, pytest.mark.sshd]


@pytest.fixture(scope="module")
def lab_over_ssh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sshd, str]]:
    labs = tmp_path_factory.mktemp("labs")
    mp = pytest.MonkeyPatch()
    mp.setenv("IBFAB_LAB_DIR", str(labs))
    lab.up("rail-small", ("miswire:dgx-0002:1:2",), name="ssh")
    try:
        env = lab.tool_env("ssh")
        with start_sshd(tmp_path_factory.mktemp("sshd"), hosts=1, session_env=env) as server:
            yield server, str(labs)
    finally:
        lab.down("ssh")
        mp.undo()


def _args(server: Sshd, known_hosts: Path, *extra: str) -> list[str]:
    host = f"root@{server.addresses[0]}:{server.port}"
    return [
        "discover",
        "--ssh",
        host,
        "--identity",
        str(server.user_key),
        "--known-hosts",
        str(known_hosts),
        *extra,
    ]


def test_discover_over_ssh_runs_the_real_tool(lab_over_ssh: tuple[Sshd, str], tmp_path: Path) -> None:
    server, _ = lab_over_ssh
    known = server.write_known_hosts(tmp_path / "known_hosts")
    res = CliRunner().invoke(main, _args(server, known, "--json"))
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert (out["summary"]["switches"], out["summary"]["hcas"]) == (20, 64)
    assert out["summary"]["source"] == f"ssh root@{server.addresses[0]}:{server.port}"
    assert [a["kind"] for a in out["anomalies"]] == ["rail_miswire"]


def test_unknown_host_key_is_refused(lab_over_ssh: tuple[Sshd, str], tmp_path: Path) -> None:
    server, _ = lab_over_ssh
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    res = CliRunner().invoke(main, _args(server, empty))
    assert res.exit_code == 7
    line = res.output.strip()
    assert len(line.splitlines()) == 1 and server.addresses[0] in line and "host key" in line.lower()


def test_accepting_a_new_host_key_is_opt_in(lab_over_ssh: tuple[Sshd, str], tmp_path: Path) -> None:
    server, _ = lab_over_ssh
    known = tmp_path / "known_hosts"
    known.write_text("")
    res = CliRunner().invoke(main, [*_args(server, known), "--accept-new-host-key"])
    assert res.exit_code == 0, res.output
    assert server.addresses[0] in known.read_text()


def test_changed_host_key_is_refused_even_with_opt_in(lab_over_ssh: tuple[Sshd, str], tmp_path: Path) -> None:
    server, _ = lab_over_ssh
    known = tmp_path / "known_hosts"
    other = tmp_path / "other"
    from tests.sshd import keygen

    keygen(other)
    kind, blob = other.with_suffix(".pub").read_text().split()[:2]
    known.write_text(f"[{server.addresses[0]}]:{server.port} {kind} {blob}\n")
    res = CliRunner().invoke(main, [*_args(server, known), "--accept-new-host-key"])
    assert res.exit_code == 7
    assert server.addresses[0] in res.output and "Traceback" not in res.output


def test_remote_tool_failure_is_reported_with_its_stderr(tmp_path: Path) -> None:
    """Without the lab environment the remote ibnetdiscover has no HCA: its own error comes back."""
    with start_sshd(tmp_path / "plain", hosts=1) as server:
        known = server.write_known_hosts(tmp_path / "known_hosts")
        res = CliRunner().invoke(main, _args(server, known))
    assert res.exit_code == 4
    assert "ibnetdiscover" in res.output and "can't open MAD port" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_unreachable_host_is_one_line() -> None:
    res = CliRunner().invoke(main, ["discover", "--ssh", "127.0.0.1:1"])
    assert res.exit_code == 7
    assert res.output.strip() == "ibfab: error: 127.0.0.1: connection refused on port 1"
