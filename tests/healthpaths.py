"""Test helper: health through a store (the program's path: the stored blocks summed column-wise,
quiet links on a short cut) must give what its oracle gives (tests/oracles/health.py: the
window's counter table, its deltas summed per port, every record the long way): the same
per-port table and the same report."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from fabric.app.health.assess import DAY_S, AssessedHealth, assess_store, below_peers, past_findings, utc_day
from fabric.counters.deltas import OutOfOrder, compute_deltas
from fabric.health import HealthReport, HealthThresholds, LinkEvent, in_time_order
from fabric.health.columns import ColumnSums
from fabric.health.ports import PortTable
from fabric.health.snapshots import Snapshot
from fabric.store import Store
from tests.oracles.health import assess_oracle, port_table


def window_frame(store: Store, since: float | None, now: float) -> pd.DataFrame:
    frame = store.load_counters(since=since, until=now)
    inside = frame["time"] <= now
    if since is not None:
        inside &= frame["time"] >= since
    return frame[inside.to_numpy(dtype=bool)]


def tables_both_ways(store: Store, since: float | None, now: float) -> tuple[PortTable, PortTable]:
    """(the program's per-port table, the oracle's port_table of the window's counter table)."""
    t = HealthThresholds()
    ids = [s.id for s in store.list_counter_snapshots(since=since, until=now)]
    blocks = store.load_counter_blocks(ids, since, now)
    try:
        sums = column_sums(blocks, since, now, t)
    except OutOfOrder:  # as assess_store does: the window put in order, its ports by first delta
        sums = column_sums(in_time_order(blocks), since, now, t)  # in that order, not the table's
        window = window_frame(store, since, now)
        table = port_table(
            compute_deltas(window), now=now, short_s=t.ber_window_s, long_s=t.ber_window_long_s
        )
        return by_port(sums.table()), by_port(table)
    window = window_frame(store, since, now)
    table = port_table(compute_deltas(window), now=now, short_s=t.ber_window_s, long_s=t.ber_window_long_s)
    return sums.table(), table


def by_port(table: PortTable) -> PortTable:
    """``table`` with its ports in (GUID, port) order."""
    order = np.lexsort((table.ports, table.guids.astype(str)))
    return PortTable(
        guids=table.guids[order],
        ports=table.ports[order],
        samples=table.samples[order],
        seconds=table.seconds[order],
        sums={name: v[order] for name, v in table.sums.items()},
        symbol_short=table.symbol_short[order],
        symbol_long=table.symbol_long[order],
        saturated={name: v[order] for name, v in table.saturated.items()},
        reset=table.reset[order],
        link_changes=table.link_changes[order],
        first_finding=table.first_finding[order],
        last_finding=table.last_finding[order],
        flap_rows=table.flap_rows.sort_values(["guid", "port", "time"], kind="stable").reset_index(drop=True),
    )


def column_sums(
    blocks: Iterable[Snapshot], since: float | None, now: float, t: HealthThresholds
) -> ColumnSums:
    sums = ColumnSums(since=since, now=now, short_s=t.ber_window_s, long_s=t.ber_window_long_s)
    for sid, ports, values in blocks:
        sums.add(sid, ports, values)
    return sums


def oracle_of_store(store: Store, since_s: float | None, now: float) -> HealthReport:
    """The oracle's report of what assess_store reads: the latest topology, its cables below their
    peers, the link events and the past findings (today's left out)."""
    t = HealthThresholds()
    since = None if since_s is None else now - since_s
    stored = store.load_topology("latest")
    lookback = now - t.repeat_lookback_days * DAY_S
    events = [
        LinkEvent(e.time, e.link, e.kind)
        for e in store.load_link_events(since=lookback, until=now)
        if e.kind in ("down", "up")
    ]
    today = utc_day(now)
    history = past_findings(r for r in store.load_findings_history(utc_day(lookback)) if r.day != today)
    return assess_oracle(
        store.load_counters(since=since, until=now),
        stored.fabric,
        since=since,
        now=now,
        events=events,
        history=history,
        thresholds=t,
        below_peers=below_peers(stored.fabric),
    )


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
    """The program's report equals the oracle's (record=False), field for field; its per-port
    table equals the oracle's; returns the program's assessment."""
    view = assess_store(store, since_s=since_s, now=now, record=False)
    oracle = oracle_of_store(store, since_s, now)
    assert view.report == oracle
    assert view.report.to_dict() == oracle.to_dict()
    assert_same_table(*tables_both_ways(store, None if since_s is None else now - since_s, now))
    return view
