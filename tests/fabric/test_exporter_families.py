"""The exporter's families that the alert rules read: switch uplinks, sweep suspects, schedules and
the collection interval, built from real records (a generated fabric, a stored sweep, stored runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.app.exports.metrics import read_view
from fabric.app.health.assess import node_names
from fabric.app.session import open_session
from fabric.exports.prometheus import (
    ScheduleRun,
    SweepSuspects,
    collection_interval,
    schedule_families,
    sweep_families,
    switch_families,
)
from fabric.store import Store
from probes.localize import Suspect
from topology.classify import classify
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Fabric, Link

SPEC = "leafspine:leaves=4,spines=2,hosts=2"  # each leaf: 2 host ports, one uplink to each spine


def _fabric(*faults: str) -> Fabric:
    return parse_ibnetdiscover(to_ibnetdiscover(generate(SPEC, list(faults))).splitlines())


def _by_switch(fabric: Fabric) -> dict[str, dict[str, float]]:
    """Family name -> {switch name: value} for the switch families."""
    out: dict[str, dict[str, float]] = {}
    for family in switch_families(classify(fabric), node_names(fabric)):
        out[family.name] = {s.labels["switch"]: s.value for s in family.samples}
    return out


def test_clean_fabric_every_switch_has_its_usual_uplinks() -> None:
    got = _by_switch(_fabric())
    leaves = {f"leaf-0{i}" for i in range(1, 5)}
    assert set(got["ibfab_switch_uplinks"]) == leaves | {"spine-01", "spine-02"}
    assert {got["ibfab_switch_uplinks"][n] for n in leaves} == {2.0}
    # spines have no uplinks: no usual count for their tier, so no alert can be made of it
    assert got["ibfab_switch_uplinks_usual"] == dict.fromkeys(leaves, 2.0)


def test_leaf_missing_an_uplink_is_below_its_usual() -> None:
    got = _by_switch(_fabric("missing-link:leaf-03"))
    below = [
        n for n, usual in got["ibfab_switch_uplinks_usual"].items() if got["ibfab_switch_uplinks"][n] < usual
    ]
    assert below == ["leaf-03"]
    assert got["ibfab_switch_uplinks"]["leaf-03"] == 1.0


def test_tier_labels_follow_classify() -> None:
    fabric = _fabric()
    tiers = {
        s.labels["switch"]: s.labels["tier"]
        for s in switch_families(classify(fabric), node_names(fabric))[0].samples
    }
    assert tiers["leaf-01"] == "1" and tiers["spine-02"] == "2"


def test_sweep_suspects_are_link_series_with_the_lower_end_first() -> None:
    fabric = _fabric()
    link = next(lk for lk in fabric.links if "spine" in node_names(fabric)[lk.b.guid])
    # a Link given the other way round is put lower end first by the model
    swapped = Link(link.b, link.a, link.width, link.speed)
    names = node_names(fabric)
    families = {
        f.name: f
        for f in sweep_families(
            SweepSuspects(7, 1000.0, (Suspect(swapped, 1.0, (), (), "1 slow and 0 fast pair(s)"),)), names
        )
    }
    assert [s.value for s in families["ibfab_sweep_last_id"].samples] == [7.0]
    assert [s.value for s in families["ibfab_sweep_last_timestamp_seconds"].samples] == [1000.0]
    [score] = families["ibfab_sweep_suspect_score"].samples
    assert score.value == 1.0
    assert score.labels == {
        "a_guid": link.a.guid,
        "a_port": str(link.a.port),
        "a_name": names[link.a.guid],
        "b_guid": link.b.guid,
        "b_port": str(link.b.port),
        "b_name": names[link.b.guid],
    }
    assert [s.value for s in families["ibfab_sweep_suspect_slow_pairs"].samples] == [0.0]


def test_schedule_families_flag_only_the_failed_run() -> None:
    runs = (
        ScheduleRun("counters-5m", "counters", 100.0, True, ""),
        ScheduleRun("nightly-sweep", "sweep", 200.0, False, "lab 'x' is not running"),
    )
    success, finished, error = schedule_families(runs)
    assert {s.labels["schedule"]: s.value for s in success.samples} == {"counters-5m": 1, "nightly-sweep": 0}
    assert {s.labels["schedule"]: s.value for s in finished.samples} == {
        "counters-5m": 100,
        "nightly-sweep": 200,
    }
    assert [(s.labels["schedule"], s.labels["error"]) for s in error.samples] == [
        ("nightly-sweep", "lab 'x' is not running")
    ]


@pytest.mark.parametrize(
    ("times", "want"),
    [
        ([], None),
        ([5.0], None),
        ([0.0, 60.0], 60.0),
        ([0.0, 300.0, 600.0, 900.0, 2000.0], 300.0),  # one late collection does not move it
        ([0.0, 10.0, 300.0, 600.0], 290.0),  # one manual run in between does not either
        ([float(t) for t in range(0, 3000, 100)] + [3000.0, 3030.0], 100.0),  # only the latest gaps
    ],
)
def test_collection_interval(times: list[float], want: float | None) -> None:
    assert collection_interval(times) == want


def test_view_serves_failed_runs_and_interval_on_every_refresh(tmp_path: Path) -> None:
    """A failed run adds no snapshot, so it must show although the data view is reused."""
    from fabric.store import PortCounterRow

    db = tmp_path / "ibfab.db"
    fabric = _fabric()
    link = fabric.links[0]
    with Store.open(db) as store:
        topology_id = store.save_topology(fabric, "", tool="ibnetdiscover", source="test")
        for t in (1000.0, 1300.0, 1600.0):
            store.save_counter_snapshot(
                t,
                "test",
                topology_id,
                [PortCounterRow(t, link.a.guid, link.a.port, counters={"symbol_errors": 0})],
            )
        sid = store.add_schedule("counters-5m", "counters", interval_seconds=300)
    first = read_view(open_session(db=db))
    assert first.status.collection_interval == 300.0 and first.status.schedules == ()
    with Store.open(db) as store:
        run = store.start_run(sid, 1700.0)
        store.finish_run(run, False, "ibqueryerrors: timed out", 1710.0)
    second = read_view(open_session(db=db), previous=first)
    assert second.text is first.text  # the data were not rebuilt ...
    assert second.status.schedules == (
        ScheduleRun("counters-5m", "counters", 1710.0, False, "ibqueryerrors: timed out"),
    )
    with Store.open(db) as store:
        store.update_schedule(sid, enabled=False)
    assert (
        read_view(open_session(db=db), previous=second).status.schedules == ()
    )  # a disabled schedule is not watched
