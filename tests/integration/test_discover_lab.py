"""Discovery through the real ibnetdiscover against lab fabrics: exactly the planted anomalies.

Each case brings up an ibsim fabric with OpenSM (about a second), runs ``ibfab discover --lab``
and compares what discovery reports with what the generator planted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.app.discovery.discover import Discovery, discover
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.cli.main import main
from fabric.lab import simulator as lab
from topology.generate import Design

pytestmark = pytest.mark.lab

CASES: list[tuple[str, tuple[str, ...]]] = [
    ("rail-small", ()),
    ("fattree-small", ()),
    ("rail-3tier", ()),
    ("rail-small", ("miswire:dgx-0002:1:2",)),
    ("rail-small", ("missing-link:leaf-su01-r2",)),
    ("rail-small", ("missing-hca:dgx-0003:5",)),
    ("rail-small", ("degraded-width:leaf-su01-r0:1",)),
    ("rail-small", ("degraded-speed:leaf-su02-r1:5",)),
    ("fattree-small", ("missing-link:leaf-02",)),
    ("fattree-small", ("degraded-width:leaf-01:1",)),
    ("rail-3tier", ("missing-link:spine-su01-01",)),
    ("leafspine:leaves=4,hosts=2,directors=2,pods=2", ()),
    ("leafspine:leaves=4,hosts=2,directors=2,pods=2", ("missing-link:leaf-03",)),
    (
        "rail-small",
        (
            "miswire:dgx-0002:1:2",
            "missing-link:leaf-su01-r2",
            "missing-hca:dgx-0003:5",
            "degraded-width:leaf-su01-r0:1",
            "degraded-speed:leaf-su02-r1:5",
        ),
    ),
]


@pytest.fixture
def lab_fabric(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Design]]:
    spec, faults = request.param
    name = "disc"
    lab.up(spec, faults, name=name)
    try:
        yield name, lab.design_of(name)
    finally:
        lab.down(name)


def _matches(d: Discovery, design: Design) -> None:
    found = [a for a in d.anomalies if a.kind != "unnamed_hca"]
    assert not [a for a in d.anomalies if a.kind == "unnamed_hca"]
    # Every planted fault is reported under its kind, touching the same nodes ...
    for planted in design.planted:
        hits = [a for a in found if a.kind == planted.kind and set(a.nodes) & set(planted.guids)]
        assert hits, (
            f"planted {planted.kind} ({planted.fault}) not reported; found {[a.message for a in found]}"
        )
    # ... and every report is explained by a planted fault: nothing else.
    for a in found:
        assert any(p.kind == a.kind and set(a.nodes) & set(p.guids) for p in design.planted), a.message


@pytest.mark.parametrize(
    "lab_fabric",
    CASES,
    indirect=True,
    ids=[
        spec + ("+" + "+".join(f.split(":")[0] for f in faults) if faults else "-clean")
        for spec, faults in CASES
    ],
)
def test_discovery_finds_exactly_the_planted_anomalies(lab_fabric: tuple[str, Design]) -> None:
    name, design = lab_fabric
    d = discover(Session(Source.lab(name)))
    present = design.present_hcas()
    assert len(d.fabric.switches()) == len(design.switches)
    assert len(d.fabric.hcas()) == len(present)
    assert len(d.fabric.links) == len(design.built)
    expected_tiers = {1: 0, 2: 0, 3: 0}
    for s in design.switches:
        expected_tiers[{"leaf": 1, "spine": 2, "core": 3}[s.role]] += 1
    assert d.classification.tier_counts() == {t: n for t, n in expected_tiers.items() if n}
    if design.spec.kind == "rail":
        assert d.classification.rail_optimized
        assert len(d.classification.rail_indexes) == design.spec.hcas
        assert len(d.classification.groups) == design.spec.units
    else:
        assert not d.classification.rail_optimized
    # ibsim reports each board's system image GUID: the directors are found as chassis.
    assert len(d.chassis) == design.spec.directors
    if design.spec.directors:
        assert len(d.classification.pods) == design.spec.pods
    _matches(d, design)


@pytest.mark.parametrize("lab_fabric", [("rail-small", ("miswire:dgx-0002:1:2",))], indirect=True)
def test_cli_json_schema_from_lab(lab_fabric: tuple[str, Design]) -> None:
    name, design = lab_fabric
    res = CliRunner().invoke(main, ["discover", "--lab", name, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert set(out) == {"nodes", "links", "hosts", "anomalies", "chassis", "pods", "summary"}
    node = next(n for n in out["nodes"] if n["name"] == "dgx-0001 mlx5_3")
    assert {k: node[k] for k in ("kind", "tier", "host", "rail", "group")} == {
        "kind": "hca",
        "tier": 0,
        "host": "dgx-0001",
        "rail": 3,
        "group": 0,
    }
    leaf = next(n for n in out["nodes"] if n["name"] == "leaf-su02-r5")
    assert (leaf["kind"], leaf["tier"], leaf["rail"], leaf["group"]) == ("switch", 1, 5, 1)
    link = out["links"][0]
    assert set(link) >= {"a", "b", "width", "speed", "gbps"} and set(link["a"]) >= {"guid", "port"}
    # ibsim 0.10 has no NDR, so the lab's NDR design trains at HDR (documented in the README).
    assert {(lk["width"], lk["speed"], lk["gbps"]) for lk in out["links"]} == {(4, "HDR", 200.0)}
    (mis,) = out["anomalies"]
    assert mis["kind"] == "rail_miswire" and mis["severity"] == "error"
    assert len(mis["ports"]) == 2 and all(set(p) == {"guid", "port"} for p in mis["ports"])
    s = out["summary"]
    assert (s["switches"], s["hcas"], s["hosts"], s["links"], s["rails"], s["groups"]) == (
        len(design.switches),
        len(design.hcas),
        8,
        len(design.built),
        8,
        2,
    )


def test_discover_against_a_lab_that_is_not_running() -> None:
    res = CliRunner().invoke(main, ["discover", "--lab", "nosuchlab"])
    assert res.exit_code != 0
    assert "nosuchlab" in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_save_then_diff_after_link_down(tmp_path: Path) -> None:
    """Snapshots stored with --save; a cable taken down in the simulator shows in topology diff."""
    db = str(tmp_path / "s.db")
    lab.up("fattree-small", (), name="diff")
    try:
        r1 = CliRunner().invoke(
            main, ["discover", "--lab", "diff", "--save", "--db", db, "--label", "before"]
        )
        assert r1.exit_code == 0, r1.output
        lab.link_down("diff", "leaf-01", 2)
        r2 = CliRunner().invoke(main, ["discover", "--lab", "diff", "--save", "--db", db, "--label", "after"])
        assert r2.exit_code == 0, r2.output
    finally:
        lab.down("diff")
    res = CliRunner().invoke(main, ["topology", "diff", "before", "after", "--db", db, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert len(out["links_removed"]) == 1 and not out["links_added"] and not out["links_changed"]
    gone = out["links_removed"][0]
    assert {(gone["a"]["name"], gone["a"]["port"]), (gone["b"]["name"], gone["b"]["port"])} >= {
        ("leaf-01", 2)
    }
    assert [n["name"] for n in out["nodes_removed"]] == [gone["b"]["name"]] or [
        n["name"] for n in out["nodes_removed"]
    ] == [gone["a"]["name"]]
