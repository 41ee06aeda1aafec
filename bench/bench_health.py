"""Benchmark: link health at 16,384-HCA scale, in memory and the way ``ibfab health`` runs it.

On a synthetic leaf-spine fabric (782 leaves: 50,048 ports, 25,024 links, ~1 % of ports with
errors) with 60 snapshots a minute apart (3.0 M counter rows):

* the store: its size per snapshot (target: at most 1 MiB), beside the baseline of the version-1
  layout (one SQLite row per port) measured on one snapshot in the same run;
* ``ibfab health``'s path: a store with the fabric and the 60 snapshots (built once, half a
  minute; ``--keep DIR`` keeps it for the next run), then :func:`fabric.app.health.assess.assess_store` and
  the text report ``ibfab health`` prints, in a fresh child process (the median of ``--repeat``):
  the child's whole wall time (interpreter start, imports and exit included), assess_store's own
  time, and its peak resident memory (``getrusage(RUSAGE_CHILDREN).ru_maxrss``). The report the
  comparison below needs comes from one more child that also writes it as JSON, untimed.
  Targets: whole process under 3 s and at most 1.5x the in-memory deltas + assess below; peak
  under 1 GiB.
* in memory: ``compute_deltas`` + per-port sums + the report on the same table as a pandas frame
  (what health ran before it summed the store's blocks; the sums are now the tests' oracle,
  tests/oracles/health.py), beside a plain ``groupby(['guid', 'port']).diff()`` as the baseline.
  Target: deltas + assess < 5 s.
* that ``assess_store`` gives the oracle's report of the same table (``to_dict()``, every link and node).

    .venv/bin/python bench/bench_health.py [--leaves 782] [--snapshots 60] [--keep DIR] [--strict]
    .venv/bin/python bench/bench_health.py --snapshots 240 --store-only   # memory vs window length
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fabric.core.fields import COUNTER_NAMES, FRAME_COLUMNS
from fabric.counters.deltas import compute_deltas
from fabric.health import HealthReport, HealthThresholds
from fabric.health.assess import report as link_report
from tests.oracles.health import assess_oracle, port_table
from topology.model import Fabric, Guid, Lid, Link, Node, NodeKind, PortRef

HCAS_PER_LEAF = 16
SPINE_PORTS = 64
TARGET_S = 5.0
TARGET_MIB = 1024.0
TARGET_SNAPSHOT_MIB = 1.0
TARGET_PROCESS_S = 3.0
TARGET_RATIO = 1.5
T0 = 1.8e9
EVERY_S = 60.0
SPREAD_S = 5.0  # each port is read up to this late after its snapshot starts


def leaf_spine(leaves: int) -> Fabric:
    """Leaves with 16 HCAs down and 16 uplinks spread over 64-port spines (64 ports per leaf in all)."""
    nodes: list[Node] = []
    links: list[Link] = []
    n_spines = -(-leaves * HCAS_PER_LEAF // SPINE_PORTS)
    spines = [Guid(f"0x{0x2000000 + s:016x}") for s in range(n_spines)]
    nodes += [
        Node(g, NodeKind.SWITCH, f"spine{s:03d}", SPINE_PORTS, Lid(1 + s)) for s, g in enumerate(spines)
    ]
    for lf in range(leaves):
        leaf = Guid(f"0x{0x1000000 + lf:016x}")
        nodes.append(Node(leaf, NodeKind.SWITCH, f"leaf{lf:04d}", 2 * HCAS_PER_LEAF, Lid(1000 + lf)))
        for h in range(HCAS_PER_LEAF):
            hca = Guid(f"0x{0x100000000 + lf * HCAS_PER_LEAF + h:016x}")
            nodes.append(Node(hca, NodeKind.HCA, f"gpu{lf * HCAS_PER_LEAF + h:05d} mlx5_0", 1))
            links.append(Link(PortRef(hca, 1), PortRef(leaf, h + 1), 4, "NDR"))
            uplink = lf * HCAS_PER_LEAF + h
            spine_port = PortRef(spines[uplink // SPINE_PORTS], uplink % SPINE_PORTS + 1)
            links.append(Link(PortRef(leaf, HCAS_PER_LEAF + h + 1), spine_port, 4, "NDR"))
    return Fabric.build(nodes, links)


def synthetic_frame(fabric: Fabric, snapshots: int, seed: int = 1) -> pd.DataFrame:
    """Every link end sampled every 60 s (each port up to 5 s late); ~1 % of ports see errors."""
    rng = np.random.default_rng(seed)
    ends = [(lk.a, lk.b) for lk in fabric.links] + [(lk.b, lk.a) for lk in fabric.links]
    n = len(ends)
    guids = np.array([a.guid for a, _ in ends], dtype=object)
    peers = np.array([b.guid for _, b in ends], dtype=object)
    total = n * snapshots
    cols: dict[str, object] = {
        "snapshot": np.repeat(np.arange(1, snapshots + 1), n),
        "time": T0
        + np.repeat(np.arange(snapshots) * EVERY_S, n)
        + np.tile(rng.uniform(0, SPREAD_S, n), snapshots),
        "guid": pd.array(np.tile(guids, snapshots), dtype="str"),
        "port": np.tile(np.array([a.port for a, _ in ends]), snapshots),
        "lid": pd.array(np.tile(np.arange(n) // 32 + 1, snapshots), dtype="Int64"),
        "peer_guid": pd.array(np.tile(peers, snapshots), dtype="str"),
        "peer_port": pd.array(np.tile(np.array([b.port for _, b in ends]), snapshots), dtype="Int64"),
        "reachable": rng.random(total) > 0.001,
    }
    noisy = rng.random(n) < 0.01
    for name in COUNTER_NAMES:
        if name in ("xmit_data", "rcv_data", "xmit_pkts", "rcv_pkts"):
            steps = rng.integers(0, 10**10, (snapshots, n))
        elif name == "xmit_wait":
            steps = rng.integers(0, 1000, (snapshots, n))
        else:
            steps = rng.poisson(0.2, (snapshots, n)) * noisy
        cols[name] = pd.array(np.cumsum(steps, axis=0).ravel(), dtype="Int64")
    return pd.DataFrame(cols, columns=list(FRAME_COLUMNS))


def build_store(path: Path, fabric: Fabric, frame: pd.DataFrame) -> None:
    """The fabric and every snapshot of ``frame`` through Store.save_topology / save_counter_snapshot
    (what ``ibfab counters collect`` writes; unreachable rows keep no counters, as collected ones)."""
    from fabric.store import Store

    t = time.perf_counter()
    with Store.open(path) as store:
        topo = store.save_topology(fabric, "synthetic leaf-spine", "bench", "bench_health", taken_at=T0 - 10)
        for _, rows in frame.groupby("snapshot", sort=True):
            reachable = rows["reachable"].to_numpy(dtype=bool)
            counters = [rows[name].astype(object).where(reachable, None).tolist() for name in COUNTER_NAMES]
            keys = [rows[c].astype(object).tolist() for c in FRAME_COLUMNS[2:8]]
            guid, port, lid, peer_guid, peer_port, up = keys
            when = rows["time"].tolist()
            tuples = [
                (g, p, ld, pg, pp, u, None if u else "timeout", w, *values)
                for g, p, ld, pg, pp, u, w, *values in zip(
                    guid, port, lid, peer_guid, peer_port, up, when, *counters, strict=True
                )
            ]
            store.save_counter_snapshot(
                T0 + (int(rows["snapshot"].iloc[0]) - 1) * EVERY_S, "bench", topo, tuples
            )
    print(f"store built in {time.perf_counter() - t:.0f} s: {path.stat().st_size / 2**20:.0f} MiB")


def stored_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as the store gives it back: unreachable ports without counters."""
    out = frame.copy()
    unreachable = ~out["reachable"].to_numpy(dtype=bool)
    for name in COUNTER_NAMES:
        out.loc[unreachable, name] = pd.NA
    return out


