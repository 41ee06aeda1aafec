"""One counter snapshot of a 16,384-HCA fabric from ibqueryerrors text into the store, as the collector does it.

    .venv/bin/python bench/bench_ingest.py [--spec superpod-64su] [--runs 3]

Builds the fabric with ``topology.generate`` (parsed back from its ibnetdiscover text, as
discovery would), writes what the two collector passes print for it (``ibqueryerrors --counters
-r``: every cabled port with its data counters and link line; ``ibqueryerrors --threshold-file
/dev/null -r``: the ~3 % of ports with an error counter above 0), then times the collector's own
path: ``collect_fabric`` (both parses, the merge) -> ``snapshot_rows`` -> ``save_counter_snapshot``
(raw texts kept, one transaction, synchronous=FULL). Baselines in the same run: ``pd.read_csv``
of the same rows as CSV text, and a bare ``executemany`` of the rows into an in-memory table.
Counter values come from bench_store_ingest's generator. Target: text -> store < 2 s.
"""

from __future__ import annotations

import argparse
import io
import random
import resource
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store_ingest import _values, timed

from fabric.collection import raw_captures, snapshot_rows
from fabric.counters.collect import RunTool, collect_fabric, ibqueryerrors_argv
from fabric.counters.fields import COUNTERS
from fabric.store import PORT_COUNTER_FIELDS, Store
from probes.runner import CommandResult
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Fabric, NodeKind

TARGET_S = 2.0
_DATA = ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts")
_EXTRA = ("PortUnicastXmitPkts", "PortUnicastRcvPkts", "PortMulticastXmitPkts", "PortMulticastRcvPkts")
_ERRORS = tuple(pma for name, (bits, pma) in COUNTERS.items() if bits < 64)


def _lids(fabric: Fabric) -> dict[str, int]:
    lids: dict[str, int] = {}
    top = max((n.lid or 0 for n in fabric.nodes.values()), default=0)
    for guid, node in fabric.nodes.items():
        if node.lid:
            lids[guid] = node.lid
        else:
            top += 1
            lids[guid] = top
    return lids


def _port_guid(fabric: Fabric, guid: str) -> str:
    """CAs answer with a port GUID (node GUID + 1 in the generator's fabrics); switches with theirs."""
    return guid if fabric.nodes[guid].kind is NodeKind.SWITCH else f"0x{int(guid, 16) + 1:016x}"  # type: ignore[index]


def ibqueryerrors_texts(fabric: Fabric, seed: int = 1) -> tuple[str, str]:
    """(``--counters -r`` text, error-pass text) for every cabled port of ``fabric``."""
    rng = random.Random(seed)
    lids = _lids(fabric)
    data: list[str] = []
    errors: list[str] = []
    bad_nodes = bad_ports = ports = 0
    for guid, node in fabric.nodes.items():
        header = f'"{node.description}"'
        data.append(f"Data Counters for {guid} {header}")
        node_errors: list[str] = []
        me = _port_guid(fabric, guid)
        for port, far, link in sorted(fabric.neighbours(guid), key=lambda x: x[0]):
            v = _values(rng)
            ports += 1
            items = " ".join(f"[{name} == {v[name]}]" for name in (*_DATA, *_EXTRA))
            peer = fabric.nodes[far.guid]
            link_line = (
                f"       Link info: {lids[guid]:6d} {port:3d}[  ] ==( {link.width}X 106.25 Gbps Active/  LinkUp)==>"
                f'  {_port_guid(fabric, far.guid)} {lids[far.guid]:6d} {far.port:4d}[  ] "{peer.description}" ( )'
            )
            data.append(f"   GUID {me} port {port}: {items}")
            data.append(link_line)
            bad = {name: v[name] for name in _ERRORS if v.get(name)}
            if bad:
                bad_ports += 1
                node_errors.append(
                    f"   GUID {me} port {port}: " + " ".join(f"[{k} == {n}]" for k, n in bad.items())
                )
                node_errors.append(link_line)
        if node_errors:
            bad_nodes += 1
            errors.append(f"Errors for {guid} {header}")
            errors.extend(node_errors)
    n = len(fabric.nodes)
    for out, bad_n, bad_p in ((data, 0, 0), (errors, bad_nodes, bad_ports)):
        out.append(f"## Summary: {n} nodes checked, {bad_n} bad nodes found")
        out.append(f"##          {ports} ports checked, {bad_p} ports have errors beyond threshold")
    return "\n".join(data) + "\n", "\n".join(errors) + "\n"


