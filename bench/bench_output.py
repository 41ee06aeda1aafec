"""Memory of command output over real SSH: ``ibfab hosts run`` on commands that flood it.

A private sshd listens on 127.0.0.2 ... 127.0.0.17. Each case runs ``ibfab hosts run`` as a child
process (its stdout to /dev/null, as a terminal that keeps up) and reads the child's peak RSS
(``wait4``); the baseline is the same command line running ``true``, in the same run:

- one host printing 300 MB of random bytes (over the 64 MiB cap; invalid UTF-8 throughout);
- one host running ``yes`` under ``-t 8`` (a flood that never ends: it must end at the timeout);
- 16 hosts each printing 32 MB of random bytes (512 MB in all: over the fan-out's budget).

``--before REF`` runs the same cases on the code of a git revision too (extracted to a temporary
directory), so a change is measured against what it replaced on the same machine and load.
Run from the repository root: ``.venv/bin/python bench/bench_output.py [--before REF]`` (needs root).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from probes.output import FANOUT_OUTPUT_BYTES, MAX_OUTPUT_BYTES  # noqa: E402
from tests.sshd import Sshd, start_sshd  # noqa: E402

HOSTS = 16
CASES: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("baseline: true", 1, ("--", "true")),
    ("300 MB random, 1 host", 1, ("--", "head", "-c", "300000000", "/dev/urandom")),
    ("yes -t 8, 1 host", 1, ("-t", "8", "--", "yes")),
    (f"32 MB random x {HOSTS} hosts", HOSTS, ("--", "head", "-c", "32000000", "/dev/urandom")),
)


@dataclass(frozen=True)
class Figure:
    wall: float
    peak_mib: float
    exit_code: int


def run_case(tree: Path, inventory: Path, known: Path, hosts: int, args: tuple[str, ...]) -> Figure:
    code = f"import sys; sys.path.insert(0, {str(tree)!r}); from tui.program import main; main()"
    argv = [sys.executable, "-c", code, "hosts", "run", "-i", str(inventory), "--known-hosts", str(known)]
    argv += ["--ssh-config", "", "-w", f"n[1-{hosts}]", *args]
    start = time.perf_counter()
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen(argv, stdout=null, stderr=subprocess.DEVNULL, cwd=tree)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Figure(time.perf_counter() - start, usage.ru_maxrss / 1024, proc.returncode)


def extract(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    tar = into / "tree.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as t:
        t.extractall(into / "tree", filter="data")
    return into / "tree"


def write_inventory(sshd: Sshd, path: Path) -> Path:
    path.write_text(
        f'[defaults]\nuser = "{sshd.user}"\nport = {sshd.port}\nkey_file = "{sshd.user_key}"\n'
        f'[[hosts]]\nname = "n[1-{HOSTS}]"\naddress = "127.0.0.[2-{HOSTS + 1}]"\n'
    )
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", help="a git revision to measure too (e.g. HEAD~3)")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ibfab-bench-output-") as tmp:
        trees = [("now", ROOT)]
        if opts.before:
            trees.insert(0, (opts.before, extract(opts.before, Path(tmp))))
        with start_sshd(Path(tmp) / "sshd", hosts=HOSTS, skip_bashrc=True) as sshd:
            known = sshd.write_known_hosts(Path(tmp) / "known_hosts")
            inventory = write_inventory(sshd, Path(tmp) / "inventory.toml")
            figures = {
                (label, name): run_case(tree, inventory, known, hosts, args)
                for name, hosts, args in CASES
                for label, tree in trees
            }
    print(
        f"ibfab hosts run over real SSH, {len(os.sched_getaffinity(0))} cores; cap {MAX_OUTPUT_BYTES >> 20} MiB"
        f" per stream, fan-out budget {FANOUT_OUTPUT_BYTES >> 20} MiB"
    )
    print(f"{'case':<28} {'code':<10} {'wall s':>7} {'peak MiB':>9} {'over baseline':>14} {'exit':>5}")
    for name, _, _ in CASES:
        for label, _ in trees:
            f = figures[(label, name)]
            base = figures[(label, CASES[0][0])].peak_mib
            print(
                f"{name:<28} {label:<10} {f.wall:7.1f} {f.peak_mib:9.1f} {f.peak_mib - base:14.1f} {f.exit_code:5d}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
