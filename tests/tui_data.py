"""A small deterministic store for the TUI tests: a generated fabric, synthetic counters at fixed times.

One uplink gets rising symbol errors (critical BER), one flaps (LinkDownedCounter moving every
sample), every other port stays clean; the clock starts at :data:`T0`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fabric.app.sweeps.sweep import FORMAT
from fabric.core.fields import COUNTER_NAMES
from fabric.store import ProbeResultRow, RawCapture, Store
from topology.classify import classify
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Fabric, Link, NodeKind, PortRef

T0 = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC
SNAPSHOT_EVERY_S = 60.0
SPEC = "rail-small"
FAULTS = ("miswire:dgx-0002:1:2",)


def uplinks(fabric: Fabric) -> list[Link]:
    return [
        lk for lk in fabric.links if all(fabric.nodes[r.guid].kind is NodeKind.SWITCH for r in (lk.a, lk.b))
    ]


def counter_rows(
    fabric: Fabric, when: float, step: int, bad: dict[tuple[str, int], dict[str, int]]
) -> list[tuple[object, ...]]:
    """One row per cabled port (PORT_COUNTER_FIELDS order); ``bad`` ports grow by the given amounts."""
    rows: list[tuple[object, ...]] = []
    for lk in fabric.links:
        for end, peer in ((lk.a, lk.b), (lk.b, lk.a)):
            counters = dict.fromkeys(COUNTER_NAMES, 0)
            counters["xmit_data"] = counters["rcv_data"] = step * 10**11
            counters["xmit_pkts"] = counters["rcv_pkts"] = step * 10**8
            for name, per_step in bad.get((end.guid, end.port), {}).items():
                counters[name] = per_step * step
            rows.append(
                (
                    end.guid,
                    end.port,
                    None,
                    peer.guid,
                    peer.port,
                    True,
                    None,
                    when,
                    *(counters[n] for n in COUNTER_NAMES),
                )
            )
    return rows


def build_store(
    path: Path, snapshots: int = 16, spec: str = SPEC, faults: tuple[str, ...] = FAULTS, t0: float = T0
) -> tuple[Path, Fabric, Link, Link]:
    """(store path, fabric, the high-BER uplink, the flapping uplink); snapshots from ``t0`` on."""
    design = generate(spec, list(faults))
    text = to_ibnetdiscover(design)
    fabric = parse_ibnetdiscover(text.splitlines(), f"generated {spec}")
    ups = uplinks(fabric)
    ber_bad, flappy = ups[0], ups[5]
    bad: dict[tuple[str, int], dict[str, int]] = {
        (ber_bad.a.guid, ber_bad.a.port): {"symbol_errors": 4000},
        (flappy.b.guid, flappy.b.port): {"link_downed": 1},
    }
    with Store.open(path) as store:
        topo = store.save_topology(
            fabric, text, "ibnetdiscover", f"generated {spec}", label="test", taken_at=t0 - 10
        )
        for i in range(snapshots):
            when = t0 + i * SNAPSHOT_EVERY_S
            store.save_counter_snapshot(when, "synthetic", topo, counter_rows(fabric, when, i, bad))
    return path, fabric, ber_bad, flappy


def topology_file(path: Path) -> Path:
    """The same fabric as ibnetdiscover text (for CLI commands that take --input)."""
    path.write_text(to_ibnetdiscover(generate(SPEC, list(FAULTS))))
    return path


# -- a stored sweep in the format fabric.app.sweeps.sweep.save writes (each pair with its route) ------------
def _ep(fabric: Fabric, guid: str) -> dict[str, object]:
    host, _, device = fabric.nodes[guid].description.partition(" ")  # type: ignore[index]
    return {"host": host, "device": device, "guid": guid, "leaf": "", "rail": 0}


def _hca_link(fabric: Fabric, leaf_guid: str) -> Link:
    return next(
        lk
        for lk in fabric.links_of(leaf_guid)  # type: ignore[arg-type]
        if fabric.nodes[lk.other(leaf_guid).guid].kind.value == "hca"  # type: ignore[arg-type]
    )


def _path(lk: Link) -> list[object]:
    return [lk.a.guid, lk.a.port, lk.b.guid, lk.b.port, lk.width, lk.speed]


def save_sweep(path: Path, fabric: Fabric, slow: Link, fast: Link) -> int:
    """Three pairs: two cross ``slow`` (one at 40 % of line rate, one re-tested at 30 % after a first
    95 %), one crosses ``fast`` at 95 %."""
    records: list[dict[str, Any]] = []
    for uplink, attempts in ((slow, (160.0,)), (slow, (380.0, 120.0)), (fast, (380.0,))):
        leaf = next(e.guid for e in (uplink.a, uplink.b) if "leaf" in fabric.nodes[e.guid].description)
        down = _hca_link(fabric, leaf)
        client = down.other(leaf).guid
        for attempt, gbps in enumerate(attempts):
            records.append(
                {
                    "client": _ep(fabric, client),
                    "server": {
                        "host": f"peer{len(records)}",
                        "device": "mlx5_0",
                        "guid": f"0xpeer{len(records)}",
                        "leaf": "",
                        "rail": 0,
                    },
                    "round": 1,
                    "attempt": attempt,
                    "backend": "test",
                    "gbps": gbps,
                    "line_rate_gbps": 400.0,
                    # stored as the sweep judges it (probes.expect): under 93 % of the best is slow
                    "ok": gbps >= 0.93 * 380.0,
                    "error": None if gbps >= 0.93 * 380.0 else f"slow: {gbps:g} Gb/s, under 93% of 380 Gb/s",
                    "path": [_path(down), _path(uplink)],
                }
            )
    records[2]["server"] = records[1]["server"]  # the re-test of the same pair
    doc = {"format": FORMAT, "pattern": "rail-pairs", "backend": "test", "names": {}, "results": records}
    with Store.open(path) as store:
        sid = store.save_sweep(T0, "rail-pairs", "test: generated", finished=T0 + 30)
        cap = store.save_capture(
            RawCapture("probe", "ib_write_bw", json.dumps(doc), T0, "test", (), "sweep/1")
        )
        store.add_probe_results(
            sid,
            [
                ProbeResultRow(str(r["client"]["host"]), "", "x", "", r["gbps"], 400.0, True, None, cap)
                for r in records
            ],
        )
    return sid


# -- changes and runs as fabric.app.isolation.isolate and the daemon record them --------------------------
def record_operations(path: Path, fabric: Fabric, isolated: Link, at: float = T0 + 120) -> int:
    """An isolation of ``isolated``'s switch end that succeeded (what ``apply_plan`` writes after
    ``ibportstate`` exits 0, which needs a fabric), one that failed, a counters schedule with one
    good and one failed run. Returns the open isolation's audit id."""
    switch = next(e for e in (isolated.a, isolated.b) if fabric.nodes[e.guid].kind is NodeKind.SWITCH)
    far = isolated.other(switch.guid)
    names = {g: c.name for g, c in classify(fabric).nodes.items()}
    target = f"{switch} {names[switch.guid]}:{switch.port} <-> {names[far.guid]}:{far.port}"
    command = f"ibportstate -D 0,1 {switch.port} disable"
    with Store.open(path) as store:
        argv = command.split()
        opened = store.audit(
            "operator", "isolate", target, command, "ok (exit 0)", when=at,
            argv=argv, ports=(switch,), source=("local", ""),
        )  # fmt: skip
        failed = target.replace(f":{switch.port} ", ":99 ")
        store.audit(
            "operator", "isolate", failed, command, "failed: ibportstate: exit 255", when=at + 5,
            argv=argv, ports=(PortRef(switch.guid, 99),), source=("local", ""),
        )  # fmt: skip
        sid = store.add_schedule("counters-1m", "counters", interval_seconds=60)
        run = store.start_run(sid, T0)
        store.finish_run(run, True, None, T0 + 2)
        run = store.start_run(sid, T0 + 60)
        store.finish_run(run, False, "perfquery: exit 1 on 0x0c42a10300a00003", T0 + 61)
    return opened
