"""A cable nobody has measured is "no data", not "ok": after one counter reading the health report
has no counter time for any link ("health unknown"), and the TUI once counted all 128 as ok beside
the note that rates need two readings. With two readings or more the same cables are ok."""

from __future__ import annotations

from pathlib import Path

from fabric.app.readmodel.service import FabricService
from fabric.app.readmodel.views import NO_DATA
from fabric.app.session import open_session
from fabric.health.status import Status
from tests.tui_data import build_store
from tui.cli import overview_text


def test_one_reading_is_no_data_with_its_reason_and_two_are_judged(tmp_path: Path) -> None:
    for snapshots in (1, 2):
        db, _, ber_bad, _flappy = build_store(tmp_path / f"r{snapshots}.db", snapshots=snapshots)
        svc = FabricService(open_session(db=db))
        view = svc.load_view()
        assert view is not None
        rows = svc.rows_with_health(view, svc.health())
        report = overview_text(open_session(db=db))
        if snapshots == 1:
            assert {r.status for r in rows} == {NO_DATA} and all(r.score is None for r in rows)
            assert {r.reasons for r in rows} == {
                ("no counter samples from either end in the window: health unknown",)
            }
            assert "critical: 0  warn: 0  watch: 0  ok: 0  no data: 128" in report
            assert "one counter reading only (snapshot 1)" in report
        else:
            assert NO_DATA not in {r.status for r in rows}
            assert rows[view.row_of[ber_bad.key]].status is Status.CRITICAL
            assert sum(r.status is Status.OK for r in rows) >= 126
