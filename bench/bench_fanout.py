"""Fan-out over real SSH: one host versus 64 hosts at concurrency 16.

A private sshd listens on 127.0.0.2 ... 127.0.0.65 (64 "hosts"). Each fan-out opens a fresh
connection per host (as a sweep does), runs ``uname -a`` and closes it. 64 hosts at
concurrency 16 are four waves, so the target is: within 1.5x of 4 x the one-host time.

Here the 64 "hosts" share this machine's cores with the client, so the 64-host run is bound
by CPU (sshd's work per connection plus ours), not by latency as on a real cluster. The bench
therefore also prints the CPU per connection and the floor that CPU sets: total CPU / cores,
and the part of it that would remain on a real cluster: 64 x our CPU per connection (paramiko
is Python: one interpreter runs it on one core at a time).
Run from the repository root: ``.venv/bin/python bench/bench_fanout.py`` (needs root).
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from probes.fanout import fan_out, fold
from probes.inventory import HostEntry
from probes.ssh import ssh_transport_factory
from tests.sshd import start_sshd

HOSTS = 64
CONCURRENCY = 16
ARGV = ["uname", "-a"]
_HZ = os.sysconf("SC_CLK_TCK")


def client_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def sshd_cpu(pids: tuple[int, ...]) -> float:
    """CPU seconds of the daemons and their reaped per-connection children (utime..cstime)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += sum(int(x) for x in fields[11:15])
    return total / _HZ


def main() -> int:
    with (
        tempfile.TemporaryDirectory(prefix="ibfab-bench-sshd-") as tmp,
        start_sshd(Path(tmp), hosts=HOSTS, skip_bashrc=True) as sshd,
    ):
        known_hosts = sshd.write_known_hosts(Path(tmp) / "known_hosts")
        hosts = [
            HostEntry(f"node{i:02d}", a, sshd.user, sshd.port, str(sshd.user_key))
            for i, a in enumerate(sshd.addresses, 1)
        ]
        factory = ssh_transport_factory(known_hosts=known_hosts, ssh_config=None, retries=0)

        def timed(targets: list[HostEntry]) -> float:
            start = time.perf_counter()
            results = fan_out(targets, ARGV, factory, concurrency=CONCURRENCY, timeout=30)
            elapsed = time.perf_counter() - start
            bad = [r for r in results if not r.ok]
            if bad:
                raise SystemExit(f"bench: {len(bad)} hosts failed, e.g. {bad[0].host}: {bad[0].message}")
            if len(fold(results)) != 1:
                raise SystemExit("bench: hosts answered differently; expected one folded group")
            return elapsed

        timed(hosts[:1])  # warm-up: imports, first fork of sshd
        one = statistics.median(timed([hosts[i]]) for i in range(5))
        c0, s0 = client_cpu(), sshd_cpu(sshd.pids)
        runs = 3
        many = statistics.median(timed(hosts) for _ in range(runs))
        time.sleep(0.3)  # let the last connection children be reaped
        conns = runs * HOSTS
        ours, theirs = (client_cpu() - c0) / conns, (sshd_cpu(sshd.pids) - s0) / conns
    cores = len(os.sched_getaffinity(0))
    floor = HOSTS * (ours + theirs) / cores
    target = 4 * one
    ratio = many / target
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"one host:                   {one * 1000:8.1f} ms (median of 5)")
    print(f"{HOSTS} hosts, concurrency {CONCURRENCY}:  {many * 1000:8.1f} ms (median of {runs})")
    print(
        f"target 1.5 x 4 x one host:  {1.5 * target * 1000:8.1f} ms; ratio to 4 x one host {ratio:.2f} (goal <= 1.50)"
    )
    print(f"CPU per connection:         ibfab {ours * 1000:.1f} ms + sshd {theirs * 1000:.1f} ms")
    print(
        f"CPU floor for {HOSTS} hosts on {cores} cores: {floor * 1000:.1f} ms; wall / floor {many / floor:.2f}"
    )
    # On a cluster sshd's share runs on the hosts; ours runs in one interpreter (one GIL).
    print(
        f"client-only floor ({HOSTS} x ibfab CPU, one interpreter): {HOSTS * ours * 1000:.1f} ms "
        f"against the target {1.5 * target * 1000:.1f} ms"
    )
    print(f"peak memory (this process): {peak_mib:.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