def _one_run(fabric: Fabric, run_tool: RunTool, db: Path) -> dict[str, float]:
    f: dict[str, float] = {}
    now = time.time()
    cpu = time.process_time()
    result = timed(
        "collect_fabric (parse both passes, merge)", lambda: collect_fabric(run_tool, fabric, now), f
    )
    rows = timed("snapshot_rows", lambda: snapshot_rows(result), f)
    assert len(rows) == 2 * len(fabric.links) and not result.unreachable, (len(rows), result.notes)
    with Store.open(db) as store:
        timed(
            "save_counter_snapshot (FULL, raw kept)",
            lambda: store.save_counter_snapshot(now, "bench", None, rows, raw_captures(result, "bench")),
            f,
        )
    f["text -> store, CPU"] = time.process_time() - cpu  # the machine is shared: wall time is noisy
    csv = "\n".join(",".join("" if v is None else str(v) for v in r) for r in rows)

    def read_csv() -> object:
        import pandas as pd

        return pd.read_csv(io.StringIO(csv), header=None, names=list(PORT_COUNTER_FIELDS))

    timed("baseline: pd.read_csv of the rows", read_csv, f)
    mem = sqlite3.connect(":memory:")
    mem.execute(f"CREATE TABLE t (snapshot_id, {', '.join(PORT_COUNTER_FIELDS)})")
    params = [(1, *r) for r in rows]
    sql = f"INSERT INTO t VALUES ({', '.join('?' * (len(PORT_COUNTER_FIELDS) + 1))})"
    timed("baseline: bare executemany", lambda: mem.executemany(sql, params), f)
    mem.close()
    return f


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--spec", default="superpod-64su")
    ap.add_argument("--runs", type=int, default=3, help="timed repetitions; the best is reported")
    ap.add_argument("--strict", action="store_true", help="exit 1 when the target is not met")
    args = ap.parse_args(argv)

    start = time.perf_counter()
    fabric = parse_ibnetdiscover(to_ibnetdiscover(generate(args.spec)).splitlines(), args.spec)
    counters_text, errors_text = ibqueryerrors_texts(fabric)
    counters_argv, errors_argv = ibqueryerrors_argv()
    outputs = {tuple(counters_argv): counters_text, tuple(errors_argv): errors_text}
    print(
        f"{args.spec}: {len(fabric.hcas())} HCAs, {len(fabric.nodes)} nodes, {2 * len(fabric.links)} cabled ports;"
        f" text {len(counters_text) / 1e6:.1f} + {len(errors_text) / 1e6:.2f} MB (built in {time.perf_counter() - start:.1f} s)"
    )

    def run_tool(argv: Sequence[str]) -> CommandResult:
        return CommandResult(tuple(argv), 1, outputs[tuple(argv)], "", 0.0)

    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="ibfab-bench-") as tmp:
        for i in range(args.runs):
            for k, v in _one_run(fabric, run_tool, Path(tmp) / f"run{i}.db").items():
                best[k] = min(best.get(k, v), v)
    total = best["collect_fabric (parse both passes, merge)"] + best["snapshot_rows"]
    total += best["save_counter_snapshot (FULL, raw kept)"]
    for label, seconds in best.items():
        if label != "text -> store, CPU":
            print(f"  {label:<42} {seconds:7.3f} s")
    print(
        f"  {'text -> store':<42} {total:7.3f} s   (target < {TARGET_S:g} s: {'met' if total < TARGET_S else 'NOT met'})"
    )
    print(f"  {'text -> store, CPU (process_time)':<42} {best['text -> store, CPU']:7.3f} s")
    print(
        f"  text -> store / pd.read_csv               {total / best['baseline: pd.read_csv of the rows']:7.1f} x"
    )
    print(
        f"  save / bare executemany                   "
        f"{best['save_counter_snapshot (FULL, raw kept)'] / best['baseline: bare executemany']:7.1f} x"
    )
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 1 if args.strict and total >= TARGET_S else 0


if __name__ == "__main__":
    sys.exit(main())
