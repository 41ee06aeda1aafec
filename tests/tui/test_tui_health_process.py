"""Health computed in a child process (what the TUI does) gives the report computed in-process;
failures come back as one-line StoreErrors; a cancelled computation's process is gone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fabric.app.health.window import HealthProcess, compute_health, dump_health, load_health
from fabric.app.readmodel.service import FabricService
from fabric.app.session import open_session
from tests.tui_data import build_store
from topology.errors import StoreError


def test_child_process_gives_the_in_process_report(tmp_path: Path) -> None:
    path = build_store(tmp_path / "h.db")[0]
    here = compute_health(open_session(db=path))
    there = FabricService(open_session(db=path)).start_health().result()
    assert here is not None and there is not None
    assert there.report.to_dict() == here.report.to_dict()
    assert (there.snapshot_id, there.since, there.now) == (16, here.since, here.now)
    worst = there.report.links[0]
    assert worst.status.value == "critical" and there.by_key[worst.key] == worst
    assert dict(worst.counters) == dict(here.report.links[0].counters)  # read-only mappings survive


def test_round_trip_keeps_read_only_mappings(tmp_path: Path) -> None:
    view = compute_health(open_session(db=build_store(tmp_path / "h.db", snapshots=3)[0]))
    assert view is not None
    again = load_health(dump_health(view))
    assert again is not None and again.report == view.report
    assert type(again.report.summary.links_by_status) is type(view.report.summary.links_by_status)
    assert load_health(dump_health(None)) is None


def test_empty_store_gives_none_and_a_failure_is_one_line(tmp_path: Path) -> None:
    assert HealthProcess(open_session(db=tmp_path / "empty.db")).result() is None
    (tmp_path / "not-a-db").write_text("this is not SQLite\n")
    with pytest.raises(StoreError) as err:
        HealthProcess(open_session(db=tmp_path / "not-a-db")).result()
    assert str(err.value).startswith("health: ") and "\n" not in str(err.value)
    assert "not-a-db" in str(err.value)


def test_cancel_kills_the_child(tmp_path: Path) -> None:
    path = build_store(tmp_path / "h.db")[0]
    job = HealthProcess(open_session(db=path))
    job.cancel()
    with pytest.raises(StoreError, match="cancelled"):
        job.result()
    with pytest.raises(ProcessLookupError):
        os.kill(job.pid, 0)  # reaped: no such process any more
