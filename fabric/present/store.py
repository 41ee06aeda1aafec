"""The store for people: what `ibfab store check` found and what `store repair` set aside."""

from __future__ import annotations

import time

from fabric.app.storecare import StoreCheck, StoreRepair
from fabric.present.table import table
from fabric.store import Damage


def _when(epoch: float | None) -> str:
    return "-" if epoch is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


def _damage_table(damage: tuple[Damage, ...]) -> str:
    return table(
        ("what", "id", "taken", "why"),
        [(d.kind, "-" if d.ref is None else d.ref, _when(d.taken_at), d.reason) for d in damage],
    )


def check_report(check: StoreCheck) -> str:
    lines = []
    if check.ok:
        lines.append(f"{check.path}: every page, snapshot, topology and capture reads back as stored")
    else:
        lines.append(f"{check.path}: {len(check.damage)} damaged")
        lines.append(_damage_table(check.damage))
        rows = [d for d in check.damage if d.kind != "file"]
        if rows:
            lines.append(
                "`ibfab store repair` sets the damaged rows aside (kept in the quarantine, never read again)"
            )
        if len(rows) < len(check.damage):
            lines.append("the file's own pages are damaged: restore it from a copy, or export what reads")
    if check.quarantine:
        lines.append(f"{len(check.quarantine)} set aside earlier (quarantine)")
    return "\n".join(lines)


def repair_report(repair: StoreRepair) -> str:
    rows = [d for d in repair.damage if d.kind != "file"]
    if not repair.damage:
        return f"{repair.path}: nothing damaged, nothing to do"
    lines = [_damage_table(repair.damage)]
    if repair.dry_run:
        lines.append(f"dry run: would set aside {len(rows)}")
    else:
        lines.append(f"{repair.path}: set aside {repair.moved} (kept in the quarantine table)")
    if repair.file_damage:
        lines.append("the file's own pages are damaged: no row move mends that; restore it from a copy")
    return "\n".join(lines)
