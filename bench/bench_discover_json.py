"""``ibfab discover --json`` on 8,192 HCAs: what writing JSON adds to discovery.

    .venv/bin/python bench/bench_discover_json.py [--units 32] [--repeat 5]

Generates a rail-optimized fabric (32 units x 32 nodes x 8 HCAs = 8,192 HCAs) as ibnetdiscover
text and times, each as a new process (as an operator runs it; best of ``--repeat``, taking turns):

* ``ibfab discover --input FILE`` (the baseline: parse, classify, anomalies, the text report);
* ``ibfab discover --input FILE --json`` (the same, written as indented JSON with orjson);

and in this process the encoding alone: the stdlib's ``json.dumps(indent=1)`` (what --json used
before: indentation makes it fall back to the pure-Python encoder) against orjson. Peak RSS of
each process. Target (issue 19): --json no slower than the plain Python peer ibtopotool's whole
process on the same file (0.53 s on the issue's machine), i.e. about the cost of discovery alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from topology.generate import generate, to_ibnetdiscover

_LAUNCHER = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def whole(argv: list[str]) -> tuple[float, float]:
    """(seconds, peak MiB) of one command in a new process."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", _LAUNCHER, *argv], check=True, capture_output=True, text=True)
    seconds, kib = out.stdout.split()
    return float(seconds), float(kib) / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--units", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    design = generate(f"rail:units={args.units},nodes=32,hcas=8,spines=8,core=128,radix=64,speed=NDR")
    with tempfile.TemporaryDirectory() as tmp:
        capture = Path(tmp) / "fabric.txt"
        capture.write_text(to_ibnetdiscover(design))
        cli = [
            sys.executable,
            "-c",
            "from fabric.cli import main; main()",
            "discover",
            "--input",
            str(capture),
        ]
        best: dict[str, tuple[float, float]] = {}
        for _ in range(args.repeat):
            for label, argv in (("discover", cli), ("discover --json", [*cli, "--json"])):
                got = whole(argv)
                best[label] = min(best.get(label, got), got)

        from fabric.app.discovery.discover import discover
        from fabric.app.session import Session, StoreAccess, choose_source

        src = choose_source(StoreAccess.at(), str(capture))
        text = src.text
        doc = discover(Session(src)).to_dict()
    import orjson

    encode: dict[str, float] = {}
    for _ in range(args.repeat):
        for label, fn in (
            ("json.dumps(indent=1)", lambda: json.dumps(doc, indent=1).encode()),
            ("orjson (indent 2)", lambda: orjson.dumps(doc, option=orjson.OPT_INDENT_2)),
        ):
            t = time.perf_counter()
            fn()
            encode[label] = min(encode.get(label, 1e9), time.perf_counter() - t)
    print(f"{len(design.hcas):,} HCAs, capture {len(text or '') / 1e6:.1f} MB")
    plain, plain_mib = best["discover"]
    js, js_mib = best["discover --json"]
    print(f"  ibfab discover (baseline)          {plain:6.2f} s, peak {plain_mib:4.0f} MiB")
    print(
        f"  ibfab discover --json              {js:6.2f} s, peak {js_mib:4.0f} MiB  ({js / plain:.2f}x the baseline)"
    )
    for label, seconds in encode.items():
        print(f"  encoding alone: {label:<20} {seconds:6.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
