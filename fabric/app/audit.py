"""The audit log read as the changes still in force: what an isolation or a drain left on the
fabric until an undo (``deisolate``, ``resume``) names it. One rule for every kind of change, so
``isolate --undo``, ``drain undo``, the routes' isolated cables and the TUI's open changes agree."""

from __future__ import annotations

from fabric.store import AuditEntry, Store


def open_changes(store: Store, action: str) -> list[AuditEntry]:
    """The ``action`` entries that succeeded and that no later successful entry has undone, oldest
    first (a failed change changed nothing; a failed undo undid nothing)."""
    log = store.audit_log()
    undone = {e.undo_of for e in log if e.undo_of is not None and e.result.startswith("ok")}
    return [e for e in log if e.action == action and e.result.startswith("ok") and e.id not in undone]
