"""Two ibfab processes never probe one host at once: `sweep run` against hosts a real other process
holds (as the daemon or another sweep would) stops with that process named, or waits a bounded time."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.app.drivers import LocalDriver, driver_for
from fabric.app.source import Source
from fabric.cli.main import main
from tests.servers import free_port
from topology.generate import generate, to_ibnetdiscover

ROOT = Path(__file__).resolve().parents[2]

HOLDER = """
import sys, time
from pathlib import Path
from fabric.app.hostlocks import host_locks
from fabric.app.session import StoreAccess
locks = host_locks(StoreAccess(Path(sys.argv[1])))
locks.acquire(["cn0002"], why="schedule nightly")
print("held", flush=True)
if sys.argv[2] == "until-told":
    sys.stdin.readline()
else:
    time.sleep(float(sys.argv[2]))
locks.release(["cn0002"])
print("released", flush=True)
time.sleep(30)
"""


@pytest.fixture
def sweep_args(tmp_path: Path) -> list[str]:
    topo = tmp_path / "fabric.topo"
    topo.write_text(to_ibnetdiscover(generate("leafspine:leaves=2,spines=1,hosts=2,radix=40")))
    inventory = tmp_path / "hosts.txt"
    port = free_port()  # nothing listens: once the hosts are ours the sweep stops as unreachable
    inventory.write_text("".join(f"cn{i:04d} address=127.0.0.1 port={port}\n" for i in range(1, 5)))
    return ["sweep", "run", "--input", str(topo), "--pattern", "pairwise", "--inventory", str(inventory),
            "--known-hosts", str(tmp_path / "known_hosts"), "--db", str(tmp_path / "store.db")]  # fmt: skip


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:  # only what this test started
        if p.poll() is None:
            p.kill()
        p.wait()


def _hold(procs: list[subprocess.Popen[str]], db: Path, seconds: float | str) -> subprocess.Popen[str]:
    """A process holding cn0002 for ``seconds``, or ``"until-told"``: until a line on its stdin."""
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER), str(db), str(seconds)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    procs.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_a_sweep_on_a_host_another_process_probes_stops_naming_it(
    sweep_args: list[str], tmp_path: Path, holder: list[subprocess.Popen[str]]
) -> None:
    other = _hold(holder, tmp_path / "store.db", 60)
    res = CliRunner().invoke(main, sweep_args)
    assert res.exit_code == 9, res.output  # busy: the README's code, not a generic error
    (line,) = res.stderr.splitlines()
    assert line.startswith("ibfab: error: host cn0002 is busy: another ibfab process probes it: ")
    assert f"PID {other.pid} (-c " in line and line.endswith(", for schedule nightly")
    # A store elsewhere is a different scope: its sweep gets as far as the (closed) SSH port.
    elsewhere = [
        a if not a.endswith("store.db") else str(tmp_path / "other" / "store.db") for a in sweep_args
    ]
    (tmp_path / "other").mkdir()
    res = CliRunner().invoke(main, elsewhere)
    assert res.exit_code == 7 and "unreachable" in res.stderr


def test_a_sweep_with_host_wait_runs_once_the_other_process_lets_go(
    sweep_args: list[str], tmp_path: Path, holder: list[subprocess.Popen[str]]
) -> None:
    other = _hold(holder, tmp_path / "store.db", "until-told")
    assert other.stdin is not None and other.stdout is not None
    t0 = time.monotonic()

    def let_go() -> None:  # 0.8 s after the sweep started, counted here: the sweep waits at least that
        time.sleep(0.8)
        other.stdin.write("release\n")  # type: ignore[union-attr]
        other.stdin.flush()  # type: ignore[union-attr]

    releaser = threading.Thread(target=let_go)
    releaser.start()
    res = CliRunner().invoke(main, [*sweep_args, "--host-wait", "60"])
    waited = time.monotonic() - t0
    releaser.join(60)
    assert other.stdout.readline() == "released\n"
    # It waited for cn0002, then went on to SSH (nothing listens there: exit 7, unreachable).
    assert res.exit_code == 7 and "sweep cannot start: cn[0001-0004] unreachable" in res.stderr
    assert waited >= 0.8


def test_lock_names_take_both_names_a_node_map_gives() -> None:
    from fabric.app.hostlocks import lock_keys, node_lock_keys
    from fabric.app.slurm import parse_node_map

    nodes = parse_node_map("cn[0001-0002] node[1-2]\n")
    assert lock_keys(["cn0002", "cn0001", "cn0003"], LocalDriver()) == ["cn0001", "cn0002", "cn0003"]
    assert lock_keys(["cn0002", "cn0001", "cn0003"], LocalDriver(), nodes) == [
        "cn0001",
        "cn0002",
        "cn0003",
        "node1",
        "node2",
    ]
    assert lock_keys(["cn0001"], driver_for(Source.lab("demo")), nodes) == [
        "lab demo/cn0001"
    ]  # a lab's hosts are its own
    # Slurm node names (probe nccl --launcher srun): the other direction of the same map
    assert node_lock_keys(["node2", "node9"], nodes) == ["cn0002", "node2", "node9"]
    assert node_lock_keys(["node2"], None) == ["node2"]
