"""Fan-out over real SSH: threads in one process (the baseline) against 2 and 4 worker processes.

A private sshd listens on 127.0.0.2 ... 127.0.0.129; 512 host entries use those addresses four
times each. Each fan-out opens a fresh connection per host (as a sweep does), runs ``uname -a`` and closes it, 16 connections at once in
all. The runs alternate (threads, 2 workers, 4 workers, threads, ...) so a change of load on the
machine falls on each alike; each figure is the median of the rounds.

Printed per way of running: wall time and speed-up against the threads of the same run; client
CPU per connection (this process and its workers), and the CPU of the busiest interpreter: on a
real cluster sshd's work runs on the hosts, and what is left is that interpreter's share (one
interpreter runs paramiko on one core at a time), so it is the floor a fan-out can reach; peak
memory (this process's peak plus each worker's).

Here the "hosts" share this machine's cores with the client: sshd's CPU per connection (about
three times ours) is on the same cores, so the wall-time speed-up is bounded by the machine, not
by the fan-out; the busiest-interpreter figure shows what the workers remove.
Run from the repository root: ``.venv/bin/python bench/bench_fanout.py`` (needs root).
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from probes.fanout import fan_out, fold
from probes.fanout_workers import run_in_workers
from probes.inventory import HostEntry
from probes.ssh import SshSettings, ssh_transport_factory
from probes.transport import CommandResult
from tests.sshd import start_sshd

ADDRESSES = 128  # loopback "hosts" sshd listens on
HOSTS = 512  # host entries, four per address: each still a fresh connection
CONCURRENCY = 16
ROUNDS = 3
WORKERS = (1, 2, 4)  # 1: threads in this process, the baseline
ARGV = ("uname", "-a")
FLOOR_HOSTS = 2000
_HZ = os.sysconf("SC_CLK_TCK")


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def sshd_cpu(pids: tuple[int, ...]) -> float:
    """CPU seconds of the daemons and their reaped per-connection children (utime..cstime)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += sum(int(x) for x in fields[11:15])
    return total / _HZ


@dataclass(frozen=True)
class Run:
    wall: float
    client_cpu: float  # this process + workers
    busiest_cpu: float  # the interpreter that did the most
    sshd_cpu: float
    workers_peak_mib: float  # sum of the workers' peaks


def one_run(hosts: list[HostEntry], factory: SshSettings, workers: int, sshd_pids: tuple[int, ...]) -> Run:
    c0, s0 = self_cpu(), sshd_cpu(sshd_pids)
    start = time.perf_counter()
    results: list[CommandResult]
    if workers == 1:
        results = fan_out(hosts, ARGV, factory, CONCURRENCY, 30, workers=1)
        worker_cpu = busiest_worker = peak = 0.0
    else:
        run = run_in_workers(hosts, [ARGV] * len(hosts), factory, workers, CONCURRENCY, 30)
        results = run.results
        if len(run.usage) != workers:
            raise SystemExit(f"bench: {len(run.usage)} of {workers} workers reported their usage")
        worker_cpu = sum(u.cpu_seconds for u in run.usage)
        busiest_worker = max(u.cpu_seconds for u in run.usage)
        peak = sum(u.peak_rss_mib for u in run.usage)
    wall = time.perf_counter() - start
    time.sleep(0.3)  # let sshd reap the last connection children
    ours = self_cpu() - c0
    bad = [r for r in results if not r.ok]
    if bad:
        raise SystemExit(f"bench: {len(bad)} hosts failed, e.g. {bad[0].host}: {bad[0].message}")
    if len(results) != len(hosts) or len(fold(results)) != 1:
        raise SystemExit("bench: hosts answered differently; expected one folded group")
    return Run(wall, ours + worker_cpu, max(ours, busiest_worker), sshd_cpu(sshd_pids) - s0, peak)


def main() -> int:
    with (
        tempfile.TemporaryDirectory(prefix="ibfab-bench-sshd-") as tmp,
        start_sshd(Path(tmp), hosts=ADDRESSES, skip_bashrc=True) as sshd,
    ):
        known_hosts = sshd.write_known_hosts(Path(tmp) / "known_hosts")
        hosts = [
            HostEntry(f"node{i:03d}", sshd.addresses[i % ADDRESSES], sshd.user, sshd.port, str(sshd.user_key))
            for i in range(1, HOSTS + 1)
        ]
        factory = ssh_transport_factory(known_hosts=known_hosts, ssh_config=None, retries=0)
        one_run(hosts[:8], factory, 1, sshd.pids)  # warm-up: imports, sshd's first forks
        runs: dict[int, list[Run]] = {w: [] for w in WORKERS}
        for _ in range(ROUNDS):
            for w in WORKERS:
                runs[w].append(one_run(hosts, factory, w, sshd.pids))
    cores = len(os.sched_getaffinity(0))
    parent_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{HOSTS} hosts, {CONCURRENCY} connections at once, {cores} cores, median of {ROUNDS} alternating rounds"
    )
    print(
        f"{'':<10} {'wall ms':>8} {'speed-up':>8} {'client CPU/conn':>15} {'sshd CPU/conn':>13}"
        f" {'busiest interp. ms':>18} {'2,000-host floor':>16} {'peak MiB':>9}"
    )
    base = statistics.median(r.wall for r in runs[1])
    floors: dict[int, float] = {}
    for w in WORKERS:
        rs = runs[w]
        wall = statistics.median(r.wall for r in rs)
        client = statistics.median(r.client_cpu for r in rs) / HOSTS
        theirs = statistics.median(r.sshd_cpu for r in rs) / HOSTS
        busiest = statistics.median(r.busiest_cpu for r in rs)
        peak = parent_peak + max(r.workers_peak_mib for r in rs)
        # sshd elsewhere: no faster than the busiest interpreter, nor than all client CPU on our cores
        floor = FLOOR_HOSTS * max(busiest / HOSTS, client / min(cores, w))
        floors.setdefault(1, floor)
        name = "threads" if w == 1 else f"{w} workers"
        print(
            f"{name:<10} {wall * 1000:8.1f} {base / wall:7.2f}x {client * 1000:12.1f} ms {theirs * 1000:10.1f} ms"
            f" {busiest * 1000:18.1f} {floor:9.1f} s {floors[1] / floor:4.1f}x {peak:9.1f}"
        )
    print(
        "busiest interp.: CPU of the process that did the most (threads: this one). 2,000-host floor:"
        " with sshd on the hosts, a fan-out to 2,000 hosts takes at least that busiest interpreter's"
        f" CPU per host x 2,000, and at least all client CPU x 2,000 / {cores} cores"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
