"""``ibfab recommend`` on lab fabrics: a clean fabric gets no repair, each planted wiring fault
exactly its own, and the routing advice names the lab's real sminfo and OpenSM log as evidence."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.lab import simulator as lab

pytestmark = pytest.mark.lab
REPAIRS = {
    "isolate_port",
    "drain_node",
    "replace_cable",
    "swap_cables",
    "connect_cable",
    "move_cables",
    "set_node_description",
}


@pytest.fixture
def name(request: pytest.FixtureRequest) -> Iterator[str]:
    spec, faults = request.param
    lab.up(spec, faults, name="rec")
    try:
        yield "rec"
    finally:
        lab.down("rec")


def recommend(name: str, tmp_path: Path) -> dict[str, object]:
    res = CliRunner().invoke(main, ["recommend", "--lab", name, "--db", str(tmp_path / "x.db"), "--json"])
    assert res.exit_code == 0, res.output
    out: dict[str, object] = json.loads(res.stdout)
    return out


def repairs(out: dict[str, object]) -> list[tuple[str, str]]:
    actions = out["actions"]
    assert isinstance(actions, list)
    return [(a["kind"], a["target"]) for a in actions if a["kind"] in REPAIRS]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (("rail-small", ()), []),
        (("fattree-small", ()), []),
        (
            ("rail-small", ("degraded-width:leaf-su01-r0:1",)),
            [("replace_cable", "leaf-su01-r0:1 <-> dgx-0001 mlx5_0:1")],
        ),
        (
            ("rail-small", ("degraded-speed:leaf-su02-r1:5",)),
            [("replace_cable", "leaf-su02-r1:5 <-> spine-01:10")],
        ),
        (("rail-small", ("miswire:dgx-0002:1:2",)), [("swap_cables", "dgx-0002")]),
        (
            ("rail-small", ("missing-link:leaf-su01-r0",)),
            [("connect_cable", "leaf-su01-r0:5 <-> spine-01:1")],
        ),
        (
            ("rail-small", ("missing-hca:dgx-0002:3",)),
            [("connect_cable", "leaf-su01-r3:2 <-> dgx-0002 mlx5_3:1")],
        ),
    ],
    indirect=["name"],
    ids=[
        "clean-rail",
        "clean-fattree",
        "degraded-width",
        "degraded-speed",
        "miswire",
        "missing-link",
        "missing-hca",
    ],
)
def test_each_planted_fault_gets_exactly_its_repair(
    name: str, expected: list[tuple[str, str]], tmp_path: Path
) -> None:
    out = recommend(name, tmp_path)
    assert repairs(out) == expected


@pytest.mark.parametrize("name", [("rail-small", ())], indirect=True)
def test_routing_advice_names_the_labs_sm_evidence(name: str, tmp_path: Path) -> None:
    routing = recommend(name, tmp_path)["routing"]
    assert isinstance(routing, dict)
    facts = "\n".join(routing["facts"])
    assert f"sminfo (lab {name}): master SM port 0x" in facts
    log = lab.opensm_log(name)
    assert f"OpenSM log {log}: OpenSM 3." in facts and "(upstream)" in facts
    assert f"OpenSM log {log}: minhop (a static engine) configured the switches last" in facts
    assert routing["adaptive_routing"]["state"] == "off" and routing["unknowns"] == []
    actions = {a["target"]: a for a in routing["actions"]}
    assert actions["NCCL_IB_ADAPTIVE_ROUTING"]["commands"][0]["text"] == "export NCCL_IB_ADAPTIVE_ROUTING=0"
    assert any("minhop (a static engine)" in e for e in actions["NCCL_IB_ADAPTIVE_ROUTING"]["evidence"])
    engine = actions["subnet manager"]
    assert engine["kind"] == "set_routing_engine"
    texts = [c["text"] for c in engine["commands"]]
    assert texts[0] == "routing_engine ftree  # in opensm.conf"
    assert texts[-1].startswith("systemctl restart opensm")
