"""Stores for the TUI's routes tests: :func:`tests.tui_data.build_store` of a fat tree with its
forwarding tables stored beside the topology (OpenSM's minhop, LID by LID, from
:func:`topology.generate_routes.minhop_tables`, as ``ibfab routes --save`` keeps them), clean or
with one fault planted by editing entries as an operator's mistake or a broken SM would.

fattree-small: 4 leaves x 8 hosts, 2 spines, 4 cables from each leaf to each spine.
"""

from __future__ import annotations

from pathlib import Path

from fabric.app.discovery.discover import Discovery
from fabric.store import Store
from tests.advise_fabrics import fabric_of, guid_of
from tests.tui_data import build_store
from topology.generate_routes import minhop_tables
from topology.lft import NO_ROUTE, Lfts

SPEC = "fattree-small"
CREDIT_LOOP = "credit_loop"
BLACK_HOLE = "black_hole"


def lid(d: Discovery, name: str) -> int:
    found = d.fabric.nodes[guid_of(d, name)].lid
    assert found is not None
    return found


def port_to(d: Discovery, switch: str, far: str) -> int:
    """The first port of ``switch`` cabled to ``far``."""
    g, f = guid_of(d, switch), guid_of(d, far)
    return min(p for p, end, _ in d.fabric.neighbours(g) if end.guid == f)


def route(t: Lfts, d: Discovery, switch: str, to: int, port: int) -> None:
    row = t.row(guid_of(d, switch))
    assert row is not None
    t.ports[row, to] = port


def plant_credit_loop(d: Discovery, t: Lfts) -> None:
    """LID a (on leaf-01) goes leaf-02 -> spine-01 -> leaf-03 -> spine-02 -> leaf-01, LID b (on
    leaf-03) goes leaf-04 -> spine-02 -> leaf-01 -> spine-01 -> leaf-03: the four channels
    between them wait on each other in a ring (tests/topology/test_route_checks.py's loop)."""
    a, b = lid(d, "cn0001 mlx5_0"), lid(d, "cn0017 mlx5_0")
    route(t, d, "leaf-02", a, port_to(d, "leaf-02", "spine-01"))
    route(t, d, "spine-01", a, port_to(d, "spine-01", "leaf-03"))
    route(t, d, "leaf-03", a, port_to(d, "leaf-03", "spine-02"))
    route(t, d, "spine-02", a, port_to(d, "spine-02", "leaf-01"))
    route(t, d, "leaf-04", b, port_to(d, "leaf-04", "spine-02"))
    route(t, d, "spine-02", b, port_to(d, "spine-02", "leaf-01"))
    route(t, d, "leaf-01", b, port_to(d, "leaf-01", "spine-01"))
    route(t, d, "spine-01", b, port_to(d, "spine-01", "leaf-03"))


def plant_black_hole(d: Discovery, t: Lfts) -> int:
    """leaf-02 loses its entry for cn0009 mlx5_0 (one of its own hosts): every other host's route
    to it ends there. The LID."""
    dst = lid(d, "cn0009 mlx5_0")
    route(t, d, "leaf-02", dst, NO_ROUTE)
    return dst


def routed_store(path: Path, fault: str | None = None, snapshots: int = 0) -> tuple[Path, Discovery, int]:
    """(store path, the fabric, the topology snapshot id the tables are stored with); ``snapshots``
    of counters as tests.tui_data writes them (0: no health, so no cable flagged)."""
    build_store(path, snapshots=snapshots, spec=SPEC, faults=())
    d = fabric_of(SPEC)
    clean = minhop_tables(d.fabric)
    t = Lfts(clean.source, clean.format, clean.switches, clean.ports.copy(), clean.switch_lids)
    if fault == CREDIT_LOOP:
        plant_credit_loop(d, t)
    elif fault == BLACK_HOLE:
        plant_black_hole(d, t)
    elif fault is not None:
        raise ValueError(fault)
    with Store.open(path) as store:
        sid = store.list_topologies()[-1].id
        store.save_routes(sid, t, None, source="minhop (generated)")
    return path, d, sid


def ring_store(path: Path, run: str, with_lanes: bool) -> tuple[Path, int]:
    """(store path, topology snapshot id) of the real ring of tests/data/sl2vl with ``run``'s
    (dfsssp or minhop) forwarding tables stored beside it, and its lanes (SL2VL tables, path
    records) when ``with_lanes``, as ``ibfab routes --save --sl2vl ... --path-records ...`` keeps them."""
    from tests.fabric.test_route_lanes_store import TOPO, files, lanes_of
    from topology.ibnetdiscover import read_ibnetdiscover
    from topology.lft import read_lfts

    with Store.open(path) as store:
        sid = store.save_topology(read_ibnetdiscover(TOPO), TOPO.read_text(), "ibnetdiscover", str(TOPO))
        store.save_routes(
            sid, read_lfts(files(run)[0]), source=run, lanes=lanes_of(run) if with_lanes else None
        )
    return path, sid
