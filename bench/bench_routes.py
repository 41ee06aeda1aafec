"""Benchmark: forwarding tables of a 16,384-HCA and a 2,048-HCA fabric read and judged.

The fabrics come from the generator (superpod-64su: 1,280 switches, 17,664 LIDs, 22.6 million
entries; and an 8-unit rail fabric of 2,048 HCAs, 160 switches), routed by
topology.generate_routes.minhop_tables (OpenSM's minhop, LID by LID) and written as dump_lfts
text (1.77 GB and 28 MB). Each is judged as an operator would: ``ibfab routes check --input TOPO
--tables DUMP`` in a new process (parse, walk, every check, balance and credit loops included,
the text report), best of 3; wall and CPU seconds and the peak memory of that process.
Targets: 16,384 HCAs under 10 s and 1 GiB; 2,048 HCAs under 1 s.

Baseline in the same run: a Python child that only reads the dump and counts its lines. Peer:
check_lft_balance (infiniband-diags) on the same dump, with an ibnetdiscover cache of a lab of
the same fabric (its iblinkinfo needs a umad port, so it runs in the lab's environment). At 2,048
HCAs always; at 16,384 only with --peer-16k: the lab takes about a minute and 1 GB to come up,
check_lft_balance holds the whole dump in Perl's memory and runs iblinkinfo once per switch, so
it is given --peer-timeout seconds (default 600) and its time is reported as more than that if
it does not finish.

Run: .venv/bin/python bench/bench_routes.py [--sizes 2k,16k] [--peer-16k] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPECS = {
    "2k": "rail:units=8,nodes=32,hcas=8,spines=8,core=32,radix=64,speed=NDR",
    "16k": "superpod-64su",
}
TARGETS = {"2k": (1.0, None), "16k": (10.0, 1024.0)}  # seconds, MiB
IBFAB = Path(sys.executable).parent / "ibfab"


def build(size: str, folder: Path) -> tuple[Path, Path]:
    """The fabric's ibnetdiscover text and its dump_lfts (made once; kept in ``folder``)."""
    topo, dump = folder / f"{size}.topo", folder / f"{size}.lfts"
    if topo.is_file() and dump.is_file():
        return topo, dump
    from topology.generate import generate, to_ibnetdiscover
    from topology.generate_routes import minhop_tables, write_dump_lfts
    from topology.ibnetdiscover import read_ibnetdiscover

    start = time.perf_counter()
    topo.write_text(to_ibnetdiscover(generate(SPECS[size])))
    fabric = read_ibnetdiscover(topo)
    tables = minhop_tables(fabric)
    with dump.open("wb") as fh:
        write_dump_lfts(fabric, tables, fh)
    print(f"  (made {dump.name}: {dump.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - start:.0f} s)")
    return topo, dump


def timed(
    argv: list[str], env: dict[str, str] | None = None, timeout: float | None = None
) -> tuple[float, float, float, int]:
    """(wall s, cpu s, peak MiB, exit code) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    deadline = None if timeout is None else start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if deadline is not None and time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            return float("inf"), usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, -9
        time.sleep(0.01)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def baseline(dump: Path) -> list[str]:
    code = (
        "import sys\nn = 0\nwith open(sys.argv[1], 'rb') as fh:\n"
        "    for chunk in iter(lambda: fh.read(1 << 25), b''):\n        n += chunk.count(b'\\n')\nprint(n)"
    )
    return [sys.executable, "-c", code, str(dump)]


def ibfab(topo: Path, dump: Path) -> list[str]:
    return [str(IBFAB), "routes", "check", "--input", str(topo), "--tables", str(dump)]


def peer(size: str, dump: Path, folder: Path, timeout: float) -> tuple[float, float, float, int] | None:
    """check_lft_balance -l DUMP -i CACHE in a lab of the same fabric (None: not installed)."""
    from fabric.lab import simulator as lab

    if not Path("/usr/sbin/check_lft_balance").exists():
        return None
    name = f"bench-routes-{size}"
    lab.up(SPECS[size], (), name=name)
    try:
        cache = folder / f"{size}.cache"
        lab.run_tool(name, ["ibnetdiscover", "--cache", str(cache)], timeout=600)
        env = dict(os.environ, **lab.tool_env(name))
        return timed(["check_lft_balance", "-l", str(dump), "-i", str(cache)], env=env, timeout=timeout)
    finally:
        lab.down(name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2k,16k")
    ap.add_argument("--peer-16k", action="store_true", help="Also time check_lft_balance at 16,384 HCAs.")
    ap.add_argument("--peer-timeout", type=float, default=600.0)
    ap.add_argument("--keep", metavar="DIR", help="Keep (and reuse) the generated files here.")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, IBFAB_DATA_DIR=str(Path(tmp) / "data"), IBFAB_LAB_DIR=str(Path(tmp) / "labs"))
        os.environ.update(IBFAB_LAB_DIR=env["IBFAB_LAB_DIR"])
        for size in args.sizes.split(","):
            print(f"== {size}: {SPECS[size]}")
            topo, dump = build(size, folder)
            lines = timed(baseline(dump))
            runs = [timed(ibfab(topo, dump), env=env) for _ in range(3)]
            codes = {r[3] for r in runs}
            wall = min(r[0] for r in runs)
            cpu = min(r[1] for r in runs)
            rss = max(r[2] for r in runs)
            limit_s, limit_mib = TARGETS[size]
            print(
                f"  dump: {dump.stat().st_size / 1e6:.0f} MB; baseline (read and count lines): wall {lines[0]:.2f} s, cpu {lines[1]:.2f} s"
            )
            print(
                f"  ibfab routes check (whole process, best of 3): wall {wall:.2f} s, cpu {cpu:.2f} s, "
                f"peak {rss:.0f} MiB, exit {sorted(codes)}  (target < {limit_s:g} s"
                + (f", < {limit_mib:g} MiB)" if limit_mib else ")")
            )
            print(
                f"  ratio to the baseline: wall {wall / lines[0]:.1f}x, cpu {cpu / max(lines[1], 1e-9):.1f}x"
            )
            if size == "2k" or args.peer_16k:
                got = peer(size, dump, folder, args.peer_timeout)
                if got is None:
                    print("  check_lft_balance: not installed")
                elif got[3] == -9:
                    print(
                        f"  check_lft_balance (same dump): more than {args.peer_timeout:g} s (stopped), peak {got[2]:.0f} MiB"
                    )
                else:
                    print(
                        f"  check_lft_balance (same dump): wall {got[0]:.2f} s, cpu {got[1]:.2f} s, peak {got[2]:.0f} MiB"
                    )
            else:
                print(
                    "  check_lft_balance: not run at this size (--peer-16k: a 16k lab, about 1 min and 1 GB)"
                )


if __name__ == "__main__":
    main()
