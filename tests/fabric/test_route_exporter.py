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
