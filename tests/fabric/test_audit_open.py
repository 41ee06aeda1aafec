"""The changes still in force, read from the audit log by one rule for isolations and drains: a
change that succeeded and that no later successful undo names."""

from __future__ import annotations

from pathlib import Path

from fabric.app.audit import open_changes
from fabric.app.drains.drain import DRAIN, RESUME, open_drains
from fabric.app.isolation.isolate import DEISOLATE, ISOLATE, open_isolations
from fabric.store import Store


def _log(store: Store, action: str, target: str, result: str, undo_of: int | None = None) -> int:
    return store.audit("op", action, target, f"{action} {target}", result, undo_of, when=1.0e9)


def test_a_clean_log_has_nothing_open(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        assert open_changes(store, ISOLATE) == open_changes(store, DRAIN) == []
        kept = _log(store, ISOLATE, "leaf-01/5", "ok")
        _log(store, DEISOLATE, "leaf-01/5", "ok (port enabled)", undo_of=kept)
        drained = _log(store, DRAIN, "node1", "ok")
        _log(store, RESUME, "node1", "ok", undo_of=drained)
        assert open_isolations(store) == open_drains(store) == []


def test_open_are_the_successes_no_successful_undo_names(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        failed = _log(store, ISOLATE, "leaf-01/1", "failed: ibportstate: timeout")
        undone = _log(store, ISOLATE, "leaf-01/2", "ok")
        _log(store, DEISOLATE, "leaf-01/2", "ok", undo_of=undone)
        undo_failed = _log(store, ISOLATE, "leaf-01/3", "ok")
        _log(store, DEISOLATE, "leaf-01/3", "failed: ibportstate: timeout", undo_of=undo_failed)
        still = _log(store, ISOLATE, "leaf-01/4", "ok (port disabled)")
        drained = _log(store, DRAIN, "node1", "ok")
        _log(store, DRAIN, "node2", "failed: slurm: no such node")
        resumed = _log(store, DRAIN, "node3", "ok")
        _log(store, RESUME, "node3", "ok", undo_of=resumed)

        assert [e.id for e in open_changes(store, ISOLATE)] == [undo_failed, still]
        assert [e.id for e in open_changes(store, DRAIN)] == [drained]
        assert failed not in {e.id for e in open_changes(store, ISOLATE)}
        # the named views of each kind read the same rule
        assert open_isolations(store) == open_changes(store, ISOLATE)
        assert open_drains(store) == open_changes(store, DRAIN)
