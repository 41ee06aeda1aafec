"""The routes in the TUI: the routes screen, route errors as alerts (enter opens their evidence),
hot links on the fabric map, and the verdict judged once per what it rests on.

Stores from tests.tui_routes_data: a fat tree with OpenSM-minhop tables stored beside its topology,
clean, or with one fault planted in the tables (a credit loop, a black hole), or an isolation
recorded that the tables still route over; and tests.tui_data's store without tables.
"""

from __future__ import annotations

import shlex
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from textual.pilot import Pilot
from textual.widgets import DataTable

from fabric.app.health.window import HealthWindow
from fabric.app.readmodel.routes import RoutesVerdict
from fabric.app.readmodel.service import FabricService
from fabric.app.readmodel.views import NO_DATA, FabricView
from fabric.app.session import open_session
from fabric.cli.main import main
from fabric.present.routes import CLEAN
from fabric.present.routes_tui import route_alerts
from fabric.store import Store
from tests.advise_fabrics import guid_of
from tests.conftest import ROOT
from tests.tui.test_tui import SIZE, run_async, settle, table_rows, text_of
from tests.tui_data import build_store, record_operations, uplinks
from tests.tui_routes_data import BLACK_HOLE, CREDIT_LOOP, lid, ring_store, routed_store
from topology.anomaly import Severity
from topology.generate_routes import minhop_tables, write_dump_lfts
from topology.route_findings import CREDIT_LOOP as CREDIT_LOOP_KIND
from topology.route_findings import CROSSES_FLAGGED, CROSSES_ISOLATED, NO_ROUTE
from tui.app import IbfabApp, build_app
from tui.mapdata import load_status
from tui.messages import OpenRoutes, RoutesJudged
from tui.screens.anomalies import AnomaliesScreen
from tui.screens.fabric_map import FabricMapScreen
from tui.screens.routes import RoutesScreen
from tui.widgets.heatmap import HeatMap


def app_on(path: Path) -> IbfabApp:
    return build_app(FabricService(open_session(db=path)), poll_seconds=None)


def route_alert_kinds(app: IbfabApp) -> list[str]:
    assert app.view is not None
    return [a.kind for a in route_alerts(app.service.routes_known(app.view))]