def child(db: str, now: float, out: str, report: bool) -> int:
    """In the child process: what ``ibfab health --since 24h`` does (``assess_store``, then its
    text report); with ``report``, the whole report as JSON too, for the parent to compare (a run
    kept apart from the timed ones: ``ibfab health`` writes no such thing)."""
    import orjson

    from fabric.app.health.assess import assess_store
    from fabric.present.health import render_health
    from fabric.store import Store

    t = time.perf_counter()
    with Store.open(Path(db), create=False) as store:
        view = assess_store(store, since_s=86400.0, now=now, record=False)
    took = time.perf_counter() - t
    with open(os.devnull, "w") as sink:
        sink.write(render_health(view))
    status = Path("/proc/self/status")
    hwm = [ln for ln in status.read_text().splitlines() if ln.startswith("VmHWM:")] if status.exists() else []
    own = float(hwm[0].split()[1]) / 1024 if hwm else math.nan
    doc = {"seconds": took, "own_peak": own, "report": view.report.to_dict() if report else None}
    Path(out).write_bytes(orjson.dumps(doc))
    return 0


# A bare interpreter that runs one command and prints the command's peak RSS (KiB): measured from
# a parent this small, ru_maxrss is the child's own (Linux counts the parent's size at the fork
# into the child's ru_maxrss, and RUSAGE_CHILDREN keeps the largest child ever waited for).
_LAUNCHER = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); "
    "u = resource.getrusage(resource.RUSAGE_CHILDREN); print(u.ru_utime + u.ru_stime, u.ru_maxrss)"
)


