"""Start-up: the whole ``ibfab --version`` and ``ibfab --help`` processes against a bare
``python -c "import click"`` (what any click program pays), in the same run.

    .venv/bin/python bench/bench_startup.py [--repeat 15]

Each command runs as a new process, as an operator runs it (interpreter start, imports and exit
included), best of ``--repeat``, the commands taking turns (this machine is shared: interleaving
exposes them to the same load); peak RSS of each. Bytecode is written on the first (untimed) run,
as an installed package has it. Target (issue 26): ``ibfab --version`` within 2x the click
baseline.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

TARGET_RATIO = 2.0
_LAUNCHER = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)
IBFAB = [sys.executable, "-c", "from tui.program import main; main()"]  # what the ibfab script runs
COMMANDS = {
    'python -c "import click"': [sys.executable, "-c", "import click"],
    "ibfab --version": [*IBFAB, "--version"],
    "ibfab --help": [*IBFAB, "--help"],
}


def whole(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(seconds, peak MiB) of one command in a new process."""
    out = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *argv], check=True, capture_output=True, text=True, env=env
    )
    seconds, kib = out.stdout.split()
    return float(seconds), float(kib) / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for argv in COMMANDS.values():  # writes the bytecode, as installing does
        whole(argv, env)
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.repeat):
        for label, argv in COMMANDS.items():
            got = whole(argv, env)
            best[label] = min(best.get(label, got), got)
    base = best['python -c "import click"'][0]
    print(f"best of {args.repeat}, each a new process, taking turns:")
    for label, (seconds, mib) in best.items():
        print(
            f"  {label:<28} {seconds:6.3f} s  peak {mib:4.0f} MiB  ({seconds / base:.2f}x the click baseline)"
        )
    ratio = best["ibfab --version"][0] / base
    verdict = "met" if ratio <= TARGET_RATIO else "MISSED"
    print(f"ibfab --version: {ratio:.2f}x python -c 'import click' (target <= {TARGET_RATIO:g}x: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
