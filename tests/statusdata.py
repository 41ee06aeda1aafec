"""Test helper: stores for ``ibfab status`` without a lab: a generated fabric's topology, clean or
faulty counter readings, and a sweep whose slow pairs cross one cable (stored as ``ibfab sweep run``
stores one, each pair with its route), so probes.localize ranks it again on ``show``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fabric.app.sweeps.sweep import FORMAT
from fabric.store import ProbeResultRow, RawCapture, Store
from tests.tui_data import counter_rows
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Fabric, Guid, Link, NodeKind


def clean_store(path: Path, spec: str, t0: float, readings: int = 3, faults: tuple[str, ...] = ()) -> Fabric:
    """``spec`` (with ``faults``) stored, then ``readings`` clean counter readings a minute apart."""
    text = to_ibnetdiscover(generate(spec, list(faults)))
    fabric = parse_ibnetdiscover(text.splitlines(), f"generated {spec}")
    with Store.open(path) as store:
        topo = store.save_topology(fabric, text, "ibnetdiscover", f"generated {spec}", taken_at=t0 - 10)
        for i in range(readings):
            when = t0 + i * 60.0
            store.save_counter_snapshot(when, "synthetic", topo, counter_rows(fabric, when, i, {}))
    return fabric


def host_cables(fabric: Fabric, leaf: Guid) -> list[Link]:
    return [lk for lk in fabric.links_of(leaf) if fabric.nodes[lk.other(leaf).guid].kind is NodeKind.HCA]


def _end(fabric: Fabric, guid: Guid) -> dict[str, Any]:
    host, _, device = fabric.nodes[guid].description.partition(" ")
    return {"host": host, "device": device, "guid": guid, "leaf": "", "rail": 0}


def _path(lk: Link) -> list[object]:
    return [lk.a.guid, lk.a.port, lk.b.guid, lk.b.port, lk.width, lk.speed]


def save_slow_sweep(path: Path, fabric: Fabric, uplink: Link, slow_pairs: int, when: float) -> int:
    """A sweep whose ``slow_pairs`` pairs each start at another host of the uplink's leaf and cross
    it (their own host cable, then ``uplink``), all slow; one slow pair alone ties the uplink with
    that pair's host cable. Returns the sweep id."""
    leaf = next(e.guid for e in (uplink.a, uplink.b) if "leaf" in (fabric.nodes[e.guid].description or ""))
    records: list[dict[str, Any]] = []
    for i, down in enumerate(host_cables(fabric, leaf)[:slow_pairs]):
        client = down.other(leaf).guid
        records.append(
            {
                "client": _end(fabric, client),
                "server": {
                    "host": f"far{i}",
                    "device": "mlx5_0",
                    "guid": f"0xfa{i:014x}",
                    "leaf": "",
                    "rail": 0,
                },
                "round": 1,
                "attempt": 0,
                "backend": "test",
                "gbps": 60.0,
                "line_rate_gbps": 200.0,
                "expected_gbps": 200.0,
                "ok": False,
                "error": "slow: 60 Gb/s, under 93% of 97% of the 200 Gb/s its route should give",
                "path": [_path(down), _path(uplink)],
            }
        )
    doc = {"format": FORMAT, "pattern": "rail-pairs", "backend": "test", "names": {}, "results": records}
    with Store.open(path) as store:
        sid = store.save_sweep(when, "rail-pairs", "test: generated", finished=when + 30)
        cap = store.save_capture(
            RawCapture("probe", "ib_write_bw", json.dumps(doc), when, "test", (), "sweep/1")
        )
        store.add_probe_results(
            sid,
            [
                ProbeResultRow(
                    str(r["client"]["host"]), "", "x", "", r["gbps"], 200.0, False, r["error"], cap
                )
                for r in records
            ],
        )
    return sid
