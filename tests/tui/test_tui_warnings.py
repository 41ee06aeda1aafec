"""The store's warnings reach the operator as TUI notifications, once each, never as lines on the
stderr the screen is drawn over: a damaged counter snapshot (read by the health process) and a
damaged newest topology (read by the UI's own worker); a clean store warns of nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fabric.app.readmodel.service import FabricService
from fabric.app.session import open_session
from fabric.store import Store
from tests.fabric.test_store_heal import flip_bit
from tests.tui.test_tui import SIZE, run_async, settle
from tests.tui_data import T0, build_store, topology_file
from topology.model import Fabric
from tui.app import build_app
from tui.messages import StoreWarning

DAMAGED_SNAPSHOT = 17


def damaged_store(tmp_path: Path) -> tuple[Path, int]:
    """The test store with a 17th counter snapshot (a key block of its own: the 16 before it are one
    chain of equal changes, no bytes of their own to flip) and a second, newest topology; then one
    bit flipped in each of those two. Returns (path, the damaged topology's id)."""
    path, fabric, _, _ = build_store(tmp_path / "tui.db", snapshots=DAMAGED_SNAPSHOT)
    raw = topology_file(tmp_path / "fabric.topo").read_text()
    with Store.open(path) as store:
        one_less = Fabric.build(list(fabric.nodes.values()), list(fabric.links)[1:])  # bytes of its own
        newest = store.save_topology(one_less, raw, "ibnetdiscover", "again", taken_at=T0 + 5)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    flip_bit(path, "counter_blocks", "data", f"snapshot_id = {DAMAGED_SNAPSHOT}")
    flip_bit(path, "topology_snapshots", "fabric_json_zlib", f"id = {newest}")
    return path, newest


@run_async
async def test_store_warnings_are_notifications_not_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path, newest = damaged_store(tmp_path)
    capfd.readouterr()
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.view is not None and app.view.topology.id == newest - 1  # the older one, read
        assert app.health is not None
        await pilot.press("g")  # a reload reads the same damage again: no second notification
        await settle(pilot, app)
        shown = [n.message for n in app._notifications if n.title == "store warning"]
        posted = [m.text for m in app.messages_seen if isinstance(m, StoreWarning)]
    assert any(
        f"topology snapshot {newest}" in w and f"using topology snapshot {newest - 1}" in w for w in shown
    )
    assert any(
        f"counter snapshot {DAMAGED_SNAPSHOT} skipped: damaged (checksum mismatch)" in w for w in shown
    )
    assert len(shown) == len(set(shown)) == len(app.warnings) and len(posted) > len(shown)
    out, err = capfd.readouterr()
    assert "skipped" not in err + out and "topology snapshot" not in err + out
    assert app._log_handlers is None  # the logger's own handlers are back


@run_async
async def test_a_clean_store_warns_of_nothing(tmp_path: Path) -> None:
    path, _, _, _ = build_store(tmp_path / "tui.db")
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.warnings == [] and not [m for m in app.messages_seen if isinstance(m, StoreWarning)]
