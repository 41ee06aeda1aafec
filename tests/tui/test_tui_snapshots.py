"""Every screen at 80x24 and at 200x50 (pytest-textual-snapshot), on the deterministic test store
with a fixed clock: what an operator sees, kept so a change to it is a reviewed change.

Update after an intended change with ``pytest tests/tui/test_tui_snapshots.py --snapshot-update``
and look at the report's pictures before committing them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from fabric.app.readmodel.service import FabricService
from fabric.app.session import open_session
from tests.tui_data import T0, build_store, record_operations, save_sweep, uplinks
from tests.tui_routes_data import CREDIT_LOOP, routed_store
from tui.app import IbfabApp, build_app
from tui.screens import confirm
from tui.screens.detail import DetailScreen

SIZES = {"80x24": (80, 24), "200x50": (200, 50)}
Steps = Callable[[Pilot[None], IbfabApp], Awaitable[None]]


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> IbfabApp:
    path, fabric, ber_bad, _ = build_store(tmp_path / "tui.db")
    ups = uplinks(fabric)
    save_sweep(path, fabric, ups[0], ups[1])
    record_operations(path, fabric, ber_bad)
    # the plan window's name box stays closed while the picture is taken (no blinking cursor)
    monkeypatch.setattr(confirm, "GRACE_S", 3600.0)
    return build_app(FabricService(open_session(db=path)), poll_seconds=None, clock=lambda: T0 + 3600)


def keys(*pressed: str) -> Steps:
    async def run(pilot: Pilot[None], app: IbfabApp) -> None:
        await pilot.press(*pressed)

    return run


async def cable_detail(pilot: Pilot[None], app: IbfabApp) -> None:
    await pilot.press("l", "enter")  # the worst cable
    screen = app.screen
    for _ in range(1200):  # a 60 s deadline, not a speed check
        await pilot.pause(0.05)
        if isinstance(screen, DetailScreen) and screen.history is not None and screen.advice is not None:
            return


async def host_detail(pilot: Pilot[None], app: IbfabApp) -> None:
    await pilot.press("e", "slash", *"miswire", "enter", "down", "enter")  # the miswired HCA
    screen = app.screen
    for _ in range(1200):  # a 60 s deadline, not a speed check
        await pilot.pause(0.05)
        if isinstance(screen, DetailScreen) and screen.history is not None and screen.advice is not None:
            return


async def switch_detail(pilot: Pilot[None], app: IbfabApp) -> None:
    await cable_detail(pilot, app)  # the worst cable runs leaf to spine: its end A is a switch
    cable = app.screen
    await pilot.press("a")
    screen = app.screen
    for _ in range(1200):  # a 60 s deadline, not a speed check
        await pilot.pause(0.05)
        if screen is not cable and isinstance(screen, DetailScreen) and screen.history is not None:
            return


async def accusers(pilot: Pilot[None], app: IbfabApp) -> None:
    await pilot.press("p")
    await pilot.pause(0.1)
    app.screen.set_focus(app.screen.query_one("#suspects", DataTable))
    await pilot.press("enter")


STEPS: dict[str, Steps] = {
    "overview": keys(),
    "anomalies": keys("e"),
    "links": keys("l", "slash", *"crit", "enter"),
    "map": keys("m", "right"),
    "cable": cable_detail,
    "hca": host_detail,
    "switch": switch_detail,
    "probes": keys("p"),
    "accusers": accusers,
    "recommendations": keys("r"),
    "plan": keys("r", "enter"),
    "changes": keys("c"),
    "help": keys("l", "question_mark"),
}


def after_load(steps: Steps) -> Any:
    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, IbfabApp)
        for _ in range(1200):  # a 60 s deadline, not a speed check
            await pilot.pause(0.05)
            if not any(app.loading.values()):
                break
        await steps(pilot, app)
        await pilot.pause(0.3)
        # then until every widget has handled what it was sent: a verdict that came late (the
        # routes' child process on a busy machine) redraws tables whose column widths are set
        # on a later message; a snapshot taken between the two shows them cut short
        for _ in range(3):
            await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("screen", STEPS)
def test_screen(snap_compare: Any, app: IbfabApp, screen: str, size: str) -> None:
    assert snap_compare(app, terminal_size=SIZES[size], run_before=after_load(STEPS[screen]))


@pytest.fixture
def routes_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> IbfabApp:
    """A fat tree whose stored tables hold a credit loop (and the warnings its routes cause); the
    store named relative to the working directory, so the commands on screen read the same each run."""
    monkeypatch.chdir(tmp_path)
    routed_store(Path("routes.db"), CREDIT_LOOP)
    return build_app(
        FabricService(open_session(db=Path("routes.db"))), poll_seconds=None, clock=lambda: T0 + 3600
    )


@pytest.mark.parametrize("size", SIZES)
def test_routes_screen(snap_compare: Any, routes_app: IbfabApp, size: str) -> None:
    assert snap_compare(routes_app, terminal_size=SIZES[size], run_before=after_load(keys("t")))
