"""The TUI's routes on a running lab (ibsim + OpenSM routing with ftree): the tables read with the
real dump_fts and stored by ``ibfab routes --lab NAME --save`` judge clean on the routes screen,
with what the lab's OpenSM says it runs; then the same fabric with a credit loop planted through
OpenSM's file engine (the lab's own dump, four entries changed) is exactly one credit-loop alert."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.app.readmodel.service import FabricService
from fabric.app.session import open_session
from fabric.app.source import Source
from fabric.lab import simulator as lab
from fabric.present.routes_tui import route_alerts
from tests.integration.test_routes_lab import clean, credit_loop_changes, edited, running
from tests.tui.test_tui import SIZE, run_async, settle, text_of
from topology.route_findings import CREDIT_LOOP
from tui.app import build_app
from tui.program import main
from tui.screens.routes import RoutesScreen

pytestmark = pytest.mark.lab
NAME = "tuiroutes"


@pytest.fixture
def ftree_lab() -> Iterator[str]:
    lab.up("fattree-small", (), name=NAME, routing="ftree")
    try:
        yield NAME
    finally:
        lab.down(NAME)


def _save(db: Path, name: str) -> None:
    res = CliRunner().invoke(main, ["routes", "--lab", name, "--save", "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert "stored the tables with topology snapshot" in res.stderr


@run_async
async def test_lab_tables_stored_with_the_cli_judge_clean_with_the_sms_word(
    ftree_lab: str, tmp_path: Path
) -> None:
    db = tmp_path / "lab.db"
    _save(db, ftree_lab)
    app = build_app(FabricService(open_session(Source.lab(ftree_lab), db=db)), poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.view is not None
        assert route_alerts(app.service.routes_known(app.view)) == ()
        await pilot.press("t")
        await pilot.pause(0.1)
        head = text_of(app, "#routes-head")
        assert "read from dump_fts on lab tuiroutes (dump_fts)" in head
        assert re.search(r"the SM says ftree \(\S+osm\.log\)", head), head
        assert "0 error(s), 0 warning(s)" in head
        assert "Every route delivers, no credit loop, balanced: no error or warning" in head


@run_async
async def test_a_credit_loop_loaded_by_opensm_is_exactly_one_alert(tmp_path: Path) -> None:
    dump = tmp_path / "lfts.dump"
    dump.write_text(edited(clean(), credit_loop_changes(clean())))
    db = tmp_path / "loop.db"
    with running("fattree-small", "tuiloop", routing="file", lfts_file=str(dump)) as name:
        _save(db, name)
        app = build_app(FabricService(open_session(Source.lab(name), db=db)), poll_seconds=None)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            assert app.view is not None
            assert [a.kind for a in route_alerts(app.service.routes_known(app.view))] == [CREDIT_LOOP]
            await pilot.press("e", "slash", *"credit", "enter", "down", "enter")
            await pilot.pause(0.3)
            assert isinstance(app.screen, RoutesScreen)
            evidence = text_of(app, "#routes-evidence")
            assert "Credit loop, link by link (4 channels on cycles" in evidence
            assert "the SM says file" in text_of(app, "#routes-head")
