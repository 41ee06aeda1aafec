"""A few screenshots of key screens (pytest-textual-snapshot), on the deterministic test store.

Update after an intended change with ``pytest tests/tui/test_tui_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from fabric.app.readmodel import FabricService
from tests.tui_data import build_store
from tui.app import IbfabApp, build_app


@pytest.fixture
def app(tmp_path: Path) -> IbfabApp:
    path, *_ = build_store(tmp_path / "tui.db")
    return build_app(FabricService(path), poll_seconds=None)


def keys_after_load(*keys: str, wait: float = 0.3) -> Any:
    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, IbfabApp)
        for _ in range(200):
            await pilot.pause(0.05)
            if not any(app.loading.values()):
                break
        await pilot.press(*keys)
        await pilot.pause(wait)

    return run_before


def test_overview(snap_compare: Any, app: IbfabApp) -> None:
    assert snap_compare(app, terminal_size=(100, 30), run_before=keys_after_load())


def test_links_filtered_to_critical(snap_compare: Any, app: IbfabApp) -> None:
    assert snap_compare(
        app, terminal_size=(100, 30), run_before=keys_after_load("l", "slash", *"crit", "enter")
    )


def test_fabric_map(snap_compare: Any, app: IbfabApp) -> None:
    assert snap_compare(app, terminal_size=(100, 30), run_before=keys_after_load("m", "right"))


def test_help_at_80x24(snap_compare: Any, app: IbfabApp) -> None:
    assert snap_compare(app, terminal_size=(80, 24), run_before=keys_after_load("question_mark"))
