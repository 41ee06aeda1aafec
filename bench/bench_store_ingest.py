"""Time one counter snapshot of a 16,384-HCA fabric from tool text to the store.

    .venv/bin/python bench/bench_store_ingest.py [--hcas 16384] [--form perfquery|ibqueryerrors|both]

Synthesizes what the collector gets back for one fabric-wide read of about 50,000 ports
(16,384 single-port HCAs; 512 leaves x 48, 512 spines x 16, 256 cores x 4 cabled ports):

* ``perfquery``: one ``perfquery -x -l <lid> <ports>`` text per node, a block per port laid out
  exactly like tests/data/realdata/perfquery/*-perfquery-x-*.txt (header with CapMask, dotted fields);
* ``ibqueryerrors``: the fabric-wide ``ibqueryerrors --counters`` text (one ``Data Counters for``
  record per node, one ``GUID .. port N: [PortXmitData == ..] ..`` line per port).

Then times: text -> PortSample (fabric.counters.parse) -> store rows -> Store.save_counter_snapshot
(raw text kept: one capture per tool run, i.e. per node for perfquery). Baselines measured in the
same run: a plain split-lines pass over the same text, and a bare executemany of the same rows into
an in-memory table without indexes. Also: the same save with synchronous=NORMAL (the store uses
FULL), a load_counters of the snapshot, and peak RSS.
"""

from __future__ import annotations

import argparse
import random
import resource
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fabric.core.fields import COUNTER_NAMES, COUNTERS
from fabric.counters.parse import parse_ibqueryerrors, parse_perfquery
from fabric.counters.samples import PortSample
from fabric.store import PORT_COUNTER_FIELDS, RawCapture, Store

T = TypeVar("T")
# (name, how many, cabled ports each)
TIERS = (("leaf", 512, 48), ("spine", 512, 16), ("core", 256, 4))
_EXTENDED_ORDER = (
    "PortXmitData",
    "PortRcvData",
    "PortXmitPkts",
    "PortRcvPkts",
    "PortUnicastXmitPkts",
    "PortUnicastRcvPkts",
    "PortMulticastXmitPkts",
    "PortMulticastRcvPkts",
)
_ERROR_ORDER = tuple(
    pma
    for name, (_, pma) in COUNTERS.items()
    if name not in ("xmit_data", "rcv_data", "xmit_pkts", "rcv_pkts")
)


class Node:
    __slots__ = ("description", "guid", "lid", "ports")

    def __init__(self, guid: str, lid: int, description: str, ports: int) -> None:
        self.guid, self.lid, self.description, self.ports = guid, lid, description, ports


def fabric_nodes(hcas: int) -> list[Node]:
    nodes = []
    lid = 1
    for tier, count, ports in TIERS:
        for i in range(count):
            nodes.append(
                Node(f"0x{0x0C42A10300000000 + lid:016x}", lid, f"MF0;{tier}-{i:04d}:MQM9790/U1", ports)
            )
            lid += 1
    for h in range(hcas):
        nodes.append(Node(f"0x{0x946DAE0300000000 + lid:016x}", lid, f"gpu{h // 8:05d} mlx5_{h % 8}", 1))
        lid += 1
    return nodes


def _values(rng: random.Random) -> dict[str, int]:
    data = rng.randrange(1 << 40, 1 << 50)
    out = {
        "PortXmitData": data,
        "PortRcvData": data + rng.randrange(1 << 20),
        "PortXmitPkts": data // 1000,
        "PortRcvPkts": data // 1001,
        "PortUnicastXmitPkts": data // 1000 - 17,
        "PortUnicastRcvPkts": data // 1001 - 13,
        "PortMulticastXmitPkts": 17,
        "PortMulticastRcvPkts": 13,
    }
    for pma in _ERROR_ORDER:
        out[pma] = 0 if rng.random() < 0.97 else rng.randrange(1, 16)
    out["PortXmitWait"] = rng.randrange(1 << 24)
    return out


def perfquery_text(node: Node, rng: random.Random) -> str:
    """What ``perfquery -x -l <lid> 1-N`` prints: one block per port (see tests/data/realdata/perfquery)."""
    lines = []
    for port in range(1, node.ports + 1):
        v = _values(rng)
        lines.append(
            f"# Port extended counters: Lid {node.lid} port {port} (CapMask: 0x5300 CapMask2: 0x0000002)"
        )
        lines.append(f"{'PortSelect:':.<33}{port}")
        lines.append(f"{'CounterSelect:':.<33}0x0000")
        lines.extend(f"{name + ':':.<33}{v[name]}" for name in _EXTENDED_ORDER)
        lines.append(f"{'CounterSelect2:':.<33}0x00000000")
        lines.extend(f"{name + ':':.<33}{v[name]}" for name in _ERROR_ORDER)
        lines.append(f"{'QP1Dropped:':.<33}0")
    return "\n".join(lines) + "\n"


