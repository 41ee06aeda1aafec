"""Inputs that used to end in a traceback or be accepted silently: each is now one line on stderr
with the README's exit code (2 usage, 3 unparsable input, 7 SSH), through the real CLI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.store import Store
from tests.conftest import REALDATA
from tests.sshd import Sshd, sshd_server
from topology.errors import MAX_ERROR_CHARS

__all__ = ["sshd_server"]

SMALL = REALDATA / "ibnetdiscover" / "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt"


def one_line(args: list[str], code: int, stdin: bytes | None = None) -> str:
    res = CliRunner().invoke(main, args, input=stdin)
    assert res.exit_code == code, (res.exit_code, res.output, res.exception)
    err = res.stderr
    assert err.startswith("ibfab: error: ") and err.count("\n") == 1, err
    assert len(err) <= MAX_ERROR_CHARS + 20 and "Traceback" not in res.output
    return err


# -- thresholds -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"[health]\n# caf\xe9\nflap_warn = 2\n", "not UTF-8 text (byte 14)"),
        (b"[health]\nflap_warn = 1e400\n", "'flap_warn' must be a finite number, not inf"),
        (b"[health]\nber_target = inf\n", "'ber_target' must be a finite number, not inf"),
        (b"[health]\nber_target = nan\n", "'ber_target' must be a finite number, not nan"),
        (b"[health]\nflap_warn = 5\nflap_critical = 3\n", "flap_warn (5) must be below flap_critical (3)"),
        (b"[health]\nflap_warn = 3\nflap_critical = 3\n", "flap_warn (3) must be below flap_critical (3)"),
        (b"[health]\ncongestion_watch = 0.5\n", "congestion_watch (0.5) must be below congestion_warn (0.1)"),
        (b"[health]\nber_target = -1e-14\n", "'ber_target' must be positive"),
    ],
)
def test_bad_thresholds_are_one_line_usage_errors(tmp_path: Path, body: bytes, needle: str) -> None:
    path = tmp_path / "t.toml"
    path.write_bytes(body)
    assert needle in one_line(["health", "--thresholds", str(path)], 2)


def test_good_thresholds_still_load(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text("[health]\nflap_warn = 2\nflap_critical = 4\nber_target = 1e-13\n")
    res = CliRunner().invoke(main, ["health", "--thresholds", str(path)])
    assert "health threshold" not in res.output  # what fails now is the empty store, not the file


def test_a_duration_too_long_to_mean_anything() -> None:
    err = one_line(["schedule", "add", "x", "--kind", "counters", "--every", "99999999999999999999d"], 2)
    assert "longer than 10 years" in err


# -- routes and captures --------------------------------------------------------------------------
def test_sweep_plan_routes_missing_or_a_directory(tmp_path: Path) -> None:
    base = ["sweep", "plan", "--input", str(SMALL), "--routes"]
    assert "No such file or directory" in one_line([*base, str(tmp_path / "none.lft")], 3)
    assert "is a directory, not a file" in one_line([*base, str(tmp_path)], 3)


def test_a_routing_dump_cut_after_its_first_line_is_refused(tmp_path: Path) -> None:
    cut = tmp_path / "cut.lft"
    cut.write_text("Unicast lids [0x0-0x54] of switch Lid 2 guid 0x0002c903007b78b0 (MF0;sw:SX6036/U1):\n")
    err = one_line(["sweep", "plan", "--input", str(SMALL), "--routes", str(cut)], 3)
    assert (
        "cut.lft:1: lft output: the table of switch 0x0002c903007b78b0 (line 1) has no 'lids dumped'" in err
    )
    assert "cut short?" in err


def test_a_26_digit_port_number_is_refused(tmp_path: Path) -> None:
    text = SMALL.read_text()
    capture = tmp_path / "big-port.txt"
    capture.write_text(
        text.replace('"S-0002c903007b78b0"[1]', '"S-0002c903007b78b0"[12345678901234567890123456]', 1)
    )
    assert "a port number above 255" in one_line(["discover", "--input", str(capture)], 3)
    lft = tmp_path / "r.lft"
    lft.write_text(
        "Unicast lids [0x0-0x1] of switch Lid 2 guid 0x0002c903007b78b0 (x):\n"
        "0x0001 12345678901234567890123456 : (x)\n"
    )
    assert "is not a switch port" in one_line(
        ["sweep", "plan", "--input", str(SMALL), "--routes", str(lft)], 3
    )


def test_discover_stdin_save_with_a_latin1_byte(tmp_path: Path) -> None:
    data = SMALL.read_bytes().replace(b"r-dcs96 HCA-1", b"r-dcs96 caf\xe9 HCA-1")
    res = CliRunner().invoke(main, ["discover", "--input", "-", "--save"], input=data)
    assert res.exit_code == 0, res.output
    with Store.open() as store:
        assert any("caf\ufffd" in n.description for n in store.load_topology().fabric.nodes.values())


# -- inventories and host lists -------------------------------------------------------------------
def test_an_empty_inventory_is_refused(tmp_path: Path) -> None:
    inv = tmp_path / "hosts.txt"
    inv.write_text("# nobody here\n\n")
    assert "no hosts in the inventory" in one_line(["hosts", "run", "-i", str(inv), "--", "true"], 3)


def test_inventory_and_free_list_parse_errors_exit_3(tmp_path: Path) -> None:
    inv = tmp_path / "hosts.txt"
    inv.write_text("dgx-01 user\n")
    assert f"{inv}:1: expected key=value" in one_line(["hosts", "run", "-i", str(inv), "--", "true"], 3)
    inv.write_bytes(b"dgx-01 user=r\xe9\n")
    assert "not UTF-8 text" in one_line(["hosts", "run", "-i", str(inv), "--", "true"], 3)
    free = tmp_path / "free.txt"
    free.write_text("dgx-[01-\n")
    assert "bad host range" in one_line(
        ["place", "--nodes", "2", "--input", str(SMALL), "--free", str(free)], 3
    )


# -- SSH and nccl-tests ---------------------------------------------------------------------------
@pytest.mark.sshd
def test_a_passphrase_protected_identity_is_one_line(sshd_server: Sshd, tmp_path: Path) -> None:
    key = tmp_path / "locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "secret", "-f", str(key)], check=True)
    known = sshd_server.write_known_hosts(tmp_path / "known_hosts")
    target = f"{sshd_server.user}@127.0.0.2:{sshd_server.port}"
    err = one_line(["discover", "--ssh", target, "--identity", str(key), "--known-hosts", str(known)], 7)
    assert "127.0.0.2" in err


@pytest.mark.sshd
def test_unparsable_nccl_output_is_said_to_be_unparsable(sshd_server: Sshd, tmp_path: Path) -> None:
    from tests.probes.test_nccl_run import _inventory

    inv, known = _inventory(sshd_server, tmp_path)
    # mpirun and nccl-tests cannot run here (no GPU): a launcher that prints a 3 MB line of noise
    # and exits 0, as a wrapper printing the wrong thing would
    launcher = tmp_path / "mpirun"
    launcher.write_text(
        f"#!/bin/sh\n{shutil.which('python3') or sys.executable} -c \"print('x' * 3000000)\"\n"
    )
    launcher.chmod(0o755)
    args = ["probe", "nccl", "--inventory", str(inv), "--known-hosts", str(known), "--hosts", "cn0001"]
    res = CliRunner().invoke(main, [*args, "--mpirun", str(launcher)])
    assert res.exit_code == 3, res.output
    assert res.stderr.count("\n") == 1 and "output not understood" in res.stderr
    assert "mpirun on" not in res.stderr and "failed (exit" not in res.stderr
    assert len(res.stderr) <= MAX_ERROR_CHARS + 20 and res.stdout.count("x" * 300) == 0


# -- lab inject: the port and counter are read before the lab is asked -----------------------------
@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["link-down", "leaf-su01-r0"], "expected NODE:PORT"),
        (["link-up", "leaf-su01-r0:x"], "expected NODE:PORT"),
        (["counter", "leaf-su01-r0:5", "SymbolErrorCounter"], "expected FIELD=VALUE"),
        (["counter", "leaf-su01-r0:5", "SymbolErrorCounter=-1"], "expected FIELD=VALUE"),
        (["counter", ":5", "SymbolErrorCounter=1"], "expected NODE:PORT"),
    ],
)
def test_lab_inject_bad_port_or_counter(args: list[str], needle: str) -> None:
    assert needle in one_line(["lab", "inject", "--name", "no-such-lab", *args], 2)
