"""Every finding in view: the anomalies screen lists every discovery anomaly and every cable at
watch or worse (the overview's counts agree with it), enter opens what a finding names; the map
has one view per tier pair the fabric has, side groups marked, with axis headers."""

from __future__ import annotations

from pathlib import Path

from fabric.app.readmodel.service import FabricService
from fabric.app.readmodel.views import LINK_HEALTH
from fabric.app.session import open_session
from fabric.present.overview import note_lines
from fabric.store import Store
from tests.conftest import REALDATA
from tests.tui.test_tui import SIZE, run_async, settle, table_rows, text_of
from tests.tui_data import T0, build_store
from topology.anomaly import Severity
from topology.ibnetdiscover import read_ibnetdiscover
from tui.app import build_app
from tui.screens.anomalies import AnomaliesScreen
from tui.screens.detail import DetailScreen
from tui.screens.fabric_map import FabricMapScreen
from tui.widgets.heatmap import HeatMap, column_numbers


@run_async
async def test_anomalies_list_every_finding_grouped_and_open_their_element(tmp_path: Path) -> None:
    path, _, ber_bad, flappy = build_store(tmp_path / "tui.db")
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert app.view is not None
        overview_alerts = text_of(app, "#ov-alerts")
        await pilot.press("e")
        screen = app.screen
        assert isinstance(screen, AnomaliesScreen)
        found = screen.alerts()
        # the planted miswire (discovery) and the two bad cables (health), nothing else
        assert sorted((a.severity, a.kind) for a in found) == sorted(
            [
                (Severity.ERROR, "rail_miswire"),
                (Severity.CRITICAL, LINK_HEALTH),
                (Severity.CRITICAL, LINK_HEALTH),
            ]
        )
        assert len(app.view.discovery.anomalies) == 1
        assert "critical: 2  error: 1  warning: 0  info: 0" in overview_alerts
        assert "3 of 3 findings in 2 kind(s)" in text_of(app, "#anomalies-count")
        rows = table_rows(app, "#anomalies")
        assert rows[0].startswith("── link health") and rows[3].startswith("── rail_miswire")
        assert {ber_bad.key, flappy.key} == {a.link for a in found if a.kind == LINK_HEALTH}
        # filter as you type: only the miswire is left; enter on it opens the HCA it names
        screen.debounce_s = 30.0  # typing is listed again only once it pauses (or on enter)
        await pilot.press("slash", *"miswire")
        assert "3 of 3 findings" in text_of(app, "#anomalies-count")
        await pilot.press("enter")
        assert "1 of 3 findings in 1 kind(s)" in text_of(app, "#anomalies-count")
        await pilot.press("down", "enter")
        await pilot.pause(0.3)
        detail = app.screen
        assert isinstance(detail, DetailScreen) and detail.guid is not None
        assert app.view.name(detail.guid).startswith("dgx-0002")
        await pilot.press("escape")
        assert isinstance(app.screen, AnomaliesScreen)


def test_a_clean_fabric_has_no_finding(tmp_path: Path) -> None:
    path, *_ = build_store(tmp_path / "clean.db", spec="rail-small", faults=())
    svc = FabricService(open_session(db=path))
    view = svc.load_view()
    assert view is not None
    rows = svc.rows_with_health(view, svc.health())
    # the store's two planted counter faults are the only findings of a well-cabled fabric
    assert [(a.kind, a.link) for a in svc.alerts(view, rows) if a.kind != LINK_HEALTH] == []


@run_async
async def test_map_has_every_tier_pair_and_marks_the_side_group(tmp_path: Path) -> None:
    path, *_ = build_store(tmp_path / "side.db", spec="rail-3tier:side=3", faults=())
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        fabric_text = text_of(app, "#ov-fabric")
        assert "side group 1: 5 switches (3 leaves), 12 hosts, 12 HCAs" in fabric_text
        await pilot.press("m")
        await pilot.pause(0.1)
        screen = app.screen
        assert isinstance(screen, FabricMapScreen)
        assert screen.views == [
            "leaf-spine",
            "spine-core",
            "side_leaf-side_spine",
            "side_spine-core",
            "rail-unit",
        ]
        seen = []
        for _ in screen.views:
            heat = screen.query_one(HeatMap)
            title = text_of(app, "#map-title")
            seen.append((screen.view_name, heat.grid.row_axis, heat.grid.col_axis))
            assert ("(a side group)" in title) == screen.view_name.startswith("side_")
            assert heat.grid.cells, screen.view_name  # every listed map has cables on it
            await pilot.press("v")
        assert seen[1] == ("spine-core", "spine", "core")
        assert seen[2] == ("side_leaf-side_spine", "side_leaf", "side_spine")
        assert screen.view_name == "leaf-spine"  # round again