def _run_child(
    db: Path, now: float, report: bool
) -> tuple[float, float, float, float, float, dict[str, object]]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        child = [sys.executable, __file__, "--child", str(db), repr(now), out.name]
        t = time.perf_counter()
        launched = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, *child, *(["--report"] if report else [])],
            check=True,
            stdout=subprocess.PIPE,
            text=True,
        )
        whole = time.perf_counter() - t
        result = json.loads(Path(out.name).read_text())
    cpu, peak = (float(x) for x in launched.stdout.split()[-2:])
    return whole, cpu, float(result["seconds"]), peak / 1024, float(result["own_peak"]), result["report"]


def measure_store(
    db: Path, now: float, repeat: int
) -> tuple[float, float, float, float, float, dict[str, object], float]:
    """(whole child seconds, its CPU seconds, assess_store seconds, peak MiB by getrusage, peak MiB
    by /proc VmHWM: the median run of ``repeat`` fresh children doing what ``ibfab health`` does;
    the report dict and the whole seconds of one more child that also writes it, as --json does)."""
    runs = sorted((_run_child(db, now, report=False) for _ in range(max(1, repeat))), key=lambda r: r[0])
    whole, cpu, took, _, own, _ = runs[len(runs) // 2]
    with_json = _run_child(db, now, report=True)
    return whole, cpu, took, max(r[3] for r in runs), own, with_json[5], with_json[0]


def row_layout_bytes(frame: pd.DataFrame) -> int:
    """Bytes one snapshot of ``frame`` takes in the version-1 layout (a port_counters row per port,
    its primary key index), measured in a scratch SQLite file: the baseline of the block layout."""
    import sqlite3

    from fabric.core.fields import PORT_COUNTER_FIELDS
    from fabric.store.schema import BASE_SCHEMA

    one = stored_frame(frame[frame["snapshot"] == 1])
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(Path(tmp) / "rows.db")
        for statement in BASE_SCHEMA:
            db.execute(statement)
        db.execute("INSERT INTO counter_snapshots VALUES (1, 0, 'bench', NULL, 0, 'complete')")
        columns = [one[c].astype(object).where(one[c].notna(), None).tolist() for c in FRAME_COLUMNS[2:8]]
        guid, port, lid, peer_guid, peer_port, up = columns
        counters = [one[c].astype(object).where(one[c].notna(), None).tolist() for c in COUNTER_NAMES]
        rows = [
            (1, g, p, ld, pg, pp, u, None if u else "timeout", w, *values)
            for g, p, ld, pg, pp, u, w, *values in zip(
                guid, port, lid, peer_guid, peer_port, up, one["time"].tolist(), *counters, strict=True
            )
        ]
        before = db.execute("PRAGMA page_count").fetchone()[0]
        marks = ", ".join("?" * (len(PORT_COUNTER_FIELDS) + 1))
        db.executemany(f"INSERT INTO port_counters VALUES ({marks})", rows)
        db.commit()
        pages = db.execute("PRAGMA page_count").fetchone()[0] - before
        size = int(pages * db.execute("PRAGMA page_size").fetchone()[0])
        db.close()
    return size


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--leaves", type=int, default=782, help="64 ports per leaf: 782 leaves = 50,048 ports"
    )
    parser.add_argument("--snapshots", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3, help="runs; the best time of each step is kept")
    parser.add_argument("--keep", metavar="DIR", help="build the store here (reused if present) and keep it")
    parser.add_argument("--no-store", action="store_true", help="only the in-memory figures")
    parser.add_argument("--store-only", action="store_true", help="only assess_store's figures")
    parser.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("--child", nargs=3, metavar=("DB", "NOW", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--report", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--build", metavar="DB", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child[0], float(args.child[1]), args.child[2], args.report)
    if args.build:
        fabric = leaf_spine(args.leaves)
        build_store(Path(args.build), fabric, synthetic_frame(fabric, args.snapshots))
        return 0

    now = T0 + (args.snapshots - 1) * EVERY_S + SPREAD_S
    missed = False
    stored_report: dict[str, object] | None = None
    if not args.no_store:
        where = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ibfab-bench-health-"))
        where.mkdir(parents=True, exist_ok=True)
        db = where / f"health-{args.leaves}x{args.snapshots}.db"
        try:
            if not db.exists():
                build = [sys.executable, __file__, "--build", str(db), "--leaves", str(args.leaves)]
                subprocess.run([*build, "--snapshots", str(args.snapshots)], check=True)
            whole, whole_cpu, took, peak, own, stored_report, json_whole = measure_store(db, now, args.repeat)
            per_snapshot = db.stat().st_size / args.snapshots / 2**20
        finally:
            if not args.keep:
                shutil.rmtree(where, ignore_errors=True)
        met = peak < TARGET_MIB
        missed |= not met
        print(
            f"store: {per_snapshot:.2f} MiB per snapshot, topology included "
            f"(target {TARGET_SNAPSHOT_MIB:g} MiB: {'met' if per_snapshot <= TARGET_SNAPSHOT_MIB else 'MISSED'})"
        )
        missed |= per_snapshot > TARGET_SNAPSHOT_MIB
        print(
            f"assess_store (ibfab health's path, fresh process, {args.snapshots} snapshots in its 24 h "
            f"window, then its text report; median of {max(1, args.repeat)}): whole process {whole:.2f} s (target {TARGET_PROCESS_S:g} s: "
            f"{'met' if whole <= TARGET_PROCESS_S else 'MISSED'}; CPU {whole_cpu:.2f} s), assess_store {took:.2f} s, "
            f"peak memory {peak:.0f} MiB (ru_maxrss; VmHWM {own:.0f} MiB) "
            f"(target {TARGET_MIB:.0f} MiB: {'met' if met else 'MISSED'})"
        )
        missed |= whole > TARGET_PROCESS_S
        print(
            f"the same with the whole report written as JSON too (as health --json): {json_whole:.2f} s, one run"
        )

    if args.store_only:
        return 1 if args.strict and missed else 0
    fabric = leaf_spine(args.leaves)
    frame = synthetic_frame(fabric, args.snapshots)
    ports = len(frame) // args.snapshots
    print(
        f"table: {ports:,} ports x {args.snapshots} snapshots = {len(frame):,} rows, {len(fabric.links):,} links"
    )
    if not args.no_store:
        rows_mib = row_layout_bytes(frame) / 2**20
        print(
            f"baseline: one snapshot in the version-1 row layout takes {rows_mib:.2f} MiB; the blocks "
            f"take {per_snapshot / rows_mib:.2f}x that"
        )

    best = {"deltas": math.inf, "assess": math.inf, "baseline": math.inf}
    cpu = {"deltas": math.inf, "assess": math.inf, "baseline": math.inf}
    since = now - 86400.0
    for _ in range(args.repeat):  # the best of a few runs: the machine is shared
        w0, c0 = time.perf_counter(), time.process_time()
        deltas = compute_deltas(frame)
        w1, c1 = time.perf_counter(), time.process_time()
        report = table_assess(frame, deltas, fabric, since, now)
        w2, c2 = time.perf_counter(), time.process_time()
        del deltas
        baseline = frame.groupby(["guid", "port"])[list(COUNTER_NAMES)].diff()
        w3, c3 = time.perf_counter(), time.process_time()
        del baseline
        for name, wall, used in (
            ("deltas", w1 - w0, c1 - c0),
            ("assess", w2 - w1, c2 - c1),
            ("baseline", w3 - w2, c3 - c2),
        ):
            best[name] = min(best[name], wall)
            cpu[name] = min(cpu[name], used)
    print(
        f"in memory, best of {args.repeat} runs, wall (cpu): deltas {best['deltas']:.2f} s "
        f"({cpu['deltas']:.2f}), assess {best['assess']:.2f} s ({cpu['assess']:.2f}), "
        f"baseline {best['baseline']:.2f} s ({cpu['baseline']:.2f})"
    )
    ours = best["deltas"] + best["assess"]
    missed |= ours >= TARGET_S
    print(f"assess: {report.summary.links_by_status}")
    print(f"deltas+assess:  {ours:.2f} s (target {TARGET_S:.0f} s: {'met' if ours < TARGET_S else 'MISSED'})")
    print(
        f"ratio compute_deltas / pandas groupby(['guid','port']).diff(): "
        f"{best['deltas'] / best['baseline']:.2f}x; deltas+assess / baseline: {ours / best['baseline']:.2f}x"
    )
    print(
        f"peak memory of the in-memory run (ru_maxrss, frame included): "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )
    if not args.no_store:
        ratio = whole / ours
        cpu_ratio = whole_cpu / (cpu["deltas"] + cpu["assess"])
        print(
            f"whole-process health from the store / in-memory deltas+assess: {ratio:.2f}x wall, "
            f"{cpu_ratio:.2f}x CPU (target {TARGET_RATIO:g}x: {'met' if ratio <= TARGET_RATIO else 'MISSED'})"
        )
        missed |= ratio > TARGET_RATIO
    if stored_report is not None:
        same = assess_oracle(stored_frame(frame), fabric, since=since, now=now).to_dict()
        equal = json.loads(json.dumps(same)) == stored_report
        missed |= not equal
        print(f"assess_store's report equals the oracle's of the same table: {'yes' if equal else 'NO'}")
    return 1 if args.strict and missed else 0


def table_assess(
    frame: pd.DataFrame, deltas: pd.DataFrame, fabric: Fabric, since: float, now: float
) -> HealthReport:
    """The counter table's path: its deltas summed per port (group codes, ``bincount``), then the
    report as health makes it."""
    t = HealthThresholds()
    keep = ((deltas["prev_time"] >= since) & (deltas["time"] <= now)).to_numpy(dtype=bool)
    pt = port_table(
        deltas if keep.all() else deltas[keep], now=now, short_s=t.ber_window_s, long_s=t.ber_window_long_s
    )
    inside = ((frame["time"] >= since) & (frame["time"] <= now)).to_numpy(dtype=bool)
    window = frame[inside]
    return link_report(pt, fabric, since, now, int(window["snapshot"].nunique()), len(window), (), (), t)


if __name__ == "__main__":
    sys.exit(main())
