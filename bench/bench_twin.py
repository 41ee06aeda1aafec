"""Benchmark: a twin of a fabric built, its routes checked, and one isolation checked on it.

For each size the generator writes a rail-optimized NDR fabric as real ``ibnetdiscover`` text
(the capture an operator would give), then, each step a new ``ibfab`` process as an operator runs
it, in a fresh lab directory:

1. ``ibfab lab up --from CAPTURE --engine minhop``: net file, ibsim, OpenSM to SUBNET UP, the
   twin's own ibnetdiscover and the comparison with the source;
2. ``ibfab routes check --lab TWIN``: dump_fts on the twin, every route judged (up to 2,048 HCAs:
   the resolved dump of larger twins is over the 64 MiB output bound; the check of step 3 reads
   ``dump_fts -n`` and judges every route before and after all the same);
3. ``ibfab isolate LEAF:UPLINK --input CAPTURE --check-routing --json``: discovery of the capture,
   the plan and its limits, then the twin found up (key and engine match), tables before, the
   port disabled and unplugged, OpenSM's re-route waited for, tables after, the twin put back;
4. the same check again (the twin kept up between checks).

Wall seconds and the peak memory of each ``ibfab`` process; the peak memory of the twin's ibsim and
OpenSM (VmHWM) once the checks are done. Baseline in the same run: ``ibfab lab up --fabric SPEC``,
the generator's lab of the same fabric (no discovery, no comparison). Target: 2,048 HCAs up and
checked in under 2 minutes on the 2-core machine.

Run: .venv/bin/python bench/bench_twin.py [--sizes 512,2k,4k] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPECS = {
    "512": "rail:units=2,nodes=32,hcas=8,spines=8,radix=64,speed=NDR",
    "2k": "rail:units=8,nodes=32,hcas=8,spines=8,core=32,radix=64,speed=NDR",
    "4k": "rail:units=16,nodes=32,hcas=8,spines=8,core=64,radix=64,speed=NDR",
    "6k": "rail:units=24,nodes=32,hcas=8,spines=8,core=96,radix=64,speed=NDR",
    "8k": "rail:units=32,nodes=32,hcas=8,spines=8,core=128,radix=64,speed=NDR",
    "16k": "superpod-64su",
}
IBFAB = Path(sys.executable).parent / "ibfab"


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, peak MiB, stdout) of one ibfab process; exits the bench on a failure."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=env, text=True)
        assert proc.stdout is not None
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code
        if code != 0:
            err.seek(0)
            sys.exit(f"{' '.join(argv[1:4])}... failed (exit {code}): {err.read().strip()[-400:]}")
    return wall, usage.ru_maxrss / 1024, out


def vm_hwm(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def uplink(topo: Path) -> str:
    """``leaf-su01-r0:P``: the first switch-to-switch port of that leaf."""
    from fabric.app.discovery.discover import discover_text

    d = discover_text(topo.read_text(), str(topo))
    leaf = next(g for g, c in d.classification.nodes.items() if c.name == "leaf-su01-r0")
    port = min(
        p for p, far, _ in d.fabric.neighbours(leaf) if d.fabric.nodes[far.guid].kind.value == "switch"
    )
    return f"leaf-su01-r0:{port}"


def bench(size: str, folder: Path) -> None:
    from topology.generate import generate, to_ibnetdiscover

    spec = SPECS[size]
    topo = folder / f"{size}.topo"
    if not topo.is_file():
        topo.write_text(to_ibnetdiscover(generate(spec)))
    labs = Path(tempfile.mkdtemp(prefix=f"twin-{size}-", dir=folder))
    env = {**os.environ, "IBFAB_LAB_DIR": str(labs), "IBFAB_DATA_DIR": str(labs / "data")}
    port = uplink(topo)
    base_wall, _, _ = run([str(IBFAB), "lab", "up", "--name", "gen", "--fabric", spec], env)
    run([str(IBFAB), "lab", "down", "--name", "gen"], env)
    try:
        _steps(size, spec, topo, port, env, base_wall)
    finally:  # a step that failed leaves no simulator behind
        subprocess.run([str(IBFAB), "lab", "down", "--all"], env=env, capture_output=True)


def _steps(size: str, spec: str, topo: Path, port: str, env: dict[str, str], base_wall: float) -> None:
    rows = []
    wall, peak, out = run([str(IBFAB), "lab", "up", "--from", str(topo), "--engine", "minhop", "--json"], env)
    twin = json.loads(out)
    assert twin["comparison"]["equal"], twin["comparison"]
    rows.append(("twin up (lab up --from)", wall, peak))
    name = twin["name"]
    if size in ("512", "2k"):  # dump_fts's resolved form of larger twins is over the output bound
        wall, peak, _ = run([str(IBFAB), "routes", "check", "--lab", name], env)
        rows.append(("routes check --lab TWIN (dump_fts)", wall, peak))
    check_argv = [str(IBFAB), "isolate", port, "--input", str(topo), "--check-routing", "--json"]
    wall, peak, out = run(check_argv, env)
    first = json.loads(out)["routing_check"]
    rows.append((f"isolate {port} --check-routing", wall, peak))
    wall, peak, out = run(check_argv, env)
    second = json.loads(out)["routing_check"]
    rows.append(("the same check, twin kept up", wall, peak))
    state = twin["lab"]
    sim, osm = vm_hwm(int(state["ibsim_pid"])), vm_hwm(int(state["opensm_pid"]))
    run([str(IBFAB), "lab", "down", "--name", name], env)
    total = sum(w for what, w, _ in rows if not what.startswith("the same"))
    print(f"\n{size}: {twin['hcas']} HCAs, {twin['switches']} switches ({spec})")
    print(f"  baseline: lab up --fabric (the generator's lab) {base_wall:.1f} s")
    for what, w, p in rows:
        print(f"  {what:<44} {w:7.1f} s   peak {p:6.0f} MiB")
    print(f"  up + routes check + one plan's check: {total:.1f} s (target at 2,048 HCAs: 120 s)")
    print(f"  check verdict {first['verdict']}, built {first['twin_built']}; its steps: {first['seconds']}")
    print(f"  second check: built {second['twin_built']}; its steps: {second['seconds']}")
    print(f"  twin processes' peak memory: ibsim {sim:.0f} MiB, opensm {osm:.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--sizes", default="512,2k", help="comma list of " + ", ".join(SPECS))
    ap.add_argument("--keep", metavar="DIR", help="keep the captures and labs here")
    args = ap.parse_args()
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-twin-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"bench_twin: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; files in {folder}")
    for size in args.sizes.split(","):
        bench(size.strip(), folder)


if __name__ == "__main__":
    main()
