"""Command output bounded in bytes: each stream at its cap (head and tail kept, the cut said), a
fan-out's hosts within one budget, the bytes decoded only when shown or parsed (a piece at a time
when shown), and the timeout held whatever the output rate. The memory figures are the peak RSS
of a child process against a baseline child doing the same with no output."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fabric.present.hosts import render_folded, results_json
from probes import runner
from probes.fanout import fold
from probes.output import FREE_BYTES, MAX_OUTPUT_BYTES, OutputBudget, OutputCap, text_chunks
from probes.transport import CommandResult, FailureKind
from tests.sshd import Sshd, sshd_server
from topology.errors import CommandFailed

__all__ = ["sshd_server"]

ROOT = Path(__file__).resolve().parents[2]
MIB = 2**20


def _pieces(data: bytes, rng: random.Random) -> list[bytes]:
    out, at = [], 0
    while at < len(data):
        n = rng.choice((1, 7, 100, 4096, 65536, 300_000))
        out.append(data[at : at + n])
        at += n
    return out


def _kept(cap: OutputCap) -> tuple[bytes, bytes]:
    """(head, tail) of what ``cap`` kept, the note between them taken out."""
    data = cap.data()
    if not cap.cut:
        return data, b""
    head, _, rest = data.partition(b"\n[ibfab: ")
    return head, rest.partition(b" bytes are kept]\n")[2]


# -- one stream ----------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(12))
def test_a_stream_keeps_its_first_three_quarters_and_last_quarter(seed: int) -> None:
    rng = random.Random(seed)
    limit = rng.choice((1, 2, 5, 64, 1000, 3 * MIB))
    whole = rng.randbytes(rng.choice((0, limit - 1, limit, limit + 1, 3 * limit, 5 * MIB)))
    cap = OutputCap(limit)
    for piece in _pieces(whole, rng):
        cap.feed(piece)
    head, tail = _kept(cap)
    if len(whole) <= limit:
        assert (cap.cut, cap.data()) == (0, whole)
        return
    tail_limit = max(1, limit // 4)
    assert head == whole[: limit - tail_limit] and tail == whole[len(whole) - tail_limit :]
    assert cap.cut == len(whole) - limit == len(whole) - len(head) - len(tail)
    assert f"the output passed the {limit} byte limit".encode() in cap.data()


@pytest.mark.parametrize("seed", range(8))
def test_streams_under_one_budget_keep_at_most_the_budget_beyond_their_free_bytes(seed: int) -> None:
    rng = random.Random(seed)
    total = rng.choice((0, 100_000, 3 * MIB))
    budget = OutputBudget(total)
    streams = [
        (OutputCap(2 * MIB, budget), rng.randbytes(rng.choice((10, 50_000, 900_000)))) for _ in range(9)
    ]
    for cap, whole in streams:  # fed in turns, as a fan-out's threads would
        for piece in _pieces(whole, rng):
            cap.feed(piece)
    assert sum(cap.held for cap, _ in streams) <= total + len(streams) * FREE_BYTES
    for cap, whole in streams:
        head, tail = _kept(cap)
        assert whole.startswith(head) and whole.endswith(tail)  # the start and the end, in order
        assert len(head) + len(tail) + cap.cut == len(whole)
        if cap.cut:  # at least its free bytes: three quarters from the start, a quarter from the end
            assert len(head) >= FREE_BYTES * 3 // 4 and len(tail) >= FREE_BYTES // 4
            assert b"cut here" in cap.data()
    if total < sum(len(w) for _, w in streams) - len(streams) * FREE_BYTES:
        assert budget.left == 0 and any(cap.cut for cap, _ in streams)


def test_a_budget_spent_on_one_stream_cuts_the_next_at_its_free_bytes() -> None:
    budget = OutputBudget(MIB)
    first, second = OutputCap(budget=budget), OutputCap(budget=budget)
    first.feed(b"a" * 2 * MIB)
    second.feed(b"b" * MIB + b"the-end\n")
    assert first.held == MIB + FREE_BYTES and second.held == FREE_BYTES
    assert second.data().endswith(b"the-end\n")
    assert b"of the fan-out's output budget" in second.data()


@pytest.mark.parametrize("seed", range(6))
def test_text_is_decoded_a_piece_at_a_time_exactly_as_whole(seed: int) -> None:
    rng = random.Random(seed)
    data = b"".join(
        rng.choice((b"\xff", b"\xc3\xa9", b"\xf0\x9f\x98\x80", b"ok\n", b"\xe2\x82")) for _ in range(5000)
    )
    size = rng.choice((1, 2, 3, 7, 1000))
    assert "".join(text_chunks(data, size)) == data.decode("utf-8", errors="replace")


# -- shown, never decoded whole ------------------------------------------------------------------
def _result(host: str, out: bytes, err: bytes, code: int | None = 0) -> CommandResult:
    failure = None if code is not None else FailureKind.COMMAND_TIMEOUT
    return CommandResult(
        host, ("cmd", "a b"), code, out, err, 1.25, failure, "" if failure is None else "timed out"
    )


def test_folded_output_reads_as_its_lines_with_stderr_marked() -> None:
    results = [
        _result("n1", b"one\ntwo", b"warn\n\nlast"),
        _result("n2", b"one\ntwo", b"warn\n\nlast"),
        _result("n3", b"", b"", None),
        _result("n4", b"x\xffy\n", b""),
    ]
    text = "".join(render_folded(fold(results)))
    assert text == (
        "== n[1-2] (2 hosts): exit 0\none\ntwo\n! warn\n! \n! last\n"
        "== n3 (1 host): command_timeout: timed out\n"
        "== n4 (1 host): exit 0\nx\ufffdy\n"
    )


def test_results_json_is_what_json_dumps_writes() -> None:
    results = [_result("n1", b'a\xff\n"q"\t\xe2\x82\xac', b"e\n"), _result("n2", b"", b"", None)]
    expected = {
        "results": [
            {
                "host": r.host,
                "argv": list(r.argv),
                "exit_code": r.exit_code,
                "stdout": r.stdout,
                "stderr": r.stderr,
                "duration": round(r.duration, 4),
                "failure": r.failure.value if r.failure else None,
                "message": r.message,
            }
            for r in results
        ]
    }
    for some in (results, results[:1], []):
        doc = "".join(results_json(some))
        assert doc == json.dumps({"results": expected["results"][: len(some)]}, indent=2) + "\n"


# -- in a child process: its peak memory ---------------------------------------------------------
def _peak_mib(argv: list[str], stdout: Path | None = None, timeout: float = 300) -> tuple[int, float]:
    """(exit code, peak RSS in MiB) of ``argv`` run as a child (stdout to ``stdout`` or nowhere)."""
    with open(stdout or os.devnull, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, cwd=ROOT)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            if proc.returncode is None and proc.poll() is None:
                proc.kill()
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.stderr is not None
    proc.stderr.close()
    return proc.returncode, usage.ru_maxrss / 1024


_LOCAL = textwrap.dedent(
    """
    import sys
    from probes import runner
    r = runner.run(sys.argv[1:], timeout=60, check=False)
    assert r.cut > 0 or sys.argv[1] == "true", r.cut
    """
)


def test_local_output_of_300_mb_random_bytes_holds_the_cap_not_its_text() -> None:
    python = [sys.executable, "-c", _LOCAL]
    _, baseline = _peak_mib([*python, "true"])
    code, peak = _peak_mib([*python, "head", "-c", "300000000", "/dev/urandom"])
    assert code == 0
    # the cap's bytes, and one copy of them while they are joined; decoded they would be 2-3 times that
    assert peak - baseline < 2 * MAX_OUTPUT_BYTES / MIB + 40, (baseline, peak)


def test_local_timeout_holds_over_a_flood_and_keeps_the_cap() -> None:
    # `yes` never ends by itself: that this returns at all is the timeout holding
    with pytest.raises(CommandFailed, match="timed out after 2 s"):
        runner.run(["yes"], timeout=2)


# -- over real SSH -------------------------------------------------------------------------------
def _inventory(server: Sshd, tmp_path: Path, hosts: int = 1) -> list[str]:
    inv = tmp_path / "inv.toml"
    inv.write_text(
        f'[defaults]\nuser = "{server.user}"\nport = {server.port}\nkey_file = "{server.user_key}"\n'
        f'[[hosts]]\nname = "n[1-{hosts}]"\naddress = "127.0.0.[2-{hosts + 1}]"\n'
    )
    known = server.write_known_hosts(tmp_path / "known_hosts")
    return ["-i", str(inv), "--known-hosts", str(known), "--ssh-config", ""]


def _ibfab(*args: str) -> list[str]:
    return [sys.executable, "-c", "from tui.program import main; main()", *args]


@pytest.mark.sshd
def test_hosts_run_of_300_mb_random_bytes_stays_within_the_cap(sshd_server: Sshd, tmp_path: Path) -> None:
    common = _inventory(sshd_server, tmp_path)
    _, baseline = _peak_mib(_ibfab("hosts", "run", *common, "--", "true"))
    out = tmp_path / "out"
    code, peak = _peak_mib(
        _ibfab("hosts", "run", *common, "--", "head", "-c", "300000000", "/dev/urandom"), out
    )
    assert code == 0
    # held: the cap's 64 MiB, plus one copy while it is joined; shown a megabyte at a time
    assert peak - baseline < 2 * MAX_OUTPUT_BYTES / MIB + 40, (baseline, peak)
    text = out.read_bytes()
    assert text.startswith(b"== n1 (1 host): exit 0\n")
    assert b"bytes cut here: the output passed the 67108864 byte limit" in text
    assert len(text) <= 3 * MAX_OUTPUT_BYTES + 1000  # each byte at most U+FFFD, 3 bytes of UTF-8


@pytest.mark.sshd
def test_hosts_run_of_yes_ends_at_its_timeout_within_the_cap(sshd_server: Sshd, tmp_path: Path) -> None:
    common = _inventory(sshd_server, tmp_path)
    _, baseline = _peak_mib(_ibfab("hosts", "run", *common, "--", "true"))
    out = tmp_path / "out"
    # `yes` never ends by itself: that this returns at all is the timeout holding over the flood
    code, peak = _peak_mib(_ibfab("hosts", "run", *common, "-t", "2", "--", "yes"), out)
    assert code == 1
    assert peak - baseline < 2 * MAX_OUTPUT_BYTES / MIB + 40, (baseline, peak)
    with out.open("rb") as f:
        assert (
            f.readline() == b"== n1 (1 host): command_timeout: command timed out after 2 s and was killed\n"
        )
        assert f.readline() == b"y\n"


_FAN_OUT = textwrap.dedent(
    """
    import json, sys
    from probes.fanout import fan_out
    from probes.inventory import HostEntry
    from probes.ssh import ssh_transport_factory
    addresses, port, user, key, known, command, budget, workers = json.loads(sys.argv[1])
    hosts = [HostEntry(f"n{k}", address=addresses[k % len(addresses)], user=user, port=port, key_file=key)
             for k in range(16)]
    factory = ssh_transport_factory(known_hosts=known, ssh_config=None)
    results = fan_out(hosts, command, factory, concurrency=16, timeout=120, workers=workers, output_budget=budget)
    print(json.dumps([[r.exit_code, r.cut, len(r.stdout_bytes), r.stdout_bytes.endswith(b"the-end\\n")]
                      for r in results]))
    """
)


@pytest.mark.sshd
@pytest.mark.parametrize("workers", [1, 2])
def test_a_fan_out_holds_its_budget_in_all(sshd_server: Sshd, tmp_path: Path, workers: int) -> None:
    known = str(sshd_server.write_known_hosts(tmp_path / "known_hosts"))
    budget = 24 * MIB
    flood = ["sh", "-c", "head -c 16000000 /dev/zero; echo; echo the-end"]  # 16 hosts: 256 MB in all

    def run(command: list[str], out: Path) -> float:
        settings = [
            list(sshd_server.addresses),
            sshd_server.port,
            sshd_server.user,
            str(sshd_server.user_key),
        ]
        args = json.dumps([*settings, known, command, budget, workers])
        code, peak = _peak_mib([sys.executable, "-c", _FAN_OUT, args], out)
        assert code == 0
        return peak

    baseline = run(["true"], tmp_path / "quiet")
    peak = run(flood, tmp_path / "records")
    records = json.loads((tmp_path / "records").read_text())
    assert all(code == 0 and ends for code, _, _, ends in records)  # every host's end is kept
    assert sum(cut > 0 for _, cut, _, _ in records) >= 16 - budget // 16_000_000  # the budget was spent
    note = 300  # the line saying where the output was cut
    assert sum(size - note for _, _, size, _ in records) <= budget + 16 * 2 * FREE_BYTES
    # unbounded, the 16 hosts would hold 256 MB; bounded: the budget, and a copy while joined
    if workers == 1:
        assert peak - baseline < 2 * budget / MIB + 48, (baseline, peak)