def test_column_numbers_never_run_together() -> None:
    assert column_numbers(12) == " 1       5        10    "
    line = column_numbers(120)
    assert line[2 * 100 - 3 : 2 * 100] == "100" and len(line) == 240


def test_a_real_capture_shows_every_anomaly_and_the_parsers_notes(tmp_path: Path) -> None:
    """Saved captures (read in place): the overview counts every discovery anomaly, whatever its
    severity (the Selene storage capture's 8 warnings once showed as "ALERTS (0) none")."""
    from fabric.app.discovery.discover import discover_text
    from fabric.store import Store
    from tests.conftest import REALDATA
    from tui.cli import overview_text

    for name in (
        "ufm-sdk-selene-storage-hdr-edr-1407nodes.txt",
        "junousi-nvidia-kb-edr-fdr-mixed-loopbacks.txt",
    ):
        capture = REALDATA / "ibnetdiscover" / name
        text = capture.read_text()
        d = discover_text(text, str(capture))
        db = tmp_path / f"{capture.stem}.db"
        with Store.open(db) as store:
            store.save_topology(d.fabric, text, "ibnetdiscover", str(capture), label="capture", taken_at=T0)
        report = overview_text(open_session(db=db))
        assert f"ALERTS ({len(d.anomalies)})" in report  # no counters: the anomalies are the alerts
        counts = {s: sum(a.severity is s for a in d.anomalies) for s in Severity}
        assert f"critical: {counts[Severity.CRITICAL]}  error: {counts[Severity.ERROR]}" in report
        assert d.anomalies or "no anomaly and no cable at watch or worse" in report


def test_parser_notes_are_listed_and_counted() -> None:
    notes = [f"line {i}: port cabled twice" for i in range(7)]
    assert note_lines(notes) == [*(f"note: {n}" for n in notes[:5]), "… 2 more notes (ibfab discover)"]
    assert note_lines([]) == [] and note_lines(None) == []


@run_async
async def test_parser_notes_of_a_stored_topology_are_on_the_overview(tmp_path: Path) -> None:
    """What the parser noted reading a real capture (a diagnostic line ibnetdiscover printed into
    its output, a port cabled twice) is kept with the stored topology and shown, as discover says it."""
    captures = (
        "junousi-nvidia-kb-edr-fdr-mixed-loopbacks.txt",
        "treydock-ibnetdiscover-p-ports-hdr-qdr-odd-spaces.txt",
    )
    for name in captures:
        path = REALDATA / "ibnetdiscover" / name
        fabric = read_ibnetdiscover(path)
        assert fabric.warnings  # the capture has something to note
        db = tmp_path / f"{path.stem}.db"
        with Store.open(db) as store:
            store.save_topology(fabric, path.read_text(), "ibnetdiscover", str(path), taken_at=T0)
        app = build_app(FabricService(open_session(db=db)), poll_seconds=None)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot, app)
            shown = " ".join(text_of(app, "#ov-fabric").split())
        for note in fabric.warnings:
            assert f"note: {' '.join(note.split())}" in shown


@run_async
async def test_a_capture_with_nothing_to_note_shows_no_note(tmp_path: Path) -> None:
    path, _, _, _ = build_store(tmp_path / "tui.db")
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert "note:" not in text_of(app, "#ov-fabric")


def test_a_degraded_cable_is_one_element_that_opens_its_link(tmp_path: Path) -> None:
    """A degraded link's anomaly names both ports of one cable: the alert names that cable once
    (it once read "dgx-0001 mlx5_0/1 - leaf-su01-r0/1, dgx-0001 mlx5_0/1 - leaf-su01-r0/1") and
    enter opens it; a clean fabric of the same preset has no such alert."""
    from fabric.app.discovery.discover import discover_text
    from topology.generate import generate
    from topology.generate_text import to_ibnetdiscover

    for faults, expected in ((("degraded-width:leaf-su01-r0:1",), 1), ((), 0)):
        text = to_ibnetdiscover(generate("rail-small", faults))
        d = discover_text(text, "generated")
        db = tmp_path / f"degraded-{expected}.db"
        with Store.open(db) as store:
            store.save_topology(d.fabric, text, "ibnetdiscover", "generated", label="gen", taken_at=T0)
        svc = FabricService(open_session(db=db))
        view = svc.load_view()
        assert view is not None
        degraded = [a for a in svc.alerts(view, view.links) if a.kind == "degraded_link"]
        assert len(degraded) == expected
        for a in degraded:
            assert ", " not in a.element and a.link is not None
            assert view.links[view.row_of[a.link]].cable == a.element