def ibqueryerrors_text(nodes: list[Node], rng: random.Random) -> str:
    """What ``ibqueryerrors --counters`` prints for the whole fabric."""
    lines = []
    for node in nodes:
        lines.append(f'Data Counters for {node.guid} "{node.description}"')
        for port in range(1, node.ports + 1):
            v = _values(rng)
            items = " ".join(f"[{name} == {v[name]}]" for name in _EXTENDED_ORDER[:4])
            lines.append(f"   GUID {node.guid} port {port}: {items}")
    lines.append(f"## Summary: {len(nodes)} nodes checked, 0 bad nodes found")
    lines.append(
        f"##          {sum(n.ports for n in nodes)} ports checked, 0 ports have errors beyond threshold"
    )
    return "\n".join(lines) + "\n"


def rows_from_samples(samples: list[PortSample], now: float) -> list[tuple[object, ...]]:
    return [
        (s.guid, s.port, s.lid, None, None, True, None, now, *[s.values.get(n) for n in COUNTER_NAMES])
        for s in samples
    ]


def timed(label: str, fn: Callable[[], T], figures: dict[str, float]) -> T:
    start = time.perf_counter()
    out = fn()
    figures[label] = time.perf_counter() - start
    return out


def run_form(form: str, nodes: list[Node], workdir: Path) -> None:
    rng = random.Random(1)
    now = time.time()
    f: dict[str, float] = {}
    if form == "perfquery":
        texts = [perfquery_text(n, rng) for n in nodes]
        size = sum(len(t) for t in texts)

        def parse() -> list[PortSample]:
            out: list[PortSample] = []
            for node, text in zip(nodes, texts, strict=True):
                out.extend(parse_perfquery(text, f"perfquery -x -l {node.lid}", guid=node.guid))
            return out

        captures = [
            RawCapture(
                "counters", "perfquery", t, now, "mgmt1", ("perfquery", "-x", "-l", str(n.lid)), "perfquery/1"
            )
            for n, t in zip(nodes, texts, strict=True)
        ]
        split = lambda: sum(len(t.splitlines()) for t in texts)  # noqa: E731
    else:
        text = ibqueryerrors_text(nodes, rng)
        size = len(text)
        texts = [text]

        def parse() -> list[PortSample]:
            return list(parse_ibqueryerrors(text, "ibqueryerrors --counters").samples)

        captures = [
            RawCapture(
                "counters", "ibqueryerrors", text, now, "mgmt1", ("ibqueryerrors", "--counters"), "iqe/1"
            )
        ]
        split = lambda: len(text.splitlines())  # noqa: E731

    lines = timed("baseline: split lines", split, f)
    samples = timed("parse", parse, f)
    rows = timed("samples -> rows", lambda: rows_from_samples(samples, now), f)
    assert len(rows) == sum(n.ports for n in nodes), (len(rows), sum(n.ports for n in nodes))

    with Store.open(workdir / f"{form}.db") as store:
        sid = timed(
            "store (FULL)", lambda: store.save_counter_snapshot(now, "bench", None, rows, captures), f
        )
        store._db.execute("PRAGMA synchronous = NORMAL")
        timed(
            "store (NORMAL)", lambda: store.save_counter_snapshot(now + 1, "bench", None, rows, captures), f
        )
        timed("store, rows only", lambda: store.save_counter_snapshot(now + 2, "bench", None, rows), f)
        frame = timed("load_counters one snapshot", lambda: store.load_counters(snapshots=[sid]), f)
        assert len(frame) == len(rows)
        db_size = (workdir / f"{form}.db").stat().st_size + (workdir / f"{form}.db-wal").stat().st_size

    mem = sqlite3.connect(":memory:")
    mem.execute(f"CREATE TABLE t (snapshot_id, {', '.join(PORT_COUNTER_FIELDS)})")
    params = [(1, *r) for r in rows]
    timed(
        "baseline: bare executemany",
        lambda: mem.executemany(
            f"INSERT INTO t VALUES ({', '.join('?' * (len(PORT_COUNTER_FIELDS) + 1))})", params
        ),
        f,
    )
    total = f["parse"] + f["samples -> rows"] + f["store (FULL)"]
    print(f"== {form}: {len(nodes)} nodes, {len(rows)} ports, {size / 1e6:.1f} MB text, {lines} lines")
    for label, seconds in f.items():
        print(f"  {label:<30} {seconds:7.3f} s")
    print(
        f"  {'text -> rows -> store':<30} {total:7.3f} s   (target < 2 s: {'met' if total < 2 else 'NOT met'})"
    )
    print(f"  parse / split-lines            {f['parse'] / f['baseline: split lines']:7.1f} x")
    print(f"  store / bare executemany       {f['store (FULL)'] / f['baseline: bare executemany']:7.1f} x")
    print(
        f"  store rows only / bare         {f['store, rows only'] / f['baseline: bare executemany']:7.1f} x"
    )
    print(f"  store FULL / NORMAL            {f['store (FULL)'] / f['store (NORMAL)']:7.2f} x")
    print(f"  database after 3 snapshots     {db_size / 1e6:7.1f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hcas", type=int, default=16384)
    ap.add_argument("--form", choices=("perfquery", "ibqueryerrors", "both"), default="both")
    args = ap.parse_args()
    nodes = fabric_nodes(args.hcas)
    with tempfile.TemporaryDirectory(prefix="ibfab-bench-") as tmp:
        for form in ("ibqueryerrors", "perfquery") if args.form == "both" else (args.form,):
            run_form(form, nodes, Path(tmp))
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak RSS {peak_kib / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
