"""Store care: check every stored blob, set damaged snapshots aside (`ibfab store check|repair`).

The store already reads around damage on its own (a damaged counter snapshot is skipped with a
warning, a damaged newest topology gives way to the one before); these use cases find all of it
at once and make the set-aside final, so that the warnings stop.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fabric.app.session import StoreAccess
from fabric.store import Damage, QuarantineEntry


@dataclass(frozen=True, slots=True)
class StoreCheck:
    path: Path
    damage: tuple[Damage, ...]
    quarantine: tuple[QuarantineEntry, ...]  # set aside earlier

    @property
    def ok(self) -> bool:
        return not self.damage


@dataclass(frozen=True, slots=True)
class StoreRepair:
    path: Path
    damage: tuple[Damage, ...]  # what the check found
    moved: int  # rows set aside now (0 in a dry run)
    dry_run: bool

    @property
    def file_damage(self) -> tuple[Damage, ...]:
        """Damage to SQLite's own pages: no row move mends it (restore from a copy)."""
        return tuple(d for d in self.damage if d.kind == "file")


def check_store(stored: StoreAccess, *, pages: bool = True) -> StoreCheck:
    """Read everything in the store once and say what is damaged."""
    with stored.require() as store:
        damage = store.check(pages=pages)
        return StoreCheck(store.path, tuple(damage), tuple(store.list_quarantine()))


def repair_store(stored: StoreAccess, *, dry_run: bool = False) -> StoreRepair:
    """Check the store and move what is damaged into its quarantine (kept, never read again)."""
    with stored.require() as store:
        damage = store.check()
        moved = 0 if dry_run else store.set_aside(damage)
        return StoreRepair(store.path, tuple(damage), moved, dry_run)


__all__ = ["StoreCheck", "StoreRepair", "check_store", "repair_store"]
