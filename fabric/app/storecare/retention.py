"""Retention use cases: `ibfab store compact`, `ibfab store info`, and the daemon's compaction
after each collection (a few seconds at most, so the next collection is never late)."""

from __future__ import annotations

import dataclasses

from fabric.app.session import StoreAccess
from fabric.core.warnlog import logger
from fabric.store import CompactResult, Retention, Store
from fabric.store.records import StoreInfo
from topology.errors import StoreError

# The daemon compacts after a collection for at most this long; what is left waits for the next.
AFTER_COLLECTION_BUDGET_S = 5.0
log = logger("fabric.store")


def compact_store(
    stored: StoreAccess,
    *,
    raw_s: float | None = None,
    hourly_s: float | None = None,
    findings_s: float | None = None,
    captures_s: float | None = None,
    save: bool = False,
    now: float | None = None,
    budget_s: float | None = None,
) -> tuple[CompactResult, Retention]:
    """Apply the store's policy (saved, else the defaults) with the spans given instead; ``save``
    keeps the result as the store's policy, which the daemon applies after each collection."""
    given = {"raw_s": raw_s, "hourly_s": hourly_s, "findings_s": findings_s, "captures_s": captures_s}
    with stored.require() as store:
        base = store.retention()
        policy = dataclasses.replace(base, **{k: v for k, v in given.items() if v is not None})
        if save:
            store.set_retention(policy)
        return store.compact(policy, now=now, budget_s=budget_s), policy


def compact_after_collection(store: Store) -> CompactResult | None:
    """The daemon's step after a stored collection: the saved policy, a few seconds at most. A
    store busy for longer than its timeout only postpones it (a warning, never a failed run)."""
    try:
        return store.compact(budget_s=AFTER_COLLECTION_BUDGET_S)
    except StoreError as exc:
        log.warning("%s: retention postponed: %s", store.path, exc.one_line())
        return None


def store_info(stored: StoreAccess, *, now: float | None = None) -> StoreInfo:
    with stored.require() as store:
        return store.info(now=now)


__all__ = ["AFTER_COLLECTION_BUDGET_S", "compact_after_collection", "compact_store", "store_info"]
