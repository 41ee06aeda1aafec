"""The changes screen: open isolations with their age, undo through the same checks and audit as
``ibfab isolate --undo`` (refused inside the re-test window; applied only after the port's name is
typed), the audit log and the daemon's runs with their errors."""

from __future__ import annotations

import time
from pathlib import Path

from fabric.app.readmodel.service import FabricService
from fabric.app.session import open_session
from fabric.store import Store
from tests.tui.test_tui import SIZE, run_async, settle, table_rows, text_of, top
from tests.tui_data import T0, build_store, record_operations
from tui.app import build_app
from tui.messages import ActionApplied
from tui.screens.confirm import GRACE_S, ConfirmChange
from tui.screens.detail import DetailScreen
from tui.screens.operations import OperationsScreen


@run_async
async def test_open_isolation_with_age_runs_and_errors(tmp_path: Path) -> None:
    path, fabric, ber_bad, _ = build_store(tmp_path / "tui.db")
    record_operations(path, fabric, ber_bad, at=T0 + 120)
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None, clock=lambda: T0 + 120 + 45 * 60)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("c")
        assert isinstance(app.screen, OperationsScreen)
        open_rows = table_rows(app, "#ops-open")
        assert len(open_rows) == 1  # the failed isolation is in the log, not in force
        assert "leaf-su01-r0:5 <-> spine-01:1" in open_rows[0] and "45 min ago" in open_rows[0]
        assert len(table_rows(app, "#ops-audit")) == 2
        runs = text_of(app, "#ops-runs")
        assert "counters-1m (counters, every 60 s): last 2027-01-15 08:01:00 UTC" in runs
        assert "FAILED: perfquery: exit 1 on 0x0c42a10300a00003" in runs
        assert "collection  2027-01-15 08:15:00 UTC (32 min ago, snapshot #16)" in runs
        # inside the re-test window (126 min) the undo plan is shown but cannot be applied
        await pilot.press("enter")
        modal = app.screen
        assert isinstance(modal, ConfirmChange) and modal.blocked and "re-test window" in modal.blocked
        assert "[opensm undo] ibportstate -D 0,1 5 enable" in str(modal.plan_text)
        assert not modal.query("#confirm-name")
        await pilot.press("escape")
        assert isinstance(app.screen, OperationsScreen)
        await pilot.press("d")  # the isolated port's cable
        await pilot.pause(0.2)
        detail = app.screen
        assert isinstance(detail, DetailScreen) and detail.link == ber_bad.key


@run_async
async def test_undo_after_the_window_needs_the_name_and_is_audited(tmp_path: Path) -> None:
    path, fabric, ber_bad, _ = build_store(tmp_path / "tui.db")
    opened = record_operations(path, fabric, ber_bad, at=time.time() - 3 * 3600)
    app = build_app(FabricService(open_session(db=path)), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("c", "enter")
        modal = app.screen
        assert isinstance(modal, ConfirmChange) and modal.blocked is None
        assert modal.target == "leaf-su01-r0:5" and "window of 2.1 h passed" in modal.plan_text
        await pilot.press("u", "enter")  # before the box opens: nothing
        assert top(app) is modal
        await pilot.pause(GRACE_S + 0.2)
        await pilot.press(*"leaf-su01-r0:5", "enter")
        for _ in range(1200):  # a 60 s deadline, not a speed check
            await pilot.pause(0.05)
            if any(isinstance(m, ActionApplied) for m in app.messages_seen):
                break
    with Store.open(path) as s:
        log = s.audit_log()
    # the same use case as `ibfab isolate --undo`: ibportstate enable, audited as undoing the entry
    # (the port change fails here, with no fabric on this machine, and the log says so)
    undo = [e for e in log if e.undo_of == opened]
    assert (
        len(undo) == 1 and undo[0].action == "deisolate" and "ibportstate -D 0,1 5 enable" in undo[0].command
    )
