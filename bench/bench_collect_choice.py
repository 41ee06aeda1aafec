"""Measure the two ways of reading every port counter of a 1,000+ HCA fabric, on ibsim + opensm.

    .venv/bin/python bench/bench_collect_choice.py [--hcas 1024] [--keep DIR]

Builds a two-tier fat tree with a small generator in this script (``--hcas`` HCAs, 32 per leaf,
64-port switches, half as many spines as leaves, two cables from every leaf to every spine),
starts ibsim and opensm on it, plants a few counter values with PerformanceSet, discovers the
fabric with ibnetdiscover, then times ``fabric.counters.reading.collect_fabric`` with each approach:

* ``ibqueryerrors``: two fabric-wide passes (``--counters``; errors with ``--threshold-file /dev/null -r``)
* ``perfquery``: ``perfquery -x -l`` + ``perfquery -l`` per node (switches and HCAs)

It prints time, ports covered, ports with 64-bit data and with all error counters, whether the
planted values were read, the ratio, and peak RSS of this process and its children; then stops
the fabric by PID. The lab start-up here is deliberately self-contained (fabric.lab is separate work).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fabric.counters.reading import ERROR_COUNTERS, CollectionResult, collect_fabric
from probes.runner import run
from probes.transport import CommandResult
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Guid, normalise_guid

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
PLANTED = {
    ("leaf01", 3): ("PortCounters.SymbolErrorCounter=70000", "symbol_errors", 65535),
    ("leaf02", 40): ("PortCounters.LinkDownedCounter=3", "link_downed", 3),
    ("spine02", 1): ("PortCounters.PortXmitWait=123456", "xmit_wait", 123456),
    ("h0005", 1): ("PortCounters.PortRcvErrors=42", "rcv_errors", 42),
}


def fat_tree(hcas: int, per_leaf: int = 32) -> str:
    """ibsim net text: leaves of ``per_leaf`` HCAs, leaves/2 spines, 2 cables per leaf-spine pair."""
    leaves = -(-hcas // per_leaf)
    spines = max(1, leaves // 2)
    lines: list[str] = []
    for h in range(hcas):  # an HCA first: the default attach point of opensm and every tool
        lines += [
            f'Ca 1 "h{h + 1:04d}" # "h{h + 1:04d} mlx5_0"',
            f'[1] "leaf{h // per_leaf + 1:02d}"[{h % per_leaf + 1}]',
            "",
        ]
    for leaf in range(leaves):
        lines.append(
            f'Switch 64 "leaf{leaf + 1:02d}" # "MF0;leaf{leaf + 1:02d}:MQM9700/U1" enhanced port 0 lid 0 lmc 0'
        )
        for h in range(per_leaf):
            if leaf * per_leaf + h < hcas:
                lines.append(f'[{h + 1}] "h{leaf * per_leaf + h + 1:04d}"[1]')
        for s in range(spines):
            for k in range(2):
                lines.append(f'[{per_leaf + 1 + 2 * s + k}] "spine{s + 1:02d}"[{2 * leaf + k + 1}]')
        lines.append("")
    for s in range(spines):
        lines.append(
            f'Switch 64 "spine{s + 1:02d}" # "MF0;spine{s + 1:02d}:MQM9700/U1" enhanced port 0 lid 0 lmc 0'
        )
        for leaf in range(leaves):
            for k in range(2):
                lines.append(f'[{2 * leaf + k + 1}] "leaf{leaf + 1:02d}"[{per_leaf + 1 + 2 * s + k}]')
        lines.append("")
    return "\n".join(lines)


class Lab:
    """ibsim + opensm in ``root``, stopped by PID."""

    def __init__(self, root: Path, net: str) -> None:
        self.root = root
        self.sock = f"bench_{os.getpid()}"
        (root / "fabric.net").write_text(net)
        fifo = root / "console.fifo"
        os.mkfifo(fifo)
        self.console = os.open(fifo, os.O_RDWR)  # keeps a writer: no EOF, no 100 % CPU spin
        env = {**os.environ, "IBSIM_SOCKNAME": self.sock}
        with open(root / "ibsim.out", "wb") as out, open(root / "ibsim.err", "wb") as err:
            self.ibsim = subprocess.Popen(
                ["ibsim", "-s", "fabric.net"], stdin=self.console, stdout=out, stderr=err, cwd=root, env=env
            )
        time.sleep(0.5)
        osm_env = {**env, "LD_PRELOAD": UMAD2SIM, "OSM_TMP_DIR": str(root), "OSM_CACHE_DIR": str(root)}
        self.opensm = subprocess.Popen(
            ["opensm", "-d", "2", "-f", str(root / "osm.log")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=root,
            env=osm_env,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            log = root / "osm.log"
            if log.exists() and "SUBNET UP" in log.read_text(errors="replace"):
                return
            time.sleep(0.1)
        self.stop()
        raise SystemExit("opensm did not reach SUBNET UP in 120 s")

    def tool(self, argv: Sequence[str]) -> CommandResult:
        env = {"LD_PRELOAD": UMAD2SIM, "IBSIM_SOCKNAME": self.sock}
        return run(argv, env=env, cwd=str(self.root), check=False, timeout=600)

    def console_cmd(self, line: str) -> None:
        os.write(self.console, (line + "\n").encode())

    def stop(self) -> None:
        for proc in (self.opensm, self.ibsim):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        os.close(self.console)


def ca_lids(text: str) -> dict[Guid, int]:
    """LIDs of CAs from ibnetdiscover text (the model keeps none for CAs; perfquery needs them)."""
    out: dict[Guid, int] = {}
    current: Guid | None = None
    for line in text.splitlines():
        m = re.match(r'^Ca\s+\d+\s+"H-([0-9a-fA-F]+)"', line)
        if m:
            current = normalise_guid(m[1])
            continue
        m = re.match(r"^\[\d+\].*#\s*lid\s+(\d+)", line)
        if current is not None and m and current not in out:
            out[current] = int(m[1])
    return out


def summarise(
    name: str, result: CollectionResult, seconds: float, planted: dict[tuple[Guid, int], tuple[str, int]]
) -> None:
    samples = result.samples
    ext = sum(1 for s in samples if s.extended)
    errs = sum(1 for s in samples if all(k in s.values for k in ERROR_COUNTERS))
    by = {(s.guid, s.port): s for s in samples}
    hits = sum(1 for key, (c, v) in planted.items() if key in by and by[key].values.get(c) == v)
    runs = len(result.raw)
    print(
        f"{name:14s} {seconds:8.2f} s  {runs:5d} tool runs  {len(samples):5d} ports read  "
        f"{len(result.unreachable):4d} unreachable  {ext:5d} with 64-bit data  {errs:5d} with all error counters  "
        f"planted values read {hits}/{len(planted)}  parse problems {len(result.problems)}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hcas", type=int, default=1024)
    ap.add_argument("--keep", help="keep the lab directory here")
    args = ap.parse_args()
    for tool in ("ibsim", "opensm", "ibqueryerrors", "perfquery", "ibnetdiscover"):
        if shutil.which(tool) is None:
            print(f"bench_collect_choice: {tool} not installed", file=sys.stderr)
            return 2
    root = Path(args.keep or tempfile.mkdtemp(prefix="ibfab-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    lab = Lab(root, fat_tree(args.hcas))
    try:
        print(f"fabric: {args.hcas} HCAs, up in {time.monotonic() - t0:.1f} s (ibsim + opensm SUBNET UP)")
        for (node, port), (setting, _, _) in PLANTED.items():
            lab.console_cmd(f'PerformanceSet "{node}"[{port}] {setting}')
        time.sleep(0.5)
        disc = lab.tool(["ibnetdiscover"])
        fabric = parse_ibnetdiscover(disc.stdout.splitlines(), "ibnetdiscover")
        print(
            f"discovered: {len(fabric.switches())} switches, {len(fabric.hcas())} HCAs, {len(fabric.links)} cables in {disc.seconds:.2f} s"
        )
        names = {n.description.split(";")[-1].split(":")[0].split()[0]: n.guid for n in fabric.nodes.values()}
        cabled = {(g, p) for g in fabric.nodes for p, _, _ in fabric.neighbours(g)}
        planted = {
            (names[node], port): (canon, value)
            for (node, port), (_, canon, value) in PLANTED.items()
            if (names.get(node), port) in cabled
        }
        timings = {}
        for approach in ("ibqueryerrors", "perfquery"):
            start = time.monotonic()
            result = collect_fabric(
                lab.tool, fabric, time.time(), approach=approach, lids=ca_lids(disc.stdout)
            )
            timings[approach] = time.monotonic() - start
            summarise(approach, result, timings[approach], planted)
            for note in result.notes[:3]:
                print(f"    note: {note}")
            tool_s = sum(r.duration for r in result.raw.values())
            print(
                f"    time inside the tools: {tool_s:.2f} s; parsing and merging: {timings[approach] - tool_s:.2f} s"
            )
            if approach == "ibqueryerrors":
                for argv, r in result.raw.items():
                    print(
                        f"    {' '.join(argv)}: {r.duration:.2f} s, rc {r.exit_code}, {len(r.stdout) / 1e6:.1f} MB"
                    )
            if approach == "perfquery":
                sw = {n.lid for n in fabric.switches()}
                sw_s = sum(r.duration for a, r in result.raw.items() if int(a[-2]) in sw)
                sw_ports = sum(1 for s in result.samples if s.guid in {n.guid for n in fabric.switches()})
                print(
                    f"    per-switch runs only: {sw_s:.2f} s for {sw_ports} switch ports "
                    f"(the {len(result.samples) - sw_ports} HCA-side ports need per-HCA runs: "
                    f"{tool_s - sw_s:.2f} s)"
                )
        print(f"ratio perfquery / ibqueryerrors: {timings['perfquery'] / timings['ibqueryerrors']:.1f}x")
        me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"peak RSS: this process {me:.0f} MiB, largest child {kids:.0f} MiB (ibsim/opensm/tools)")
    finally:
        lab.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
