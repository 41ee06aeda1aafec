"""The TUI through Textual's Pilot against a real store built from a generated fabric.

Assertions look at posted messages and widget state first; test_tui_snapshots.py has the few
screenshots and test_tui_tmux.py the run in a real terminal.
"""

from __future__ import annotations

import asyncio
import functools
import re
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from textual.pilot import Pilot
from textual.widgets import DataTable, Sparkline, Static

from fabric.app.readmodel.service import FabricService
from fabric.app.session import open_session
from fabric.store import Store
from probes.sweep import SweepStep
from tests.tui_data import T0, build_store, counter_rows, save_sweep, topology_file, uplinks
from topology.model import Fabric, Link
from tui.app import IbfabApp, build_app
from tui.linkquery import parse_query
from tui.messages import ActionApplied, HealthLoaded, OpenDetail, StateLoaded, StoreChanged, ViewLoaded
from tui.progress import Coalescer
from tui.screens.confirm import ConfirmChange
from tui.screens.detail import DetailScreen
from tui.screens.fabric_map import FabricMapScreen
from tui.screens.help import HelpScreen
from tui.screens.links import LinksScreen
from tui.screens.overview import OverviewScreen
from tui.screens.pairs import AccusersScreen
from tui.screens.probes import ProbesScreen
from tui.screens.recommendations import RecommendationsScreen
from tui.widgets.heatmap import HeatMap
from tui.widgets.link_table import LinkTable, row_text

SIZE = (100, 30)


def run_async(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test on a fresh event loop (no asyncio pytest plugin is installed)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return wrapper


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Fabric, Link, Link]:
    return build_store(tmp_path / "tui.db")


async def settle(pilot: Pilot[None], app: IbfabApp) -> None:
    """Wait until the load workers have posted topology and health (a 60 s deadline: the health
    child process starts slowly on a loaded machine)."""
    for _ in range(1200):
        await pilot.pause(0.05)
        if not any(app.loading.values()):
            await pilot.pause(0.05)
            return
    raise AssertionError(f"still loading: {app.loading}")


