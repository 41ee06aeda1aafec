"""`ibfab triage --lab`: the real discovery and OpenSM's routes of an ibsim fabric, the runs
simulated (lab-simulated): a clean set cleared, a planted PCIe-bound node, a GPU-bound node and a
slow host cable each found alone, a node planted lost named lost (never its cables) within ceil(log2 n)+2 rounds; the hosts held as a sweep holds them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from fabric.app.hostlocks import host_locks, lock_keys
from fabric.app.session import Session, StoreAccess
from fabric.app.source import Source
from fabric.cli.main import main
from fabric.lab import simulator as lab

pytestmark = pytest.mark.lab
HOSTS = "dgx-[0001-0008]"
BUDGET = 5  # ceil(log2 8) + 2


def triage(*args: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    res = CliRunner().invoke(main, ["triage", *args, "--json"])
    return res.exit_code, json.loads(res.stdout) if res.stdout.strip() else {}, res.stderr


@pytest.fixture
def clean_lab() -> Iterator[str]:
    lab.up("rail-small", (), name="triage")
    try:
        yield "triage"
    finally:
        lab.down("triage")


@pytest.fixture
def cable_lab() -> Iterator[str]:
    # leaf-su01-r2 port 3 is the cable of dgx-0003 mlx5_2 (rail 2); it trains at 1x.
    lab.up("rail-small", ["degraded-width:leaf-su01-r2:3"], name="triagecable")
    try:
        yield "triagecable"
    finally:
        lab.down("triagecable")


def test_clean_then_each_planted_node(clean_lab: str) -> None:
    code, report, _ = triage("--hosts", HOSTS, "--lab", clean_lab)
    assert code == 0 and report["fabric_fine"] and report["whole_set_ran"] and len(report["rounds"]) <= BUDGET
    assert report["backend"] == "lab-simulated"

    res = CliRunner().invoke(main, ["triage", "plant", "--lab", clean_lab, "dgx-0006", "--kind", "pcie"])
    assert res.exit_code == 0 and "simulated" in res.stdout
    code, report, err = triage("--hosts", HOSTS, "--lab", clean_lab)
    c = report["culprit"]
    assert code == 4 and "dgx-0006" in err
    assert (c["kind"], c["hosts"], c["reason"]) == ("node", ["dgx-0006"], "alone_with_cleared")
    assert len(report["rounds"]) <= BUDGET and [r["ruled_out"] for r in report["rounds"][:2]] == [
        "gpus",
        "cables",
    ]

    CliRunner().invoke(main, ["triage", "clear", "--lab", clean_lab])
    CliRunner().invoke(
        main, ["triage", "plant", "--lab", clean_lab, "dgx-0003", "--kind", "gpu", "--factor", "0.6"]
    )
    code, report, _ = triage("--hosts", HOSTS, "--lab", clean_lab)
    assert code == 4 and report["culprit"]["hosts"] == ["dgx-0003"] and len(report["rounds"]) == 1

    # a node that stops answering from round 2 on: named lost (drain it), not its cables, and the
    # others triaged without it
    CliRunner().invoke(main, ["triage", "clear", "--lab", clean_lab])
    res = CliRunner().invoke(
        main, ["triage", "plant", "--lab", clean_lab, "dgx-0005", "--kind", "lost", "--round", "2"]
    )
    assert res.exit_code == 0 and "planted lost from round 2" in res.stdout
    code, report, err = triage("--hosts", HOSTS, "--lab", clean_lab)
    assert code == 4 and err.splitlines() == [
        "ibfab: error: triage lost node(s): dgx-0005 (drain and check them)"
    ]
    assert report["culprit"] is None and report["undecided"] is None
    assert [(x["host"], x["round"], x["action"]) for x in report["lost_nodes"]] == [("dgx-0005", 2, "drain")]
    assert all("dgx-0005" not in t["hosts"] for r in report["rounds"][2:] for t in r["tests"])
    assert all(not t["slow"] for r in report["rounds"] for t in r["tests"])
    CliRunner().invoke(main, ["triage", "clear", "--lab", clean_lab])

    # another ibfab probe holding a host: the triage does not start (exit 9)
    with host_locks(StoreAccess.at()).hold(
        lock_keys(["dgx-0005"], Session(Source.lab(clean_lab)).driver), 0, "a sweep"
    ):
        res = CliRunner().invoke(main, ["triage", "--hosts", HOSTS, "--lab", clean_lab])
    assert res.exit_code == 9 and "dgx-0005" in res.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["nosuch", "--kind", "lost"], "nosuch is not a host of lab triage (its hosts: dgx-[0001-0008])"),
        (["dgx-09", "--kind", "gpu"], "dgx-09 is not a host of lab triage"),
        (["dgx-0001", "--kind", "lost", "--factor", "0.2"], "--factor is the share of a slow node's rate"),
        (["dgx-0001", "--kind", "gpu", "--round", "2"], "--round is when a lost node stops answering"),
        (["dgx-0001", "--kind", "lost", "--round", "0"], "lost from round 1 or later, not 0"),
    ],
)
def test_a_plant_that_would_do_nothing_is_refused(clean_lab: str, args: list[str], said: str) -> None:
    """A host the lab's fabric lacks, or an option the kind ignores: one line, exit 2, nothing planted."""
    res = CliRunner().invoke(main, ["triage", "plant", "--lab", clean_lab, *args])
    assert res.exit_code == 2 and res.stdout == ""
    assert (
        res.stderr.startswith("ibfab: error: ") and said in res.stderr and len(res.stderr.splitlines()) == 1
    )
    assert Session(Source.lab(clean_lab)).driver.planted_nodes() == {}


def test_a_second_plant_of_another_kind_is_refused_not_swapped(clean_lab: str) -> None:
    plant = ["triage", "plant", "--lab", clean_lab, "dgx-0004"]
    assert CliRunner().invoke(main, [*plant, "--kind", "pcie"]).exit_code == 0
    res = CliRunner().invoke(main, [*plant, "--kind", "lost", "--round", "2"])
    assert res.exit_code == 2 and "dgx-0004 is already planted slow (pcie) in lab triage" in res.stderr
    res = CliRunner().invoke(main, [*plant, "--kind", "pcie", "--factor", "0.3"])  # the same kind: replanted
    assert res.exit_code == 0
    planted = Session(Source.lab(clean_lab)).driver.planted_nodes()
    assert [(p.host, p.kind, p.factor) for p in planted.values()] == [("dgx-0004", "pcie", 0.3)]
    res = CliRunner().invoke(main, ["triage", "clear", "--lab", clean_lab])
    assert res.stdout == f"lab {clean_lab}: 1 planted node(s) removed (slow or lost)\n"


def test_a_slow_host_cable_with_opensm_routes(cable_lab: str) -> None:
    code, report, _ = triage("--hosts", HOSTS, "--lab", cable_lab)
    c = report["culprit"]
    assert code == 4 and (c["kind"], c["hosts"], c["rail"], c["hca"]) == ("cable", ["dgx-0003"], 2, "mlx5_2")
    assert (
        c["leaf"] == "leaf-su01-r2" and c["trained_below"]["trained_gbps"] < c["trained_below"]["design_gbps"]
    )
    assert len(report["rounds"]) == 2 and all(e["slow"] for e in c["evidence"])