@run_async
async def test_clean_tables_are_one_line_no_alert_and_an_even_map(tmp_path: Path) -> None:
    path, _, sid = routed_store(tmp_path / "clean.db")
    app = app_on(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert any(isinstance(m, RoutesJudged) for m in app.messages_seen)
        assert route_alert_kinds(app) == []
        assert "no anomaly and no cable at watch or worse" in text_of(app, "#ov-alerts")
        await pilot.press("t")
        await pilot.pause(0.1)
        assert isinstance(app.screen, RoutesScreen)
        head = text_of(app, "#routes-head")
        assert f"Forwarding tables stored with topology snapshot {sid}, read from minhop" in head
        assert "0 error(s), 0 warning(s)" in head
        assert "the tables are up/down, minimal; consistent with minhop" in head
        assert head.rstrip().endswith(CLEAN)  # the one line a clean fabric gets
        assert not app.screen.query_one("#routes-findings", DataTable).display
        balance = text_of(app, "#routes-balance")
        assert "leaf -> spine  -     32      768     24   24.0  24" in balance
        assert "Credit loops: none" in balance
        # the map's hot links: 32 hosts all-to-all over a fat tree is even, every cable 1.0x
        await pilot.press("m", "h")
        await pilot.pause(0.1)
        screen = app.screen
        assert isinstance(screen, FabricMapScreen) and screen.routes_mode
        cells = screen.query_one(HeatMap).grid.cells
        assert len(cells) == 8 and {c.status for c in cells.values()} == {"ok"}
        assert "all-to-all route load" in text_of(app, "#map-title")
        cell = text_of(app, "#map-cell")
        assert "leaf-01 x spine-01: 4 cable(s)" in cell
        assert "24 routes leaf -> spine (1.00x its mean 24.0), 24 routes spine -> leaf (1.00x" in cell
        await pilot.press("h")
        assert not screen.routes_mode and "cable health" in text_of(app, "#map-title")


@run_async
async def test_a_credit_loop_is_exactly_one_alert_and_opens_its_cycle(tmp_path: Path) -> None:
    path, d, _ = routed_store(tmp_path / "loop.db", CREDIT_LOOP)
    app = app_on(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert route_alert_kinds(app) == [CREDIT_LOOP_KIND]
        alerts = text_of(app, "#ov-alerts")
        assert "error: 1" in alerts and "credit_loop: leaf-01 [9] -> spine-01 [9]" in alerts
        await pilot.press("e")
        await pilot.pause(0.1)
        screen = app.screen
        assert isinstance(screen, AnomaliesScreen)
        rows = table_rows(app, "#anomalies")
        assert rows[0].startswith("── credit_loop") and rows[1].startswith("ERROR")
        assert "credit loop: 4 links wait on each other in a ring" in text_of(app, "#anomaly-why")
        await pilot.press("enter")
        await pilot.pause(0.2)
        opened = [m for m in app.messages_seen if isinstance(m, OpenRoutes)]
        assert len(opened) == 1 and opened[0].finding is not None
        assert opened[0].finding.kind == CREDIT_LOOP_KIND
        assert isinstance(app.screen, RoutesScreen)
        assert app.screen.query_one("#routes-body").scroll_y > 0  # the findings at the top, not the summary
        # the cursor is on the loop; its evidence: the cycle link by link with the LIDs making it
        table = app.screen.query_one("#routes-findings", DataTable)
        assert str(table.get_row_at(table.cursor_row)[1]) == CREDIT_LOOP_KIND
        evidence = text_of(app, "#routes-evidence")
        a, b = lid(d, "cn0001 mlx5_0"), lid(d, "cn0017 mlx5_0")
        assert f"routes making the waits: LIDs {min(a, b)}, {max(a, b)}" in evidence
        assert "Credit loop, link by link (4 channels on cycles" in evidence
        assert "  spine-02 [1] -> leaf-01 [13]  (waits for the next link: routes to LID" in evidence
        head = text_of(app, "#routes-head")
        assert "1 error(s), 4 warning(s)" in head and CLEAN not in head
        assert "the tables are not up/down, not minimal" in head
        # errors first, then the warnings the same routes cause (not alerts)
        kinds = [str(table.get_row_at(i)[1]) for i in range(table.row_count)]
        assert kinds[0] == CREDIT_LOOP_KIND and "down_up" in kinds and "longer_than_minimal" in kinds
        # the hot links: the loop's spine-02 -> leaf-01 cable carries 64 routes where 24.8 is the mean
        await pilot.press("m", "h")
        await pilot.pause(0.1)
        map_screen = app.screen
        assert isinstance(map_screen, FabricMapScreen)
        grid = map_screen.query_one(HeatMap).grid
        hot = grid.cells[(grid.row_labels.index("leaf-01"), grid.col_labels.index("spine-02"))]
        assert hot.status == "critical" and app.rows[hot.links[0]].a_port == 13


@run_async
async def test_a_black_hole_is_exactly_one_no_route_alert(tmp_path: Path) -> None:
    path, d, _ = routed_store(tmp_path / "hole.db", BLACK_HOLE)
    app = app_on(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.view is not None
        (alert,) = route_alerts(app.service.routes_known(app.view))
        dst = lid(d, "cn0009 mlx5_0")
        assert (alert.kind, alert.severity, alert.guid) == (NO_ROUTE, Severity.ERROR, guid_of(d, "leaf-02"))
        assert alert.element == f"leaf-02 -> LID {dst}"
        assert (
            alert.message == f"leaf-02 sends LID {dst} (cn0009 mlx5_0) nowhere: 31 host routes never arrive"
        )
        assert alert in app.service.alerts(
            app.view, app.rows, route_alerts(app.service.routes_known(app.view))
        )


@run_async
async def test_routes_over_an_isolated_cable_are_an_alert(tmp_path: Path) -> None:
    path, d, _ = routed_store(tmp_path / "iso.db")
    isolated = uplinks(d.fabric)[0]
    record_operations(path, d.fabric, isolated)
    app = app_on(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert route_alert_kinds(app) == [CROSSES_ISOLATED]
        await pilot.press("t")
        await pilot.pause(0.1)
        assert "1 isolated port(s)" in text_of(app, "#routes-head")


@run_async
async def test_flagged_cables_come_from_the_health_on_screen_as_warnings(tmp_path: Path) -> None:
    path, _, _ = routed_store(tmp_path / "flagged.db", snapshots=16)  # a critical BER uplink, a flapping one
    app = app_on(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.view is not None and app.health is not None
        verdict = app.service.routes_known(app.view)
        assert verdict is not None and verdict.judged is not None
        assert {f.kind for f in verdict.findings} == {CROSSES_FLAGGED}
        assert route_alert_kinds(app) == []  # warnings: on the routes screen, not alerts
        await pilot.press("t")
        await pilot.pause(0.1)
        assert "health: the health on screen: 2 cable(s) flagged warn or critical" in text_of(
            app, "#routes-head"
        )


@run_async
async def test_no_tables_says_so_and_its_command_stores_them(tmp_path: Path) -> None:
    path, fabric, _, _ = build_store(tmp_path / "none.db")
    app = app_on(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert route_alert_kinds(app) == []
        await pilot.press("t")
        await pilot.pause(0.1)
        head = text_of(app, "#routes-head")
        assert head.startswith("No forwarding tables are stored with topology snapshot 1")
        assert "judged per virtual lane when the lanes are stored with the tables: add --lanes" in head
        assert not app.screen.query_one("#routes-balance").display
        # nothing coloured on the map
        await pilot.press("m", "h")
        await pilot.pause(0.1)
        screen = app.screen
        assert isinstance(screen, FabricMapScreen)
        assert {c.status for c in screen.query_one(HeatMap).grid.cells.values()} == {NO_DATA}
        assert "no forwarding tables stored with topology snapshot 1" in text_of(app, "#map-title")
        # the command said runs as said (FILE: a dump of the fabric's tables) and g shows them judged
        (line,) = [ln.strip() for ln in head.splitlines() if ln.strip().startswith("ibfab routes --snapshot")]
        dump = tmp_path / "fabric.lfts"
        with dump.open("wb") as fh:
            write_dump_lfts(fabric, minhop_tables(fabric), fh)
        argv = [str(dump) if w == "FILE" else w for w in shlex.split(line)[1:]]
        res = CliRunner().invoke(main, argv)
        assert res.exit_code == 0, res.stderr
        assert "stored the tables with topology snapshot 1" in res.stderr
        judged = sum(isinstance(m, RoutesJudged) for m in app.messages_seen)
        await pilot.press("t", "g")
        for _ in range(1200):  # a 60 s deadline, not a speed check
            await pilot.pause(0.05)
            if sum(isinstance(m, RoutesJudged) for m in app.messages_seen) > judged:
                break
        await settle(pilot, app)
        assert "Forwarding tables stored with topology snapshot 1" in text_of(app, "#routes-head")


async def until(pilot: Pilot[None], ready: Callable[[], bool], what: str) -> None:
    """Wait for a state (a 60 s deadline for a loaded machine, not a speed check)."""
    for _ in range(1200):
        if ready():
            await pilot.pause()  # the screens redrawn from it
            return
        await pilot.pause(0.05)
    raise AssertionError(f"never {what}")


def held_judgement(svc: FabricService, monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[int]]:
    """The service's judgement held until the event is set, then run for real: a judgement takes
    seconds only on a large fabric, and a test cannot make this one slow otherwise. The list gets
    the topology id of each judgement asked for."""
    release, asked = threading.Event(), []
    judge = svc.routes

    def held(view: FabricView, health: HealthWindow | None) -> RoutesVerdict:
        asked.append(view.topology.id)
        release.wait(60)
        return judge(view, health)

    monkeypatch.setattr(svc, "routes", held)
    return release, asked


@run_async
async def test_the_status_line_says_routes_are_being_judged_until_the_verdict_comes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _, sid = routed_store(tmp_path / "clean.db", snapshots=2)
    svc = FabricService(open_session(db=path))
    release, asked = held_judgement(svc, monkeypatch)
    app = build_app(svc, poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: bool(asked) and app.health is not None, "a judgement asked for")
        assert app.loading["routes"] and not any(isinstance(m, RoutesJudged) for m in app.messages_seen)
        status = text_of(app, "#status-line")
        assert status.endswith("health at snapshot #2 | judging routes…"), status
        await pilot.press("t")  # every screen's status line, the routes screen's too
        await until(pilot, lambda: isinstance(app.screen, RoutesScreen), "on the routes screen")
        assert text_of(app, "#status-line").endswith("| judging routes…")
        assert "judging the forwarding tables stored with topology snapshot" in text_of(app, "#routes-head")
        release.set()
        await until(pilot, lambda: not app.loading["routes"], "judged")
        assert asked == [sid] and any(isinstance(m, RoutesJudged) for m in app.messages_seen)
        status = text_of(app, "#status-line")
        assert status.endswith("health at snapshot #2") and "routes" not in status, status
        assert f"Forwarding tables stored with topology snapshot {sid}" in text_of(app, "#routes-head")


@run_async
async def test_tables_that_cannot_be_judged_clear_the_judging_and_say_where_to_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _, sid = routed_store(tmp_path / "damaged.db", snapshots=2)
    with sqlite3.connect(path) as db:  # the stored table fails its checksum in the judging process
        db.execute("UPDATE route_tables SET crc = crc + 1")
    svc = FabricService(open_session(db=path))
    release, asked = held_judgement(svc, monkeypatch)
    app = build_app(svc, poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: bool(asked) and app.health is not None, "a judgement asked for")
        assert text_of(app, "#status-line").endswith("| judging routes…")
        release.set()
        await until(pilot, lambda: not app.loading["routes"], "judged")
        status = text_of(app, "#status-line")
        assert "judging" not in status and status.endswith("| routes not judged (t: why)"), status
        assert not app.errors  # the verdict says it, not a load error
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, RoutesScreen), "on the routes screen")
        head = text_of(app, "#routes-head")
        assert f"stored with topology snapshot {sid} cannot be judged" in head and "checksum" in head, head


def test_judged_once_per_what_the_verdict_rests_on(tmp_path: Path) -> None:
    path, _, sid = routed_store(tmp_path / "cache.db")
    svc = FabricService(open_session(db=path))
    view = svc.load_view()
    assert view is not None and svc.routes_known(view) is None
    first = svc.routes(view, None)
    assert svc.routes(view, None) is first and svc.routes_known(view) is first
    assert first.judged is not None and first.loads
    # the same tables stored again (a new dump): judged again
    with Store.open(path) as store:
        t = store.load_routes(sid)
        assert t is not None
        store.save_routes(sid, t, None, source="again", taken_at=1.0)
    second = svc.routes(view, None)
    assert second is not first and second.judged is not None
    assert svc.routes(view, None) is second


def test_report_without_a_terminal_lists_route_alerts(tmp_path: Path) -> None:
    from tui.program import main as program

    path, _, _ = routed_store(tmp_path / "report.db", CREDIT_LOOP)
    res = CliRunner().invoke(program, ["tui", "--db", str(path), "--report"])
    assert res.exit_code == 0, res.output
    assert "ERROR    credit_loop: leaf-01 [9] -> spine-01 [9]" in res.stdout


def test_load_shades() -> None:
    assert [load_status(x) for x in (None, 0.0, 1.0, 1.25, 1.4, 1.5, 1.9, 2.0, 2.6)] == [
        NO_DATA,
        "ok",
        "ok",
        "ok",
        "watch",
        "watch",
        "warn",
        "warn",
        "critical",
    ]


# -- lanes stored with the tables: the real ring of tests/data/sl2vl ---------------------------
RING_FILES = f"{ROOT}/tests/data/sl2vl/"


@run_async
async def test_a_ring_stored_with_dfsssp_lanes_is_judged_per_vl_no_alert(tmp_path: Path) -> None:
    path, sid = ring_store(tmp_path / "ring.db", "dfsssp", with_lanes=True)
    app = app_on(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await until(
            pilot, lambda: app.view is not None and app.service.routes_known(app.view) is not None, "routes"
        )
        assert route_alert_kinds(app) == []
        await pilot.press("t")
        await pilot.pause(0.1)
        assert isinstance(app.screen, RoutesScreen)
        assert "0 error(s), 0 warning(s)" in text_of(app, "#routes-head")
        balance = " ".join(text_of(app, "#routes-balance").split())
        assert (
            "Credit loops: none (" in balance
            and "(channel, VL) nodes, VLs used 0, 1, 2, 3, 4, 5, 6, 7" in balance
        )
        assert (
            f"per VL: SL2VL tables from {RING_FILES}smpquery-sl2vl-ring5-dfsssp.txt, stored with topology snapshot {sid}"
            in balance
        )


@run_async
async def test_a_ring_stored_without_lanes_alerts_one_lane_and_says_why(tmp_path: Path) -> None:
    path, sid = ring_store(tmp_path / "ring.db", "dfsssp", with_lanes=False)
    app = app_on(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await until(
            pilot, lambda: app.view is not None and app.service.routes_known(app.view) is not None, "routes"
        )
        assert route_alert_kinds(app) == [CREDIT_LOOP_KIND]
        await pilot.press("t")
        await pilot.pause(0.1)
        assert isinstance(app.screen, RoutesScreen)
        table = app.screen.query_one("#routes-findings", DataTable)
        assert str(table.get_row_at(table.cursor_row)[1]) == CREDIT_LOOP_KIND
        evidence = " ".join(text_of(app, "#routes-evidence").split())
        # the evidence says once why it is one lane; the cycle's heading names the lane only
        assert "Credit loop, link by link (10 channels on cycles; one lane):" in evidence
        why = (
            f"lanes: one lane: no SL2VL tables or path records are stored with topology snapshot {sid}"
            " (store them with 'ibfab routes --save' and --lanes"
        )
        assert evidence.count(why) == 1


def test_lanes_stored_later_are_judged_again(tmp_path: Path) -> None:
    from tests.fabric.test_route_lanes_store import lanes_of

    path, sid = ring_store(tmp_path / "ring.db", "dfsssp", with_lanes=False)
    svc = FabricService(open_session(db=path))
    view = svc.load_view()
    assert view is not None
    first = svc.routes(view, None)
    assert first.judged is not None and [f.kind for f in first.errors] == [CREDIT_LOOP_KIND]
    with Store.open(path) as store:  # the same tables, at the same time, now with their lanes
        t = store.load_routes(sid)
        stamp = store.routes_stamp(sid)
        assert t is not None and stamp is not None
        store.save_routes(sid, t, None, source="dfsssp", taken_at=stamp[0], lanes=lanes_of("dfsssp"))
    second = svc.routes(view, None)
    assert second is not first and second.judged is not None and second.errors == ()
    assert second.judged.credit.lanes_known
