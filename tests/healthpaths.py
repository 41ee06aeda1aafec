"""Test helper: health's two ways through a store (the fast path: blocks summed column-wise, quiet
links on a short cut; the simple path: the counter table, every record the long way)
must give the same per-port table and the same report."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fabric.app.health.assess import AssessedHealth, assess_store
from fabric.counters.deltas import compute_deltas
from fabric.health import HealthThresholds
from fabric.health.columns import ColumnSums
from fabric.health.ports import PortTable, port_table
from fabric.store import Store


def tables_both_ways(store: Store, since: float | None, now: float) -> tuple[PortTable, PortTable]:
    """(the fast path's per-port table, port_table of the deltas of the window's counter table)."""
    t = HealthThresholds()
    ids = [s.id for s in store.list_counter_snapshots(since=since, until=now)]
    sums = ColumnSums(since=since, now=now, short_s=t.ber_window_s, long_s=t.ber_window_long_s)
    for sid, ports, values in store.load_counter_blocks(ids, since, now):
        sums.add(sid, ports, values)
    frame = store.load_counters(since=since, until=now)
    inside = frame["time"] <= now
    if since is not None:
        inside &= frame["time"] >= since
    window = frame[inside.to_numpy(dtype=bool)]
    table = port_table(compute_deltas(window), now=now, short_s=t.ber_window_s, long_s=t.ber_window_long_s)
    return sums.table(), table


def assert_same_table(fast: PortTable, simple: PortTable) -> None:
    """Every column equal, dtype and order included (NaN equal to NaN)."""
    for name in ("guids", "ports", "samples", "seconds", "symbol_short", "symbol_long", "reset"):
        a, b = getattr(fast, name), getattr(simple, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name, strict=True)
    for name in ("link_changes", "first_finding", "last_finding"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(simple, name), err_msg=name, strict=True)
    assert list(fast.sums) == list(simple.sums)
    for name in fast.sums:
        np.testing.assert_array_equal(fast.sums[name], simple.sums[name], err_msg=name, strict=True)
    assert list(fast.saturated) == list(simple.saturated)
    for name in fast.saturated:
        np.testing.assert_array_equal(fast.saturated[name], simple.saturated[name], err_msg=name, strict=True)
    pd.testing.assert_frame_equal(fast.flap_rows, simple.flap_rows)


def assert_same_health(store: Store, since_s: float | None, now: float) -> AssessedHealth:
    """The fast path's report equals the counter table's (record=False), field for field; its
    per-port table equals the table's; returns the fast path's assessment."""
    fast = assess_store(store, since_s=since_s, now=now, record=False)
    simple = assess_store(store, since_s=since_s, now=now, record=False, fast=False)
    assert fast.report == simple.report
    assert fast.report.to_dict() == simple.report.to_dict()
    assert_same_table(*tables_both_ways(store, None if since_s is None else now - since_s, now))
    return fast
