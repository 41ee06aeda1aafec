"""The cable plan check on the lab (ibsim + OpenSM + the real ibnetdiscover): a plan exported from
a clean lab, the lab brought up again with faults planted, and `ibfab topology check` finds
exactly them; the clean lab against its own plan reports nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.cli.plan import EXIT_DIFFERS
from fabric.lab import simulator as lab
from topology.generate import Design
from topology.ibnetdiscover import parse_ibnetdiscover_text
from topology.model import PortRef
from topology.plancheck import Verdict

pytestmark = pytest.mark.lab

VERDICT_OF = {"rail_miswire": "miswired", "missing_link": "missing", "degraded_link": "below_plan"}
CASES: list[tuple[str, tuple[str, ...]]] = [
    ("rail-small", ("miswire:dgx-0002:1:2",)),
    ("fattree-small", ("missing-link:leaf-02", "degraded-width:leaf-01:1")),
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
NAME = "plan"


def invoke(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout


def export_clean_plan(spec: str, path: Path) -> dict[str, PortRef]:
    """Bring up the clean lab, export its plan; returns the clean fabric's port per plan end."""
    lab.up(spec, (), name=NAME)
    try:
        code, _ = invoke("export", "plan", "--lab", NAME, "-o", str(path))
        assert code == 0
        code, out = invoke("topology", "check", "--plan", str(path), "--lab", NAME, "--json")
        data = json.loads(out)
        # A clean fabric against its own plan: nothing at all.
        assert code == 0, data
        assert data["findings"] == [] and data["unchecked"] == []
        assert data["summary"]["matched"] == data["summary"]["planned"] > 0
        res = lab.run_tool(NAME, ["ibnetdiscover"], timeout=120)
        clean = parse_ibnetdiscover_text(res.stdout, "clean lab")
    finally:
        lab.down(NAME)
    from topology.cableplan import read_cable_plan
    from topology.plannames import FabricNames

    names = FabricNames(clean)
    ports: dict[str, PortRef] = {}
    for cable in read_cable_plan(path).cables:
        for end in (cable.start, cable.end):
            r = names.resolve(end)
            assert r.ref is not None
            ports[f"{end.device}/{end.port}"] = r.ref
    return ports


@pytest.mark.parametrize(("spec", "faults"), CASES, ids=["+".join(f) for _, f in CASES])
def test_lab_check_finds_exactly_the_planted_faults(
    spec: str, faults: tuple[str, ...], tmp_path: Path
) -> None:
    plan = tmp_path / "plan.csv"
    ports = export_clean_plan(spec, plan)
    lab.up(spec, faults, name=NAME)
    try:
        design: Design = lab.design_of(NAME)
        code, out = invoke("topology", "check", "--plan", str(plan), "--lab", NAME, "--json")
    finally:
        lab.down(NAME)
    data = json.loads(out)
    assert code == EXIT_DIFFERS
    assert data["unchecked"] == []

    def touched(f: dict[str, object]) -> set[PortRef]:
        out: set[PortRef] = set()
        for lk in f["actual"]:  # type: ignore[attr-defined]
            out |= {PortRef(lk[e]["guid"], lk[e]["port"]) for e in ("a", "b")}
        for c in f["expected"]:  # type: ignore[attr-defined]
            out |= {ports[f"{c[e]['device']}/{c[e]['port']}"] for e in ("start", "end")}
        return out

    explained: set[int] = set()
    for planted in design.planted:
        hits = [
            i
            for i, f in enumerate(data["findings"])
            if f["verdict"] == VERDICT_OF[planted.kind] and set(planted.ports) <= touched(f)
        ]
        assert len(hits) == 1, (planted, [f["message"] for f in data["findings"]])
        explained |= set(hits)
    # Nothing but the planted faults; a swap of two cables is one item.
    assert sorted(explained) == list(range(len(data["findings"]))), [f["message"] for f in data["findings"]]
    assert len(data["findings"]) == len({p.fault for p in design.planted})
    assert {f["verdict"] for f in data["findings"]} <= {v.value for v in Verdict}
