"""Names are text, never markup: a fabric whose node descriptions are Textual/Rich markup
(``leaf[/]x`` used to raise MarkupError; ``[b]``, ``[link=...]`` and ``[@click=...]`` could restyle a
name, hide it or bind an action to it) opened in every screen: nothing fails, and every name is
shown exactly as the fabric spells it.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets._toast import Toast

from fabric.app.readmodel.service import FabricService
from fabric.app.session import open_session
from fabric.store import Store
from tests.tui.test_tui import run_async, settle
from tests.tui_data import SNAPSHOT_EVERY_S, T0, counter_rows, record_operations, save_sweep, uplinks
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from tui.app import IbfabApp, build_app
from tui.messages import ActionApplied, LoadFailed, StoreWarning
from tui.screens.confirm import ConfirmChange
from tui.screens.detail import DetailScreen
from tui.screens.help import HelpScreen
from tui.screens.pairs import AccusersScreen

# description in the generated fabric -> the one this fabric has. The planted faults sit on these:
# the first uplink (high BER) joins the first two, the sixth (flapping) the next two.
EVIL = {
    "MF0;leaf-su01-r0:MQM9700/U1": "leaf[/]x",
    "MF0;spine-01:MQM9700/U1": "[b]bold[/b]",
    "MF0;leaf-su01-r1:MQM9700/U1": "leaf[@click=app.quit]q[/]",
    "MF0;spine-02:MQM9700/U1": "[link=x]y[/link]",
}
EVIL_HOST = "[red]dgx-0001[/red]"  # an HCA's host name (its description is "HOST mlx5_N")
NAMES = (*EVIL.values(), EVIL_HOST)
SIZE = (160, 45)  # wide enough that no name is cut short


def evil_store(path: Path, snapshots: int = 16) -> Path:
    """tests.tui_data's store, with markup for names, a sweep across the bad cable and the
    changes log (so every screen has rows that name them)."""
    text = to_ibnetdiscover(generate("rail-small", ["miswire:dgx-0002:1:2"]))
    for description, evil in EVIL.items():
        text = text.replace(f'"{description}"', f'"{evil}"')
    text = text.replace('"dgx-0001 mlx5_', f'"{EVIL_HOST} mlx5_')
    fabric = parse_ibnetdiscover(text.splitlines(), "evil names")
    ups = uplinks(fabric)
    ber_bad, flappy = ups[0], ups[5]
    ends = (ber_bad.a, ber_bad.b, flappy.a, flappy.b)
    assert {fabric.nodes[e.guid].description for e in ends} == set(EVIL.values())
    bad: dict[tuple[str, int], dict[str, int]] = {
        (ber_bad.a.guid, ber_bad.a.port): {"symbol_errors": 4000},
        (flappy.b.guid, flappy.b.port): {"link_downed": 1},
    }
    with Store.open(path) as store:
        topo = store.save_topology(
            fabric, text, "ibnetdiscover", "evil names", label="test", taken_at=T0 - 10
        )
        for i in range(snapshots):
            when = T0 + i * SNAPSHOT_EVERY_S
            store.save_counter_snapshot(when, "synthetic", topo, counter_rows(fabric, when, i, bad))
    save_sweep(path, fabric, ber_bad, flappy)
    record_operations(path, fabric, ber_bad)
    return path


def screen_text(app: IbfabApp) -> str:
    """What the terminal shows, as text (the screenshot's characters, styles dropped)."""
    svg = app.export_screenshot()
    lines: dict[str, list[tuple[float, str]]] = {}
    for x, y, body in re.findall(r'<text[^>]* x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', svg, re.S):
        lines.setdefault(y, []).append((float(x), html.unescape(re.sub(r"<[^>]+>", "", body))))
    rows = [
        "".join(part for _, part in sorted(parts))
        for _, parts in sorted(lines.items(), key=lambda kv: float(kv[0]))
    ]
    return "\n".join(rows).replace("\xa0", " ")


def shown(app: IbfabApp) -> set[str]:
    text = screen_text(app)
    return {name for name in NAMES if name in text}


async def _open(pilot: Pilot[None], *keys: str) -> None:
    await pilot.press(*keys)
    await pilot.pause(0.3)


@run_async
async def test_every_screen_shows_markup_names_as_written(tmp_path: Path) -> None:
    path = evil_store(tmp_path / "evil.db")
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        seen: dict[str, set[str]] = {}
        # overview: the worst cables by name; anomalies: the planted faults by element
        seen["overview"] = shown(app)
        await _open(pilot, "e")
        seen["anomalies"] = shown(app)
        await _open(pilot, "l")
        seen["links"] = shown(app)
        await _open(pilot, "slash", *"spine", "enter")  # a filter: the names in its matches
        seen["links filtered"] = shown(app)
        await _open(pilot, "escape")
        await _open(pilot, "m")
        seen["map"] = shown(app)
        await _open(pilot, "p")
        seen["probes"] = shown(app)
        await _open(pilot, "r")
        seen["advice"] = shown(app)
        await _open(pilot, "c")
        seen["changes"] = shown(app)
        assert app.is_running  # no name's [@click=app.quit] ran

        assert seen["overview"] >= {"leaf[/]x", "[b]bold[/b]"}, seen  # the critical cable's two ends
        assert seen["anomalies"] >= {"leaf[/]x", "[b]bold[/b]"}, seen
        assert seen["links"] >= {"leaf[/]x", "[b]bold[/b]", "[link=x]y[/link]", EVIL_HOST}, seen
        assert "[link=x]y[/link]" in seen["links filtered"], seen
        assert seen["probes"] >= {"leaf[/]x", "[b]bold[/b]", EVIL_HOST}, seen
        assert "leaf[/]x" in seen["advice"], seen
        assert "leaf[/]x" in seen["changes"], seen


@run_async
async def test_detail_accusers_plan_and_help_show_markup_names_as_written(tmp_path: Path) -> None:
    path = evil_store(tmp_path / "evil.db")
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await _open(pilot, "enter")  # the worst cable of the overview
        assert isinstance(app.screen, DetailScreen)
        assert shown(app) >= {"leaf[/]x", "[b]bold[/b]"}
        await _open(pilot, "a")  # its lower end: the leaf, with its ports and their peers
        assert isinstance(app.screen, DetailScreen)
        assert shown(app) >= {"leaf[/]x", "[b]bold[/b]", "[link=x]y[/link]", EVIL_HOST}
        await _open(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        await _open(pilot, "escape")

        await _open(pilot, "p", "tab")  # the probes screen, then the suspects' table
        for _ in range(3):
            if isinstance(app.screen, AccusersScreen):
                break
            await _open(pilot, "tab", "enter")
        assert isinstance(app.screen, AccusersScreen), app.screen
        assert shown(app) >= {"leaf[/]x", EVIL_HOST}  # the suspect: the leaf's cable to that host

        await _open(pilot, "r", "enter")  # the plan of the first recommendation
        assert isinstance(app.screen, ConfirmChange)
        assert "leaf[/]x" in shown(app)
        await _open(pilot, "escape")
        assert app.is_running


@run_async
async def test_notifications_show_markup_names_as_written(tmp_path: Path) -> None:
    """Errors, store warnings and results of a change name the fabric's elements too."""
    path = evil_store(tmp_path / "evil.db")
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot, app)
        app.post_message(LoadFailed("health", "perfquery failed on leaf[/]x"))
        app.post_message(StoreWarning("snapshot #3 of [b]bold[/b] skipped"))
        app.post_message(ActionApplied("leaf[@click=app.quit]q[/]", "isolated [link=x]y[/link] port 2", True))
        await pilot.pause(0.5)
        toasts = "\n".join(str(toast.render()) for toast in app.screen.query(Toast))
        assert "perfquery failed on leaf[/]x" in toasts and "snapshot #3 of [b]bold[/b] skipped" in toasts
        assert "isolated [link=x]y[/link] port 2" in toasts and "leaf[@click=app.quit]q[/]" in toasts
        assert "perfquery failed on leaf[/]x" in screen_text(app)  # the status line says it too
        assert app.is_running
