"""A small deterministic store for the TUI tests: a generated fabric, synthetic counters at fixed times.

One uplink gets rising symbol errors (critical BER), one flaps (LinkDownedCounter moving every
sample), every other port stays clean; the clock starts at :data:`T0`.
"""

from __future__ import annotations

from pathlib import Path

from fabric.core.fields import COUNTER_NAMES
from fabric.store import Store
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Fabric, Link, NodeKind

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


def build_store(path: Path, snapshots: int = 16) -> tuple[Path, Fabric, Link, Link]:
    """(store path, fabric, the high-BER uplink, the flapping uplink)."""
    design = generate(SPEC, list(FAULTS))
    text = to_ibnetdiscover(design)
    fabric = parse_ibnetdiscover(text.splitlines(), f"generated {SPEC}")
    ups = uplinks(fabric)
    ber_bad, flappy = ups[0], ups[5]
    bad: dict[tuple[str, int], dict[str, int]] = {
        (ber_bad.a.guid, ber_bad.a.port): {"symbol_errors": 4000},
        (flappy.b.guid, flappy.b.port): {"link_downed": 1},
    }
    with Store.open(path) as store:
        topo = store.save_topology(
            fabric, text, "ibnetdiscover", f"generated {SPEC}", label="test", taken_at=T0 - 10
        )
        for i in range(snapshots):
            when = T0 + i * SNAPSHOT_EVERY_S
            store.save_counter_snapshot(when, "synthetic", topo, counter_rows(fabric, when, i, bad))
    return path, fabric, ber_bad, flappy


def topology_file(path: Path) -> Path:
    """The same fabric as ibnetdiscover text (for CLI commands that take --input)."""
    path.write_text(to_ibnetdiscover(generate(SPEC, list(FAULTS))))
    return path
