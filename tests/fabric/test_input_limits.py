"""Bounded reads: command output per host (local and over real SSH) cut with its head and tail kept
and the per-host timeout held over the whole read; input files and lines refused by size with one
line; host ranges refused before they are expanded; errors never echo a huge line."""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from probes import runner
from probes.inventory import MAX_HOSTS, expand_hosts
from probes.ssh import SshTransport
from probes.transport import FailureKind, OutputCap
from tests.sshd import Sshd, sshd_server
from topology.errors import MAX_ERROR_CHARS, CommandFailed, UsageError

__all__ = ["sshd_server"]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


# -- command output ----------------------------------------------------------------------------
def test_output_cap_keeps_head_and_tail_and_says_where_it_cut() -> None:
    cap = OutputCap(1000)
    for i in range(100):
        cap.feed(f"line {i:03d} ....\n".encode())  # 14 bytes a line, 1,400 in all
    text = cap.data().decode()
    assert cap.cut == 400
    assert text.startswith("line 000") and text.endswith("line 099 ....\n")
    assert "[ibfab: 400 bytes cut here: the output passed the 1000 byte limit;" in text
    assert len(cap.data()) < 1000 + 200


def test_local_output_is_capped_and_parsing_it_is_refused() -> None:
    result = runner.run(["head", "-c", "50000000", "/dev/zero"], max_output=1 << 20)
    assert result.cut == 50_000_000 - (1 << 20)
    assert len(result.stdout) < (1 << 20) + 200
    with pytest.raises(CommandFailed, match="output too large"):
        runner.LocalTransport().require(result)


def test_local_timeout_holds_over_a_command_that_never_stops_writing() -> None:
    # `cat /dev/zero` never ends by itself: that this returns at all is the timeout holding
    with pytest.raises(CommandFailed, match="timed out after 2 s"):
        runner.run(["cat", "/dev/zero"], timeout=2)


def test_local_timeout_ends_the_commands_children_too(tmp_path: Path) -> None:
    script = f"sleep 300 & echo $! > {tmp_path}/child; wait"
    with pytest.raises(CommandFailed, match="timed out"):
        runner.run(["sh", "-c", script], timeout=1)
    child = int((tmp_path / "child").read_text())
    deadline = time.monotonic() + 60  # a deadline, not a speed: the child is killed, not waited for
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


@pytest.mark.sshd
def test_ssh_output_is_capped_and_the_timeout_holds(sshd_server: Sshd, tmp_path: Path) -> None:
    from tests.probes.test_ssh import entry

    known = sshd_server.write_known_hosts(tmp_path / "known_hosts")
    with SshTransport(entry(sshd_server), known_hosts=known) as t:
        # `cat /dev/zero` never drains the channel: that this returns at all is the read loop
        # checking the deadline between reads
        result = t.run(["cat", "/dev/zero"], timeout=3)
    assert result.failure is FailureKind.COMMAND_TIMEOUT and "was killed" in result.message
    assert "timed out after 3 s" in result.message
    assert len(result.stdout_bytes) <= (64 << 20) + 200


@pytest.mark.sshd
def test_ssh_output_over_the_cap_keeps_head_and_tail(sshd_server: Sshd, tmp_path: Path) -> None:
    from tests.probes.test_ssh import entry

    known = sshd_server.write_known_hosts(tmp_path / "known_hosts")
    script = "head -c 70000000 /dev/zero; echo; echo the-end"
    with SshTransport(entry(sshd_server), known_hosts=known) as t:
        result = t.run(["sh", "-c", script], timeout=60)
    assert result.exit_code == 0 and result.cut > 0
    assert result.stdout.endswith("the-end\n") and "bytes cut here" in result.stdout


# -- input files -------------------------------------------------------------------------------
def _one_line_error(args: list[str], code: int) -> str:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == code, res.output
    assert res.output.startswith("ibfab: error: ") and res.output.count("\n") == 1, res.output
    assert len(res.output) <= MAX_ERROR_CHARS + 20
    return res.output


def test_discover_input_dev_zero_is_refused_at_once() -> None:
    # /dev/zero never ends: refused at all is refused after its first MiB
    out = _one_line_error(["discover", "--input", "/dev/zero"], 3)
    assert "line 1 is longer than 1 MiB" in out


def test_discover_input_directory_and_missing_file(tmp_path: Path) -> None:
    assert "is a directory" in _one_line_error(["discover", "--input", str(tmp_path)], 3)
    assert "No such file" in _one_line_error(["discover", "--input", str(tmp_path / "nope")], 3)


def test_a_10_mb_line_is_named_by_number_never_echoed(tmp_path: Path) -> None:
    capture = tmp_path / "capture.txt"
    capture.write_text("#\n# Topology file\n" + "Switch 36 " + "x" * 10_000_000 + "\n")
    out = _one_line_error(["discover", "--input", str(capture)], 3)
    assert f"{capture}:3:" in out and "line 3 is longer than 1 MiB" in out and "xxxxxxxxxx" not in out


def test_a_long_line_after_megabytes_of_short_ones_is_named_by_its_number(tmp_path: Path) -> None:
    # the line breaks of every chunk read before the long line are counted (3 MiB of lines)
    capture = tmp_path / "capture.txt"
    short = "# " + "y" * 97 + "\n"  # 100 bytes
    n = 3 * (1 << 20) // len(short) + 7
    capture.write_text(short * n + "z" * 2_000_000 + "\n")
    out = _one_line_error(["discover", "--input", str(capture)], 3)
    assert f"{capture}:{n + 1}:" in out and f"line {n + 1} is longer than 1 MiB" in out


def test_a_long_unparsable_line_under_the_limit_is_cut_in_the_error(tmp_path: Path) -> None:
    capture = tmp_path / "capture.txt"
    capture.write_text('Switch 36 "S-0001" # "' + "y" * 500_000 + "\n")
    out = _one_line_error(["discover", "--input", str(capture)], 3)
    assert "yyyy" in out and out.count("y") < 200


# -- host ranges -------------------------------------------------------------------------------
def test_a_huge_host_range_is_refused_before_it_is_expanded() -> None:
    tracemalloc.start()
    try:
        with pytest.raises(UsageError, match=f"names 50000000 hosts; at most {MAX_HOSTS} in one range"):
            expand_hosts("n[1-50000000]", "--exclude")
        with pytest.raises(UsageError, match=r"names more than 10\^18 hosts"):
            expand_hosts("n[1-99999999999999999999]", "--exclude")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # nothing expanded: 50,000,000 names would be gigabytes
    assert len(expand_hosts(f"n[1-{MAX_HOSTS}]")) == MAX_HOSTS


def test_an_inventory_with_a_huge_range_is_one_line(tmp_path: Path) -> None:
    inv = tmp_path / "hosts.txt"
    inv.write_text("n[1-50000000] user=root\n")
    out = _one_line_error(["hosts", "run", "-i", str(inv), "--", "true"], 3)  # a file that does not parse
    assert "names 50000000 hosts" in out and f"{inv}:1" in out


def test_process_memory_stays_small_after_refusals() -> None:
    # the refusals above expanded nothing: this process never held 50,000,000 names
    status = Path(f"/proc/{os.getpid()}/status").read_text()
    peak_kib = int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1])
    assert peak_kib < 2 * 1024 * 1024
