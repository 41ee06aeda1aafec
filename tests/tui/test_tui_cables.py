"""A cable's detail in the TUI carries its inventory: the module at each end (vendor, part number,
serial, length, type, temperature, per-lane power), the FEC each port runs and each node's
temperature, from the real NDR ibdiagnet run imported as ``ibfab counters collect --ibdiagnet``
does; with no run kept, the panel says there is no inventory.

The run is imported by a path relative to tests/data (the capture is read in place), so the
source the panel names is the same in every checkout and the picture at 80x24 is stable.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from fabric.app.discovery.ibdiagnet import import_ibdiagnet_run
from fabric.app.readmodel.service import FabricService
from fabric.app.session import StoreAccess, open_session
from fabric.present.cables import NO_INVENTORY
from tests.conftest import REALDATA
from tests.tui.test_tui import SIZE, run_async, settle, text_of
from tests.tui_data import T0, build_store
from tui.app import IbfabApp, build_app
from tui.messages import OpenDetail
from tui.screens.detail import DetailScreen

RUN = Path("realdata") / "ibdiagnet"  # relative to REALDATA.parent
CABLES = REALDATA / "ibdiagnet" / "garyli-ndr-272nodes-ibdiagnet2.cables"
HCA = "is-north-7-compute-1 mlx5_0"


def imported_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(REALDATA.parent)
    db = tmp_path / "ibdiag.db"
    run = import_ibdiagnet_run(StoreAccess(db), RUN)
    assert run.modules > 0 and run.topology_saved
    return db


async def open_hca_cable(pilot: Pilot[None], app: IbfabApp) -> DetailScreen:
    """The detail of the HCA's port-1 cable, once its inventory panel is filled in."""
    assert app.view is not None
    guid = app.service.find_node(app.view, HCA)
    assert guid is not None
    app.post_message(OpenDetail(link=app.view.links[app.view.port_row[(guid, 1)]].key))
    for _ in range(1200):  # a 60 s deadline, not a speed check
        await pilot.pause(0.05)
        screen = app.screen
        if isinstance(screen, DetailScreen) and screen.cable is not None:
            await pilot.pause(0.1)
            return screen
    raise AssertionError("the cable's inventory was not read")


def raw_field(serial: str, field: str) -> str:
    """``field`` of the .cables record whose SN is ``serial``, from the raw file."""
    text = CABLES.read_text()
    at = text.index(f"SN: {serial}") if f"SN: {serial}" in text else text.index(serial)
    start = text.rfind("\nPort=", 0, at)
    end = text.find("\nPort=", at)
    m = re.search(rf"^{field}\s*:\s*(.+?)\s*$", text[start:end], re.M)
    assert m is not None, (field, text[start:end][:300])
    return m.group(1)


@run_async
async def test_cable_detail_shows_both_modules_from_the_imported_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = imported_store(tmp_path, monkeypatch)
    app = build_app(FabricService(open_session(db=db)), poll_seconds=None, clock=lambda: T0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        screen = await open_hca_cable(pilot, app)
        text = text_of(app, "#detail-cable")
        assert text.startswith(f"Cable {HCA}:1 <-> ")
        serials = re.findall(r"^serial +(\S+)(?: +(\S+))?", text, re.M)
        found = [s for pair in serials for s in pair if s]
        assert len(found) == 2  # one module at each end, each as the raw file records it
        for serial in found:
            assert raw_field(serial, "Vendor") in text and raw_field(serial, "PN") in text
        assert text.count("RS_FEC_544_514") == 2 and "RX power per lane" in text
        assert f"inventory: ibdiagnet run {RUN}/garyli-ndr-272nodes-ibdiagnet2.db_csv at 2025-03-31" in text
        # read once per store state: a second cable reuses it
        first = app._inventory
        await pilot.press("escape")
        await open_hca_cable(pilot, app)
        assert app._inventory is first and screen is not app.screen


@run_async
async def test_no_inventory_kept_says_so(tmp_path: Path) -> None:
    path, _, ber_bad, _ = build_store(tmp_path / "tui.db")
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None, clock=lambda: T0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        app.post_message(OpenDetail(link=ber_bad.key))
        for _ in range(1200):  # a 60 s deadline, not a speed check
            await pilot.pause(0.05)
            if isinstance(app.screen, DetailScreen) and app.screen.cable is not None:
                break
        await pilot.pause(0.1)
        text = text_of(app, "#detail-cable")
        assert NO_INVENTORY in text.replace("\n", " ") and "serial" not in text


def test_cable_inventory_at_80x24(snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = imported_store(tmp_path, monkeypatch)
    app = build_app(FabricService(open_session(db=db)), poll_seconds=None, clock=lambda: 1743464598.0 + 3600)

    async def run_before(pilot: Pilot[None]) -> None:
        for _ in range(1200):  # a 60 s deadline, not a speed check
            await pilot.pause(0.05)
            if not any(app.loading.values()):
                break
        screen = await open_hca_cable(pilot, app)
        for _ in range(100):  # the history and advice workers done: nothing redraws after the picture
            if screen.history is not None and screen.advice is not None:
                break
            await pilot.pause(0.05)
        screen.query_one("#detail-cable").scroll_visible(top=True, animate=False)
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_one_imported_run_the_overview_says_rates_need_two_readings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tui.cli import overview_text

    db = imported_store(tmp_path, monkeypatch)
    report = overview_text(open_session(db=db))
    assert "one counter reading only (snapshot 1): error and traffic rates need two" in report
    assert "health over" not in report
