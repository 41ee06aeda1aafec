"""Store care: check everything stored, mend what can be mended, set the rest aside
(`ibfab store check|repair`).

The store already reads around damage on its own (a damaged counter snapshot is skipped with a
warning, a damaged newest topology gives way to the one before, a store whose schema is damaged
opens read-only); these use cases find all of it at once and make the repair final:

* the header and the schema's rows are rewritten from what every ibfab store holds;
* a damaged index is built anew; damaged table pages cost the rows on them: every row that still
  reads is copied into a new file, which takes the store's place (the damaged file is kept
  beside it, renamed, so nothing is lost that a specialist could still read);
* values of the wrong kind are put back when they can be (a blob read as text), else kept in the
  quarantine; damaged snapshots, topologies and captures are moved into the quarantine;
* a damaged WAL (commits SQLite will not apply) can only be named: a copy of it is kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from fabric.app.session import StoreAccess
from fabric.store import Damage, HeaderDamaged, QuarantineEntry
from fabric.store.salvage import expected_schema
from fabric.store.walcheck import wal_damage
from topology.errors import StoreError


@dataclass(frozen=True, slots=True)
class StoreCheck:
    path: Path
    damage: tuple[Damage, ...]
    quarantine: tuple[QuarantineEntry, ...]  # set aside earlier
    closed_runs: int = 0  # runs of processes that died left open, closed as killed by this check

    @property
    def ok(self) -> bool:
        return not self.damage


@dataclass(frozen=True, slots=True)
class StoreRepair:
    path: Path
    damage: tuple[Damage, ...]  # what the check found
    moved: int  # rows set aside now (0 in a dry run)
    dry_run: bool
    mended: tuple[str, ...] = ()  # what was put back in place (header, schema, indexes, values)
    lost: tuple[str, ...] = ()  # rows on pages that did not read (not in the new file)
    kept: Path | None = None  # the damaged file, kept beside the new one
    left: tuple[Damage, ...] = ()  # what is still damaged after the repair

    @property
    def file_damage(self) -> tuple[Damage, ...]:
        """Damage to SQLite's own pages, its schema or header."""
        return tuple(d for d in self.damage if d.kind in ("file", "schema", "header"))


def _existing(stored: StoreAccess) -> Path:
    if not stored.exists():
        raise StoreError(f"{stored.path}: no ibfab store there")
    return stored.path


def _stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def _wal(path: Path, keep: bool) -> list[Damage]:
    """Damage in the store's WAL, read before anything opens the store (the first opener folds
    what SQLite reads of it into the file, and the rest is gone); with ``keep`` a copy of the
    WAL is kept beside it."""
    wal = path.with_name(path.name + "-wal")
    found = wal_damage(wal)
    if found is None:
        return []
    why = found.why
    if keep:
        copy = wal.with_name(f"{wal.name}.damaged-{_stamp()}")
        shutil.copyfile(wal, copy)
        why += f"; a copy of the WAL is kept as {copy}"
    return [Damage("wal", None, None, why)]


def check_store(stored: StoreAccess, *, pages: bool = True) -> StoreCheck:
    """Read everything in the store once and say what is damaged."""
    path = _existing(stored)
    found = _wal(path, keep=True)
    try:
        store = stored.require()
    except HeaderDamaged as exc:  # nothing reads until it is rewritten
        return StoreCheck(path, (*found, Damage("header", None, None, ", ".join(exc.problems))), ())
    with store:
        closed = 0 if store.damage_note else store.close_dead_runs()
        found += store.check(pages=pages)
        try:
            quarantine = tuple(store.list_quarantine())
        except StoreError:
            quarantine = ()
        return StoreCheck(store.path, tuple(found), quarantine, closed)


def repair_store(stored: StoreAccess, *, dry_run: bool = False) -> StoreRepair:
    """Check the store, mend what can be mended in place and set the rest aside."""
    path = _existing(stored)
    if dry_run:
        check = check_store(stored)
        return StoreRepair(path, check.damage, 0, True)
    found = _wal(path, keep=True)
    mended: list[str] = []
    lost: list[str] = []
    kept: Path | None = None
    store = stored.mend()
    try:
        if store.header_note is not None:
            found.append(Damage("header", None, None, store.header_note))
        if store.mend_header_mark():
            mended.append("header: application id")
        elif store.header_note is not None:
            mended.append(store.header_note)
        schema_left = False
        if store.damage_note is not None:
            found.append(Damage("schema", None, None, store.damage_note))
            try:
                mended += [f"schema: {what}" for what in store.mend_schema()]
            except StoreError:  # the schema's own page does not take a write: copy what reads
                schema_left = True
            else:
                store.close()
                store = stored.mend()
                schema_left = store.damage_note is not None
        pages = store.page_damage()
        found += pages
        if pages or schema_left:
            indexes = {r.name for r in expected_schema(store.version) if r.type == "index"}
            named = [d.table for d in pages if d.table is not None]
            if (
                not schema_left
                and len(named) == len(pages)
                and set(named) <= indexes
                and store.reindex(named)
                and not store.page_damage()
            ):
                mended.append(f"indexes built anew: {', '.join(named)}")
            else:
                _no_daemon(path)
                dest = path.with_name(path.name + ".mending")
                rebuilt = store.copy_readable(dest)
                store.close()
                kept = _swap(path, dest)
                lost = rebuilt.lost + rebuilt.emptied
                mended.append(
                    f"every row that reads copied into a new file; the damaged one kept as {kept.name}"
                )
                store = stored.mend()
        rest = store.check(pages=False)
        found += rest
        moved = store.set_aside(rest)
        left = tuple(d for d in store.check(pages=bool(pages)) if d.kind != "header")
    finally:
        store.close()
    return StoreRepair(path, tuple(found), moved, False, tuple(mended), tuple(lost), kept, left)


def _no_daemon(path: Path) -> None:
    """Refuse to replace the file under a running daemon (its lock: fabric.serve.daemon.DaemonLock,
    ``<store>.daemon.lock``), which would go on writing into the damaged one."""
    lock = path.with_name(path.name + ".daemon.lock")
    if not lock.exists():
        return
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip()
        raise StoreError(
            f"{path}: its pages are damaged and mending copies what reads into a new file, but an ibfab"
            f" daemon (PID {holder or '?'}) writes to it: stop the daemon, then run `ibfab store repair` again"
        ) from None
    finally:
        os.close(fd)


def _swap(path: Path, fresh: Path) -> Path:
    """Put ``fresh`` in the place of ``path``; returns where the old file (and its WAL) went."""
    kept = path.with_name(f"{path.name}.damaged-{_stamp()}")
    os.replace(path, kept)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.replace(side, kept.with_name(kept.name + suffix))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(fresh.with_name(fresh.name + suffix))
    os.replace(fresh, path)
    return kept


__all__ = ["StoreCheck", "StoreRepair", "check_store", "repair_store"]