def text_of(app: IbfabApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def top(app: IbfabApp) -> object:
    """The screen on top (typed plainly, so a test can compare it again after a key)."""
    return app.screen


def table_rows(app: IbfabApp, selector: str) -> list[str]:
    """A DataTable's rows as text, cells joined by two spaces."""
    table = app.screen.query_one(selector, DataTable)
    return ["  ".join(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]


@run_async
async def test_overview_loads_in_order_and_names_the_planted_problems(
    store: tuple[Path, Fabric, Link, Link],
) -> None:
    app = build_app(FabricService(open_session(db=store[0])), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        kinds = [type(m) for m in app.messages_seen]
        assert kinds[:3] == [StateLoaded, ViewLoaded, HealthLoaded]
        assert isinstance(app.screen, OverviewScreen)
        assert app.health is not None and app.health.snapshot_id == 16
        assert "switches 20 (16 leaf, 4 spine)" in text_of(app, "#ov-fabric")
        assert "hosts 8  HCAs 64  links 128" in text_of(app, "#ov-fabric")
        health = text_of(app, "#ov-health")
        assert "critical: 2" in health and "ok: 126" in health
        alerts = text_of(app, "#ov-alerts")
        assert "rail_miswire" in alerts and "dgx-0002" in alerts
        assert "leaf-su01-r0/5 - spine-01/1" in table_rows(app, "#ov-worst")[0]
        assert "2027-01-15 08:15:00 UTC (snapshot #16, 16 stored)" in text_of(app, "#ov-runs")
        # what is wrong, as ibfab status lists it: the two planted links, then the miswired host
        rows = table_rows(app, "#ov-status")
        assert [r.split("  ")[:2] for r in rows] == [["CRITICAL", "cable"]] * 2 + [["ERROR", "host"]]
        assert rows[2].split("  ")[2:] == ["dgx-0002", "wiring", "swap_cables"]
        assert "WHAT IS WRONG (3, worst first; enter opens it)" in text_of(app, "#ov-status-title")
        assert app.focused is app.screen.query_one("#ov-status", DataTable)
        assert "confidence: high" in text_of(app, "#ov-status-why")  # the highlighted entry whole
        await pilot.press("down", "down", "enter")
        await pilot.pause(0.3)
        assert isinstance(app.screen, DetailScreen) and app.screen.guid is not None
        assert "dgx-0002" in text_of(app, "#detail-head")


@run_async
async def test_links_filter_sort_and_open_detail(store: tuple[Path, Fabric, Link, Link]) -> None:
    _, _, ber_bad, flappy = store
    app = build_app(FabricService(open_session(db=store[0])), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("l")
        screen = app.screen
        assert isinstance(screen, LinksScreen)
        table = screen.query_one(LinkTable)
        assert len(table.order) == 128
        # worst first: the BER link (score 0) then the flapping one
        assert [table.rows[i].key for i in table.order[:2]] == [ber_bad.key, flappy.key]
        screen.debounce_s = 30.0  # longer than any pause of a loaded machine
        await pilot.press("slash", *"crit")
        assert screen.filter_text == "crit" and len(table.order) == 128  # debounced: not applied yet
        screen.debounce_s = 0.05
        await pilot.press("backspace", "t")  # the last keystroke restarts the (now short) timer
        for _ in range(1200):  # a 60 s deadline, not a speed check
            await pilot.pause(0.05)
            if len(table.order) != 128:
                break
        assert {table.rows[i].key for i in table.order} == {ber_bad.key, flappy.key}
        assert "2 of 128 links" in text_of(app, "#links-count")
        await pilot.press("ctrl+a", "ctrl+k", *"rail:0 leaf-spine", "enter")
        assert len(table.order) == 8 and all(
            table.rows[i].rail == 0 and table.rows[i].tiers == "leaf-spine" for i in table.order
        )
        assert app.focused is table
        await pilot.press("n")
        names = [(table.rows[i].a_name, table.rows[i].a_port) for i in table.order]
        assert names == sorted(names)
        await pilot.press("down", "enter")
        await pilot.pause(0.3)
        opened = [m for m in app.messages_seen if isinstance(m, OpenDetail)]
        assert opened and opened[-1].link == table.rows[table.order[1]].key
        assert isinstance(app.screen, DetailScreen)


@run_async
async def test_link_detail_shows_counters_history_and_findings(
    store: tuple[Path, Fabric, Link, Link],
) -> None:
    _, _, ber_bad, _ = store
    app = build_app(FabricService(open_session(db=store[0])), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        app.post_message(OpenDetail(link=ber_bad.key))
        await pilot.pause(0.2)
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        for _ in range(1200):  # a 60 s deadline, not a speed check
            await pilot.pause(0.05)
            if screen.history is not None and screen.advice is not None and screen.query(Sparkline):
                break
        head = text_of(app, "#detail-head")
        assert "leaf-su01-r0 port 5  <->  spine-01 port 1" in head and "status CRITICAL  score 0" in head
        assert "symbol errors" in text_of(app, "#detail-findings")
        sparks = list(screen.query(Sparkline))
        # both ends x (symbol errors, link downs, xmit Gb/s); 15 deltas from 16 samples
        assert len(sparks) == 6 and all(len(s.data or []) == 15 for s in sparks)
        assert any(list(s.data or []) == [4000.0] * 15 for s in sparks)
        # every label shows its peak whole (xmit Gb/s was cut after "max")
        labels = [str(w.render()) for w in screen.query(".spark-label")]
        assert len(labels) == 6 and all(re.fullmatch(r"port +\d+ .{13} max [\d.e+-]+", t) for t in labels)
        assert sum(t.endswith("xmit Gb/s     max 53.3") for t in labels) == 2, labels
        assert "isolate_port: leaf-su01-r0:5 <-> spine-01:1" in text_of(app, "#detail-actions")
        await pilot.press("a")
        await pilot.pause(0.3)
        assert isinstance(app.screen, DetailScreen) and app.screen.guid == ber_bad.a.guid
        assert "leaf-su01-r0" in text_of(app, "#detail-head")
        await pilot.press("escape", "escape")
        assert isinstance(app.screen, OverviewScreen)


@run_async
async def test_fabric_map_cursor_describes_the_cable_and_toggles_view(
    store: tuple[Path, Fabric, Link, Link],
) -> None:
    app = build_app(FabricService(open_session(db=store[0])), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("m")
        await pilot.pause(0.1)
        screen = app.screen
        assert isinstance(screen, FabricMapScreen)
        heat = screen.query_one(HeatMap)
        assert (len(heat.grid.row_labels), len(heat.grid.col_labels)) == (16, 4)
        assert "leaf-su01-r0 x spine-01: 1 cable(s), worst CRITICAL" in text_of(app, "#map-cell")
        await pilot.press("right")
        assert heat.cursor == (0, 1)
        assert "leaf-su01-r0 x spine-02: 1 cable(s), worst OK" in text_of(app, "#map-cell")
        await pilot.press("v")
        assert screen.view_name == "rail-unit"
        assert heat.grid.row_labels[:2] == ("rail 0", "rail 1") and len(heat.grid.col_labels) == 2
        assert "rail 0 x su0: 4 cable(s), worst CRITICAL" in text_of(app, "#map-cell")
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert isinstance(app.screen, DetailScreen)


@run_async
async def test_probes_list_each_pair_once_with_retests_and_a_suspect_leads_to_its_accusers(
    store: tuple[Path, Fabric, Link, Link],
) -> None:
    path, fabric, _, _ = store
    ups = uplinks(fabric)
    slow, fast = ups[0], ups[1]
    sid = save_sweep(path, fabric, slow, fast)  # 3 pairs, 4 results: one pair re-tested 380 -> 120
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("p")
        await pilot.pause(0.2)
        screen = app.screen
        assert isinstance(screen, ProbesScreen)
        assert f"SWEEP #{sid} PAIRS: 3 pairs (4 results, 1 re-tested): 2 slow, 0 failed" in text_of(
            app, "#sweep-results"
        )
        pairs = table_rows(app, "#pairs")
        assert len(pairs) == 3  # each pair once, the re-tested one with its history
        assert sum("380 → 120 of 400" in p for p in pairs) == 1
        assert [p.split("  ")[0] for p in pairs] == ["SLOW", "SLOW", "ok"]
        assert "--lab" in text_of(app, "#sweep-backend")
        await pilot.press("s")
        assert screen.running is False  # no lab: refused, nothing started
        suspects = screen.query_one("#suspects", DataTable)
        assert suspects.row_count >= 1 and "leaf-su01-r0/5" in table_rows(app, "#suspects")[0]
        screen.set_focus(suspects)
        await pilot.press("enter")
        await pilot.pause(0.2)
        accusers = app.screen
        assert isinstance(accusers, AccusersScreen) and accusers.slow == 2
        rows = table_rows(app, "#accusers")
        assert rows[0].startswith("slow pair") and rows[1].startswith("slow pair")
        await pilot.press("d")
        await pilot.pause(0.2)
        assert isinstance(app.screen, DetailScreen) and app.screen.link == slow.key
        await pilot.press("escape")
        assert top(app) is accusers
        await pilot.press("escape")
        assert top(app) is screen


def test_progress_coalesces_a_flood_from_a_thread() -> None:
    wakes: list[int] = []
    c = Coalescer[SweepStep](lambda: wakes.append(1))

    def flood() -> None:
        for i in range(10_000):
            c.push(SweepStep(i, 10_000, i, 10_000, 0))

    t = threading.Thread(target=flood)
    t.start()
    t.join()
    assert c.updates == 10_000 and len(wakes) == 1  # nobody took it: one wake-up, not 10,000
    last = c.take()
    assert last is not None and last.round == 9_999
    c.push(SweepStep(1, 1, 1, 1, 0))
    assert len(wakes) == 2


@run_async
async def test_recommendation_apply_shows_cli_plan_and_cancel_changes_nothing(
    store: tuple[Path, Fabric, Link, Link], tmp_path: Path
) -> None:
    app = build_app(FabricService(open_session(db=store[0])), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("r")
        await pilot.pause(0.3)
        screen = app.screen
        assert isinstance(screen, RecommendationsScreen)
        kinds = [(a.kind, a.target) for a in screen.advice]
        assert ("isolate_port", "leaf-su01-r0:5 <-> spine-01:1") in kinds
        # without --lab the TUI cannot ask the subnet manager: what that holds back is said, and why
        note = text_of(app, "#advice-note")
        head = f"{len(kinds)} recommendation(s); enter shows the plan of the highlighted one\n"
        assert note.startswith(head + "held back: NCCL_IB_ADAPTIVE_ROUTING, ")
        assert "which need whether the switches route adaptively (AR)" in note
        assert "the TUI asks the subnet manager only on a lab" in note and "--ssh SM-HOST" in note
        index = kinds.index(("isolate_port", "leaf-su01-r0:5 <-> spine-01:1"))
        for _ in range(index):
            await pilot.press("down")
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert isinstance(app.screen, ConfirmChange)
        plan = screen.last_plan
        await pilot.press("escape")
        await pilot.pause(0.2)
    applied = [m for m in app.messages_seen if isinstance(m, ActionApplied)]
    assert applied and not applied[-1].ok and "not confirmed" in applied[-1].result
    with Store.open(store[0]) as s:
        assert s.audit_log() == []
    # the same plan text as `ibfab isolate PORT` (a dry run) prints
    from tui.program import main

    topo = topology_file(tmp_path / "fabric.topo")
    out = CliRunner().invoke(
        main,
        [
            "isolate",
            "leaf-su01-r0:5",
            "--input",
            str(topo),
            "--db",
            str(store[0]),
            "--reason",
            "link is critical",
        ],
    )
    assert out.exit_code == 0, out.output
    # both print fabric.app.advice.recommend.isolation_plan_text
    assert "leaf-su01-r0" in plan and plan + "\ndry run: nothing changed" in out.output


@run_async
async def test_help_lists_every_key_of_the_current_screen(store: tuple[Path, Fabric, Link, Link]) -> None:
    app = build_app(FabricService(open_session(db=store[0])), poll_seconds=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        for screen_key, screen_type in (
            ("l", LinksScreen),
            ("m", FabricMapScreen),
            ("r", RecommendationsScreen),
        ):
            await pilot.press(screen_key)
            await pilot.pause(0.1)
            under = app.screen
            assert isinstance(under, screen_type)
            await pilot.press("question_mark")
            help_screen = app.screen
            assert isinstance(help_screen, HelpScreen)
            text = text_of(app, "#help-text")
            assert f"KEYS OF THE {screen_type.NAME.upper()} SCREEN" in text
            # written for operators: panes by what they are, never by internal ids (IN THE OV-BODY)
            ids = {w.id.upper() for w in under.query("*") if w.id}
            headings = [line for line in text.splitlines() if line.startswith("IN ")]
            assert headings and not [h for h in headings if any(i in h.split() for i in ids)], headings
            assert all("(TAB MOVES FOCUS)" in h and h.startswith("IN THE ") for h in headings)
            lines = text.splitlines()
            # every key bound on the app and on this screen, with its description, on one line
            for node in (app, under):
                for _, binding in node._bindings:
                    if binding.description and not binding.system:
                        shown = app.get_key_display(binding)
                        assert any(
                            shown in line.split()[: line.split().index(binding.description.split()[0])]
                            and binding.description in line
                            for line in lines
                            if binding.description.split()[0] in line.split()
                        ), (binding.key, binding.description)
            await pilot.press("escape")
            assert app.screen is under


@run_async
async def test_live_refresh_when_a_collector_writes(store: tuple[Path, Fabric, Link, Link]) -> None:
    path, fabric, _, _ = store
    app = build_app(FabricService(open_session(db=path)), poll_seconds=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.pause(0.5)
        with Store.open(path) as s:  # what `ibfab counters collect` does: another snapshot, same topology
            when = T0 + 16 * 60.0
            s.save_counter_snapshot(when, "synthetic", 1, counter_rows(fabric, when, 16, {}))
        for _ in range(1200):  # a 60 s deadline, not a speed check
            await pilot.pause(0.05)
            if app.health is not None and app.health.snapshot_id == 17:
                break
        changed = [m for m in app.messages_seen if isinstance(m, StoreChanged)]
        assert changed and changed[0].snapshot_id == 17 and changed[0].topology_id == 1
        assert app.health is not None and app.health.snapshot_id == 17
        # the topology did not change, so it was not reloaded
        assert sum(isinstance(m, ViewLoaded) for m in app.messages_seen) == 1


@run_async
async def test_empty_store_says_what_to_do(tmp_path: Path) -> None:
    """No store yet: the UI says what to run, every screen is empty, and looking creates no store
    (as the CLI's read-only commands: an operator's typo in --db leaves no stray file)."""
    app = build_app(FabricService(open_session(db=tmp_path / "empty.db")), poll_seconds=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert "no topology stored yet (run: ibfab discover --save)" in text_of(app, "#ov-fabric")
        await pilot.press("l")
        assert len(app.screen.query_one(LinkTable).order) == 0
        for key in ("p", "c", "o"):  # probes, changes (sweeps, audit log, runs), overview
            await pilot.press(key)
            await settle(pilot, app)
    assert not (tmp_path / "empty.db").exists()


def test_rows_read_without_colour(store: tuple[Path, Fabric, Link, Link]) -> None:
    svc = FabricService(open_session(db=store[0]))
    view = svc.load_view()
    assert view is not None
    rows = svc.rows_with_health(view, svc.health())
    text = row_text(rows[view.row_of[store[2].key]])
    assert text.startswith("CRITICAL 0     1.") and "leaf-su01-r0" in text and "4xNDR" in text


def test_query_words() -> None:
    q = parse_query("status:warn ok tier:hca-leaf leaf-spine rail:2 group:1 DGX-0042")
    assert q.statuses == ("warn", "ok") and q.tiers == ("hca-leaf", "leaf-spine")
    assert (q.rails, q.groups, q.words) == ((2,), (1,), ("dgx-0042",))


def test_no_terminal_prints_the_overview_report(store: tuple[Path, Fabric, Link, Link]) -> None:
    from tui.program import main

    out = CliRunner().invoke(main, ["tui", "--db", str(store[0])])
    assert out.exit_code == 0, out.output
    assert out.output.startswith("FABRIC\nsource generated rail-small\nswitches 20 (16 leaf, 4 spine)")
    assert "CRITICAL   0  leaf-su01-r0/5 - spine-01/1" in out.output
    assert "ALERTS (3)\ncritical: 2  error: 1  warning: 0  info: 0" in out.output
    # then ibfab status's list, the same as the CLI's (the TUI's health window: the last hour)
    status = out.output.split("WHAT IS WRONG (ibfab status)\n", 1)[1]
    assert status.startswith("3 things wrong in generated rail-small (2 critical, 1 error), worst first:")
    assert (
        "   action: swap_cables: dgx-0002" in status and "  routes: nothing read: not judged here" in status
    )


def test_tui_lab_demo_opens_the_demos_store(tmp_path: Path) -> None:
    from fabric.store import default_db_path
    from tui.program import main

    empty = CliRunner().invoke(main, ["tui", "--lab", "demo"])
    assert empty.exit_code == 0 and "no topology stored yet" in empty.stdout  # no demo run yet
    build_store(default_db_path().parent / "demo.db")  # what `ibfab demo` leaves behind
    out = CliRunner().invoke(main, ["tui", "--lab", "demo"])
    assert out.exit_code == 0, out.output
    assert "switches 20 (16 leaf, 4 spine)" in out.stdout and "demo.db" in out.stderr
    other = CliRunner().invoke(main, ["tui", "--lab", "other"])  # any other lab: the default store
    assert "no topology stored yet" in other.stdout
    explicit = CliRunner().invoke(main, ["tui", "--lab", "demo", "--db", str(tmp_path / "x.db")])
    assert "no topology stored yet" in explicit.stdout and "demo.db" not in explicit.stderr
    assert not (tmp_path / "x.db").exists()  # the report only looked
