"""Fabric map bandwidth mode (``w``) and the per-cable figures behind it, from a stored sweep in the
format ``fabric.app.sweeps.sweep.save`` writes (each pair with its route)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.app.readmodel.service import FabricService
from fabric.app.session import open_session
from tests.tui.test_tui import SIZE, run_async, settle, text_of
from tests.tui_data import build_store, save_sweep, uplinks
from topology.model import Fabric, Link
from tui.app import build_app
from tui.mapdata import share_status
from tui.screens.fabric_map import FabricMapScreen
from tui.widgets.heatmap import HeatMap


@pytest.fixture
def swept(tmp_path: Path) -> tuple[Path, Fabric, Link, Link, int]:
    path, fabric, _, _ = build_store(tmp_path / "bw.db")
    ups = uplinks(fabric)
    slow, fast = ups[0], ups[1]
    return path, fabric, slow, fast, save_sweep(path, fabric, slow, fast)


def test_per_cable_figures_take_each_pairs_last_attempt(swept: tuple[Path, Fabric, Link, Link, int]) -> None:
    path, _, slow, fast, sid = swept
    bw = FabricService(open_session(db=path)).sweep_bandwidth()
    assert bw is not None and bw.sweep_id == sid
    s = bw.cables[slow.key]
    assert (s.pairs, s.min_share, s.median_share) == (2, 0.3, 0.35)  # 40 % and the re-test's 30 %
    assert s.median_gbps == 140.0
    f = bw.cables[fast.key]
    assert (f.pairs, f.median_share) == (1, 0.95)
    assert (share_status(0.35), share_status(0.95), share_status(0.8), share_status(None)) == (
        "critical",
        "ok",
        "watch",
        "no data",
    )


def test_no_sweep_gives_none(tmp_path: Path) -> None:
    path = build_store(tmp_path / "none.db")[0]
    assert FabricService(open_session(db=path)).sweep_bandwidth() is None


@run_async
async def test_map_bandwidth_mode_shades_by_share_and_names_the_cable(
    swept: tuple[Path, Fabric, Link, Link, int],
) -> None:
    path, _, _, _, sid = swept
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("m")
        await pilot.pause(0.1)
        screen = app.screen
        assert isinstance(screen, FabricMapScreen)
        await pilot.press("w")
        for _ in range(1200):  # a 60 s deadline, not a speed check
            await pilot.pause(0.05)
            if screen.bandwidth is not None:
                break
        heat = screen.query_one(HeatMap)
        assert screen.bandwidth_mode and f"measured bandwidth, sweep #{sid}" in text_of(app, "#map-title")
        # the health map's cursor cell (leaf-su01-r0 x spine-01) holds the slow cable
        assert heat.grid.cells[(0, 0)].status == "critical"
        cell = text_of(app, "#map-cell")
        assert "leaf-su01-r0 x spine-01: 1 cable(s)" in cell
        assert (
            "leaf-su01-r0/5 - spine-01/1  4xNDR: 35% of line rate (median of 2 pairs, min 30%, 140 Gb/s)"
            in cell
        )
        await pilot.press("right")
        assert "spine-02" in text_of(app, "#map-cell") and "95% of line rate" in text_of(app, "#map-cell")
        assert heat.grid.cells[(0, 1)].status == "ok"
        await pilot.press("down")
        assert "no pair of the sweep crossed it" in text_of(app, "#map-cell")
        await pilot.press("w")
        assert not screen.bandwidth_mode and "worst" in text_of(app, "#map-cell")
