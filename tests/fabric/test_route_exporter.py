"""The exporter's route families, from tables stored with the topology: routes per cable, the
credit-loop channels (0 on clean tables, the ring's on a planted loop) and the findings."""

from __future__ import annotations

import re
from pathlib import Path

from fabric.app.exports.metrics import read_view
from fabric.app.session import open_session
from fabric.store import PortCounterRow, Store
from tests.topology.test_route_checks import lid, port_to, route, tables
from topology.lft import Lfts


def _serve(tmp_path: Path, t: Lfts | None) -> str:
    d, _ = tables()
    db = tmp_path / "ibfab.db"
    link = d.fabric.links[0]
    with Store.open(db) as store:
        topology_id = store.save_topology(d.fabric, "", tool="ibnetdiscover", source="test")
        store.save_counter_snapshot(
            1000.0,
            "test",
            topology_id,
            [PortCounterRow(1000.0, link.a.guid, link.a.port, counters={"symbol_errors": 0})],
        )
        if t is not None:
            store.save_routes(topology_id, t)
    view = read_view(open_session(db=db))
    assert not view.status.errors, view.status.message
    return view.text.decode()


def _value(text: str, name: str) -> float:
    m = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert m, name
    return float(m.group(1))


def test_no_tables_stored_no_route_series(tmp_path: Path) -> None:
    assert "ibfab_route_" not in _serve(tmp_path, None)


def test_clean_tables_serve_routes_per_cable_and_no_loop(tmp_path: Path) -> None:
    _, t = tables()
    text = _serve(tmp_path, t)
    assert _value(text, "ibfab_route_credit_loop_channels") == 0.0
    assert _value(text, "ibfab_route_errors") == 0.0
    assert "ibfab_route_findings{" not in text
    per_cable = re.findall(
        r'^ibfab_route_link_routes\{.*direction="leaf -> spine".*\} (\S+)$', text, re.MULTILINE
    )
    assert len(per_cable) == 32 and {float(x) for x in per_cable} == {24.0}
    assert 'switch="leaf-01"' in text and 'remote_name="spine-01"' in text


def test_a_planted_credit_loop_is_served(tmp_path: Path) -> None:
    d, t = tables()
    a, b = lid(d, "cn0001 mlx5_0"), lid(d, "cn0017 mlx5_0")
    for sw, far, x in (
        ("leaf-02", "spine-01", a),
        ("spine-01", "leaf-03", a),
        ("leaf-03", "spine-02", a),
        ("spine-02", "leaf-01", a),
        ("leaf-04", "spine-02", b),
        ("spine-02", "leaf-01", b),
        ("leaf-01", "spine-01", b),
        ("spine-01", "leaf-03", b),
    ):
        route(t, d, sw, x, port_to(d, sw, far)[0])
    text = _serve(tmp_path, t)
    assert _value(text, "ibfab_route_credit_loop_channels") == 4.0
    assert _value(text, "ibfab_route_errors") == 1.0
    assert 'ibfab_route_findings{kind="credit_loop",severity="error"} 1.0' in text


# -- lanes stored with the tables: credit loops per VL (the real ring of tests/data/sl2vl) -----
def _serve_ring(tmp_path: Path, run: str, with_lanes: bool) -> str:
    from tests.fabric.test_route_lanes_store import TOPO, files, lanes_of
    from topology.ibnetdiscover import read_ibnetdiscover
    from topology.lft import read_lfts

    fabric = read_ibnetdiscover(TOPO)
    db = tmp_path / "ibfab.db"
    link = fabric.links[0]
    with Store.open(db) as store:
        topology_id = store.save_topology(fabric, "", tool="ibnetdiscover", source="test")
        store.save_counter_snapshot(
            1000.0,
            "test",
            topology_id,
            [PortCounterRow(1000.0, link.a.guid, link.a.port, counters={"symbol_errors": 0})],
        )
        store.save_routes(topology_id, read_lfts(files(run)[0]), lanes=lanes_of(run) if with_lanes else None)
    view = read_view(open_session(db=db))
    assert not view.status.errors, view.status.message
    return view.text.decode()


def _lanes_known(text: str) -> float:
    # one series, no label: its reason (a sentence naming the snapshot) would be a new series
    # with every snapshot stored
    m = re.search(r"^ibfab_route_credit_loop_lanes_known (\S+)$", text, re.MULTILINE)
    assert m, text
    return float(m.group(1))


def test_a_ring_stored_with_dfsssp_lanes_serves_no_credit_loop_per_vl(tmp_path: Path) -> None:
    text = _serve_ring(tmp_path, "dfsssp", with_lanes=True)
    assert _value(text, "ibfab_route_credit_loop_channels") == 0.0
    assert _value(text, "ibfab_route_errors") == 0.0
    assert _lanes_known(text) == 1.0


def test_a_ring_stored_with_minhop_lanes_serves_the_loop_on_vl0(tmp_path: Path) -> None:
    text = _serve_ring(tmp_path, "minhop", with_lanes=True)
    assert _value(text, "ibfab_route_credit_loop_channels") == 10.0  # (channel, VL 0) nodes
    assert 'ibfab_route_findings{kind="credit_loop",severity="error"} 1.0' in text
    assert _lanes_known(text) == 1.0


def test_a_ring_stored_without_lanes_serves_the_one_lane_loop_and_why(tmp_path: Path) -> None:
    text = _serve_ring(tmp_path, "dfsssp", with_lanes=False)
    assert _value(text, "ibfab_route_credit_loop_channels") == 10.0
    assert _value(text, "ibfab_route_errors") == 1.0
    assert _lanes_known(text) == 0.0
