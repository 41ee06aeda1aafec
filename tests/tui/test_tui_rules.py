"""The TUI's rules, as a person meets them: typing into a filter never changes screen or opens a
modal (even keys sent in one burst, as a fast typist or a paste sends them), the fabric changes
only after the target's name is typed into the plan window, ``a``/``b`` open the ends they name
whichever order the cable's GUIDs are in, and the history is a stack (escape back one step, a
screen key opens that screen fresh)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual import events
from textual.widgets import Input, Static

from fabric.app.readmodel.service import FabricService
from fabric.app.session import open_session
from fabric.store import Store
from tests.tui.test_tui import SIZE, run_async, settle, text_of, top
from tests.tui_data import build_store
from topology.model import Fabric, Link
from tui.app import IbfabApp, build_app
from tui.messages import ActionApplied, OpenDetail
from tui.screens.anomalies import AnomaliesScreen
from tui.screens.confirm import GRACE_S, ConfirmChange
from tui.screens.detail import DetailScreen
from tui.screens.help import HelpScreen
from tui.screens.links import LinksScreen
from tui.screens.overview import OverviewScreen
from tui.screens.recommendations import RecommendationsScreen
from tui.widgets.link_table import LinkTable

KEY_NAMES = {"/": "slash", " ": "space", "-": "minus", ":": "colon", "?": "question_mark"}
TARGET = "leaf-su01-r0:5"


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Fabric, Link, Link]:
    return build_store(tmp_path / "tui.db")


def burst(app: IbfabApp, text: str, *named: str) -> None:
    """Queue every key at once, no pause between them (what tmux send-keys or a paste does)."""
    for ch in text:
        key = events.Key(KEY_NAMES.get(ch, ch), ch)
        key.set_sender(app)
        app.post_message(key)
    for name in named:
        key = events.Key(name, "\r" if name == "enter" else None)
        key.set_sender(app)
        app.post_message(key)


async def opened(pilot: object, app: IbfabApp, kind: type) -> None:
    for _ in range(60):
        await asyncio.sleep(0.05)
        if isinstance(app.screen, kind):
            return
    raise AssertionError(f"{kind.__name__} never opened; on {type(app.screen).__name__}")


@run_async
async def test_a_burst_typed_into_the_links_filter_is_text_not_hotkeys(
    store: tuple[Path, Fabric, Link, Link],
) -> None:
    app = build_app(FabricService(open_session(db=store[0])), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("l")
        links = app.screen
        assert isinstance(links, LinksScreen)
        depth = len(app.screen_stack)
        # the keys: / then a filter with 1 and 5 (overview and probes keys) and enter
        burst(app, "/dgx-0001 mlx5_0", "enter")
        for _ in range(1200):  # a 60 s deadline, not a speed check
            await pilot.pause(0.05)
            if links.filter_text == "dgx-0001 mlx5_0" and isinstance(app.focused, LinkTable):
                break
        assert top(app) is links and len(app.screen_stack) == depth
        assert links.query_one(Input).value == "dgx-0001 mlx5_0"
        table = links.query_one(LinkTable)
        assert table.order and all("dgx-0001" in table.rows[i].search for i in table.order)
        assert not any(isinstance(m, ActionApplied) for m in app.messages_seen)
        # the filter focused, every screen key is a letter of the filter
        await pilot.press("slash", "ctrl+a", "ctrl+k", *"oelmprc1234567q?")
        assert top(app) is links and links.query_one(Input).value == "oelmprc1234567q?"


@run_async
async def test_a_screen_key_slash_and_text_in_one_burst_reach_the_new_screens_filter(
    store: tuple[Path, Fabric, Link, Link],
) -> None:
    app = build_app(FabricService(open_session(db=store[0])), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        burst(app, "l/dgx-0001 mlx5_0", "enter")  # from the overview, before links is even built
        for _ in range(1200):  # a 60 s deadline, not a speed check
            await pilot.pause(0.05)
            # the burst's enter taken too: the focus back on the table (until then a ? is text)
            screen = app.screen
            if (
                isinstance(screen, LinksScreen)
                and screen.filter_text == "dgx-0001 mlx5_0"
                and not isinstance(screen.focused, Input)
            ):
                break
        assert [type(s) for s in app.screen_stack] == [OverviewScreen, LinksScreen]
        links = app.screen
        assert isinstance(links, LinksScreen) and links.query_one(Input).value == "dgx-0001 mlx5_0"
        # under a modal a screen key does nothing (it would open a screen over the plan window)
        await pilot.press("question_mark")
        for _ in range(1200):  # the help mounts in its own time on a loaded machine (a deadline)
            if isinstance(app.screen, HelpScreen):
                break
            await pilot.pause(0.05)
        assert [type(s) for s in app.screen_stack] == [OverviewScreen, LinksScreen, HelpScreen]
        await pilot.press("l", "e", "1")
        assert len(app.screen_stack) == 3
        await pilot.press("escape")
        assert top(app) is links


@run_async
async def test_a_burst_typed_into_the_anomalies_filter_is_text(
    store: tuple[Path, Fabric, Link, Link],
) -> None:
    app = build_app(FabricService(open_session(db=store[0])), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("e")
        screen = app.screen
        assert isinstance(screen, AnomaliesScreen)
        burst(app, "/rail_miswire dgx-0002 1 5 r m")
        for _ in range(1200):  # a 60 s deadline, not a speed check
            await pilot.pause(0.05)
            if screen.filter_text.endswith(" m"):
                break
        assert top(app) is screen and screen.filter_text == "rail_miswire dgx-0002 1 5 r m"


@run_async
async def test_apply_needs_the_target_typed_after_the_plan_is_shown(
    store: tuple[Path, Fabric, Link, Link],
) -> None:
    app = build_app(FabricService(open_session(db=store[0])), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("r")
        await pilot.pause(0.3)
        recs = app.screen
        assert isinstance(recs, RecommendationsScreen)
        index = [(a.kind, a.target) for a in recs.advice].index(
            ("isolate_port", "leaf-su01-r0:5 <-> spine-01:1")
        )
        for _ in range(index):
            await pilot.press("down")
        # enter opens the plan; the name and enter typed ahead in the same burst cannot confirm
        burst(app, "", "enter")
        burst(app, "y" + TARGET, "enter")
        await opened(pilot, app, ConfirmChange)
        modal = app.screen
        assert isinstance(modal, ConfirmChange)
        await pilot.pause(0.1)
        assert top(app) is modal and modal.query_one(Input).value == ""
        # the whole labelled plan: apply and undo commands named
        plan = str(modal.query_one("#confirm-plan", Static).render())
        assert "[opensm apply] ibportstate" in plan and "disable" in plan
        assert "[opensm undo] ibportstate" in plan and "enable" in plan
        assert "[ufm apply]" in plan and "[ufm undo]" in plan
        await pilot.pause(GRACE_S + 0.2)
        await pilot.press("y", "enter")  # a single key answers nothing
        assert top(app) is modal
        await pilot.press("backspace", *"leaf-su01-r0:6", "enter")  # the wrong port
        assert top(app) is modal and "does not match" in text_of(app, "#confirm-prompt")
        with Store.open(store[0]) as s:
            assert s.audit_log() == []
        await pilot.press("backspace", "5", "enter")
        for _ in range(1200):  # a 60 s deadline, not a speed check
            await pilot.pause(0.05)
            if any(isinstance(m, ActionApplied) for m in app.messages_seen):
                break
    # applied through fabric.app.isolation.isolate like `ibfab isolate --apply`: under the fabric's change
    # lock the fabric is read again before anything changes; here there is no fabric on this
    # machine, so the apply is refused with that reason and nothing reaches the fabric or the log
    applied = [m for m in app.messages_seen if isinstance(m, ActionApplied)]
    assert applied and not applied[-1].ok
    assert "ibnetdiscover" in applied[-1].result or "MAD" in applied[-1].result, applied[-1].result
    with Store.open(store[0]) as s:
        assert s.audit_log() == []
    assert applied[-1].target == "leaf-su01-r0:5 <-> spine-01:1"


@run_async
async def test_escape_cancels_the_plan_and_nothing_changes(store: tuple[Path, Fabric, Link, Link]) -> None:
    app = build_app(FabricService(open_session(db=store[0])), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("r")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await opened(pilot, app, ConfirmChange)
        await pilot.pause(GRACE_S + 0.1)
        await pilot.press(*"leaf-su01", "escape")
        assert isinstance(app.screen, RecommendationsScreen)
    with Store.open(store[0]) as s:
        assert s.audit_log() == []


@run_async
async def test_a_and_b_open_the_ends_they_name_on_both_guid_orders(
    store: tuple[Path, Fabric, Link, Link],
) -> None:
    app = build_app(FabricService(open_session(db=store[0])), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        view = app.view
        assert view is not None
        # an uplink whose key starts at the leaf (end A) and a host cable whose key starts at
        # the leaf too, which is end B there (the HCA, lower tier, is A)
        same = next(r for r in app.rows if r.tiers == "leaf-spine" and r.key[0][0] == r.a_guid)
        swapped = next(r for r in app.rows if r.tiers == "hca-leaf" and r.key[0][0] == r.b_guid)
        for row in (same, swapped):
            for key, guid, name in (("a", row.a_guid, row.a_name), ("b", row.b_guid, row.b_name)):
                app.post_message(OpenDetail(link=row.key))
                await opened(pilot, app, DetailScreen)
                cable = app.screen
                await pilot.press(key)
                for _ in range(1200):  # a 60 s deadline, not a speed check
                    await pilot.pause(0.05)
                    if app.screen is not cable:
                        break
                node = app.screen
                assert isinstance(node, DetailScreen) and node.guid == guid, (row.tiers, key)
                assert text_of(app, "#detail-head").startswith(name)
                await pilot.press("escape")
                assert top(app) is cable
                await pilot.press("escape")


@run_async
async def test_history_is_a_stack_and_screen_keys_open_fresh(store: tuple[Path, Fabric, Link, Link]) -> None:
    _, _, ber_bad, _ = store
    app = build_app(FabricService(open_session(db=store[0])), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        home = app.screen
        assert isinstance(home, OverviewScreen)
        await pilot.press("l", "slash", *"spine-01", "enter")
        first_links = app.screen
        assert isinstance(first_links, LinksScreen) and first_links.filter_text == "spine-01"
        await pilot.press("enter")  # the first cable
        await opened(pilot, app, DetailScreen)
        detail = app.screen
        assert isinstance(detail, DetailScreen) and detail.link == ber_bad.key  # worst first
        await pilot.press("r", "l")  # the path: a fresh links screen, not an old detail
        fresh = app.screen
        assert isinstance(fresh, LinksScreen) and fresh is not first_links
        assert fresh.filter_text == "" and len(fresh.query_one(LinkTable).order) == 128
        await pilot.press("escape")
        assert isinstance(app.screen, RecommendationsScreen)
        await pilot.press("escape")
        assert top(app) is detail
        await pilot.press("escape")
        assert top(app) is first_links and first_links.filter_text == "spine-01"
        await pilot.press("escape", "escape", "escape")
        assert top(app) is home and len(app.screen_stack) == 1
