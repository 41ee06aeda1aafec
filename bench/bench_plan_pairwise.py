"""``ibfab sweep plan --pattern pairwise`` on a real 1,247-HCA capture and a 4,341-HCA fabric, whole process.

    .venv/bin/python bench/bench_plan_pairwise.py [--capture FILE] [--repeat 5]

Times, each in a new process as an operator runs it (best of ``--repeat``, taking turns):
``ibfab discover --input FILE`` (the baseline: reading the capture is the floor),
``ibfab sweep plan --input FILE --pattern pairwise``, with peak RSS, on
tests/data/realdata/ibnetdiscover/ufm-sdk-selene-storage-hdr-edr-1407nodes.txt (382,571 probes in
627 rounds) and on a generated DGX-style rail fabric of 4,341 HCAs (543 hosts of 8 rails, the last
two missing 11 HCAs between them; 1,175,598 probes in 543 rounds), the size of the real fabric
issue 19 names. Targets (issue 19): under 1 s and under 2 s. The code timed is the one on
PYTHONPATH (run it with an older checkout there for that version's figures).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAPTURE = (
    ROOT / "tests" / "data" / "realdata" / "ibnetdiscover" / "ufm-sdk-selene-storage-hdr-edr-1407nodes.txt"
)
TARGET_S = 1.0
TARGET_4341_S = 2.0
SPEC_4341 = "rail:units=17,nodes=32,hcas=8,spines=8,core=128,radix=64,speed=NDR"
MISSING_4341 = [f"missing-hca:dgx-0544:{i}" for i in range(8)] + [
    f"missing-hca:dgx-0543:{i}" for i in range(3)
]
_LAUNCHER = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def whole(argv: list[str]) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", _LAUNCHER, *argv], check=True, capture_output=True, text=True)
    seconds, kib = out.stdout.split()
    return float(seconds), float(kib) / 1024


def fabric_4341(where: Path) -> Path:
    """The generated 4,341-HCA fabric as ibnetdiscover text in ``where``."""
    sys.path.insert(0, str(ROOT))
    from topology.generate import generate, to_ibnetdiscover

    path = where / "rail-4341.txt"
    path.write_text(to_ibnetdiscover(generate(SPEC_4341, MISSING_4341)))
    return path


def bench(capture: str, repeat: int, target: float) -> None:
    cli = [sys.executable, "-c", "from fabric.cli import main; main()"]
    plan = [*cli, "sweep", "plan", "--input", capture, "--pattern", "pairwise"]
    runs = {
        "discover (baseline)": [*cli, "discover", "--input", capture],
        "sweep plan --pattern pairwise": plan,
    }
    best: dict[str, tuple[float, float]] = {}
    for _ in range(repeat):
        for label, argv in runs.items():
            got = whole(argv)
            best[label] = min(best.get(label, got), got)
    print(capture)
    for label, (seconds, mib) in best.items():
        print(f"  {label:<32} {seconds:6.2f} s, peak {mib:4.0f} MiB")
    took = best["sweep plan --pattern pairwise"][0]
    print(f"  plan: {'met' if took < target else 'MISSED'} (target {target:g} s)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--capture", default=str(CAPTURE))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    bench(args.capture, args.repeat, TARGET_S)
    with tempfile.TemporaryDirectory() as tmp:
        bench(str(fabric_4341(Path(tmp))), args.repeat, TARGET_4341_S)
    return 0


if __name__ == "__main__":
    sys.exit(main())
