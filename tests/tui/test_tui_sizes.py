"""Usable at 80x24: every table takes the focus with tab and is then on screen, whatever is above
it; a panel below the tables is reached by scrolling; a long reason ends in an ellipsis in its
table and is whole in the panel that describes the highlighted row."""

from __future__ import annotations

from pathlib import Path

from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from fabric.app.readmodel.service import FabricService
from fabric.app.session import open_session
from tests.tui.test_tui import run_async, settle, table_rows, text_of
from tests.tui_data import T0, build_store, record_operations, save_sweep, uplinks
from tui.app import IbfabApp, build_app

SMALL = (80, 24)


def on_screen(app: IbfabApp, widget: DataTable[object] | Static) -> bool:
    """Some of the widget's rows are inside the terminal."""
    region = widget.region
    return region.height > 0 and region.y < SMALL[1] and region.y + region.height > 0


@run_async
async def test_every_table_takes_focus_with_tab_and_is_then_on_screen(tmp_path: Path) -> None:
    path, fabric, ber_bad, _ = build_store(tmp_path / "tui.db")
    ups = uplinks(fabric)
    save_sweep(path, fabric, ups[0], ups[1])
    record_operations(path, fabric, ber_bad)
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None, clock=lambda: T0 + 3600)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot, app)
        for key, tables in (
            ("o", ("ov-worst",)),
            ("p", ("sweeps", "pairs", "suspects")),
            ("c", ("ops-open", "ops-audit")),
            ("r", ("advice",)),
            ("e", ("anomalies",)),
        ):
            await pilot.press(key)
            await pilot.pause(0.1)
            for table_id in tables:
                for _ in range(12):
                    if app.focused is not None and app.focused.id == table_id:
                        break
                    await pilot.press("tab")
                table = app.focused
                assert isinstance(table, DataTable) and table.id == table_id, (key, table)
                await pilot.pause(0.1)
                assert on_screen(app, table), (key, table_id, table.region)
        # the last panel of the overview (the alerts) is reached by scrolling, not by a taller terminal
        await pilot.press("o")
        await pilot.pause(0.1)
        body = app.screen.query_one("#ov-body", VerticalScroll)
        alerts = app.screen.query_one("#ov-alerts", Static)

        def shown_lines() -> int:
            return body.region.intersection(alerts.region).height

        body.scroll_home(animate=False)
        await pilot.pause(0.1)
        assert shown_lines() < alerts.outer_size.height  # not all there at the top
        body.scroll_end(animate=False)
        await pilot.pause(0.1)
        assert shown_lines() == alerts.outer_size.height  # whole once scrolled


@run_async
async def test_long_reasons_end_in_an_ellipsis_and_are_whole_in_the_panel(tmp_path: Path) -> None:
    path, *_ = build_store(tmp_path / "tui.db")
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot, app)
        await pilot.press("e")
        await pilot.pause(0.1)
        row = table_rows(app, "#anomalies")[1]  # the worst finding: a critical cable's reasons
        assert row.endswith("…") and len(row) < 2 * SMALL[0]
        whole = text_of(app, "#anomaly-why")
        cut = row.split("  ")[-1].rstrip("…")
        assert cut in whole and len(whole) > len(cut) + 40
        assert "60000 symbol errors in 15 min at 4xNDR" in whole  # the end of the reason, past the cut


@run_async
async def test_a_wider_terminal_shows_more_of_each_reason(tmp_path: Path) -> None:
    path, *_ = build_store(tmp_path / "tui.db")
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot, app)
        await pilot.press("e")
        await pilot.pause(0.1)
        narrow = table_rows(app, "#anomalies")[1].split("  ")[-1]
        await pilot.resize_terminal(200, 50)
        await pilot.pause(0.3)
        wide = table_rows(app, "#anomalies")[1].split("  ")[-1]
        assert len(wide) > len(narrow) + 60 and wide.startswith(narrow.rstrip("…"))
