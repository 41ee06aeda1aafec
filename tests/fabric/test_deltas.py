"""compute_deltas: resets, saturation, re-cabling, unreachable gaps, order and the contract."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabric.core.fields import COUNTER_NAMES, FRAME_COLUMNS, max_value
from fabric.counters.deltas import DELTA_COLUMNS, SATURABLE, compute_deltas
from topology.errors import UsageError

A = "0x0000000000000a01"
B = "0x0000000000000b02"


def row(
    snapshot: int,
    time: float,
    *,
    guid: str = A,
    port: int = 1,
    peer: str | None = B,
    peer_port: int | None = 7,
    lid: int | None = 5,
    reachable: bool = True,
    **counters: int | None,
) -> dict[str, Any]:
    values: dict[str, Any] = dict.fromkeys(COUNTER_NAMES, 0 if reachable else None)
    values.update(counters)
    return {
        "snapshot": snapshot,
        "time": time,
        "guid": guid,
        "port": port,
        "lid": lid,
        "peer_guid": peer,
        "peer_port": peer_port,
        "reachable": reachable,
        **values,
    }


def table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
    for name in ("lid", "peer_port", *COUNTER_NAMES):
        frame[name] = frame[name].astype("Int64")
    return frame


def vals(column: pd.Series) -> list[int | None]:
    return [None if pd.isna(v) else int(v) for v in column]


def test_plain_deltas_have_elapsed_and_the_later_sample_keys() -> None:
    d = compute_deltas(
        table(
            [
                row(1, 100.0, symbol_errors=3, xmit_data=1000),
                row(2, 160.0, symbol_errors=5, xmit_data=4000),
                row(3, 250.0, symbol_errors=5, xmit_data=4500),
            ]
        )
    )
    assert list(d.columns) == list(DELTA_COLUMNS)
    assert d["snapshot"].tolist() == [2, 3]
    assert d["elapsed"].tolist() == [60.0, 90.0]
    assert d["prev_time"].tolist() == [100.0, 160.0]
    assert d["symbol_errors"].tolist() == [2, 0]
    assert d["xmit_data"].tolist() == [3000, 500]
    assert not d["reset"].any() and not d["link_changed"].any()


def test_a_counter_that_went_down_was_reset_and_counts_from_zero() -> None:
    d = compute_deltas(
        table(
            [
                row(1, 0.0, symbol_errors=10, rcv_errors=4),
                row(2, 60.0, symbol_errors=15, rcv_errors=6),
                row(3, 120.0, symbol_errors=3, rcv_errors=7),
            ]
        )
    )
    assert d["symbol_errors"].tolist() == [5, 3]  # the new value is the count since the reset
    assert d["rcv_errors"].tolist() == [2, 1]
    assert d["reset"].tolist() == [False, True]


def test_a_saturated_counter_gives_an_at_least_delta_and_a_flag() -> None:
    top = max_value("symbol_errors")
    d = compute_deltas(
        table(
            [
                row(1, 0.0, symbol_errors=top - 5),
                row(2, 60.0, symbol_errors=top),
                row(3, 120.0, symbol_errors=top),
                row(4, 180.0, symbol_errors=4),
            ]
        )
    )
    assert d["symbol_errors"].tolist() == [5, 0, 4]
    assert d["saturated_symbol_errors"].tolist() == [True, True, False]
    assert d["reset"].tolist() == [False, False, True]
    assert not d["saturated_rcv_errors"].any()
    # 64-bit counters cannot saturate and carry no flag
    assert "saturated_xmit_data" not in d.columns and "saturated_xmit_wait" in d.columns
    assert set(SATURABLE) == {
        n for n in COUNTER_NAMES if n not in ("xmit_data", "rcv_data", "xmit_pkts", "rcv_pkts")
    }


def test_a_link_change_starts_a_new_baseline() -> None:
    d = compute_deltas(
        table(
            [
                row(1, 0.0, symbol_errors=1),
                row(2, 60.0, symbol_errors=2),
                row(3, 120.0, symbol_errors=40, peer="0x00000000000000c3"),
                row(4, 180.0, symbol_errors=41, peer="0x00000000000000c3"),
                row(5, 240.0, symbol_errors=41, lid=9),
            ]
        )
    )
    assert d["link_changed"].tolist() == [False, True, False, True]
    assert vals(d["symbol_errors"]) == [1, None, 1, None]  # nothing across a change
    assert d["peer_guid"].tolist()[1] == "0x00000000000000c3"


def test_unknown_link_identity_is_not_a_change_but_a_move_through_it_is() -> None:
    d = compute_deltas(
        table(
            [
                row(1, 0.0, symbol_errors=1),
                row(2, 60.0, symbol_errors=2, peer=None, peer_port=None, lid=None),
                row(3, 120.0, symbol_errors=4),
                row(4, 180.0, symbol_errors=5, peer=None),
                row(5, 240.0, symbol_errors=9, peer="0x00000000000000c3"),
            ]
        )
    )
    assert d["link_changed"].tolist() == [False, False, False, True]
    assert vals(d["symbol_errors"]) == [1, 2, 1, None]


def test_unreachable_samples_give_no_delta_and_do_not_break_the_chain() -> None:
    d = compute_deltas(
        table(
            [
                row(1, 0.0, symbol_errors=1, link_downed=0),
                row(2, 60.0, reachable=False),
                {**row(3, 120.0), **dict.fromkeys(COUNTER_NAMES)},  # answered, but no counter read
                row(4, 180.0, symbol_errors=7, link_downed=1),
            ]
        )
    )
    assert d["snapshot"].tolist() == [4]
    assert d["elapsed"].tolist() == [180.0]
    assert d["prev_time"].tolist() == [0.0]
    assert d["symbol_errors"].tolist() == [6]
    assert d["link_downed"].tolist() == [1]


def test_a_counter_missing_from_one_sample_diffs_against_its_last_reading() -> None:
    d = compute_deltas(
        table(
            [
                row(1, 0.0, symbol_errors=1, rcv_errors=2),
                row(2, 60.0, symbol_errors=None, rcv_errors=3),
                row(3, 120.0, symbol_errors=8, rcv_errors=3),
            ]
        )
    )
    assert vals(d["symbol_errors"]) == [None, 7]  # the whole window's errors are still summed
    assert d["rcv_errors"].tolist() == [1, 0]


def test_ports_are_kept_apart_and_row_order_does_not_matter() -> None:
    rows = []
    for s in range(6):
        rows.append(row(s, s * 60.0, symbol_errors=s * s))
        rows.append(row(s, s * 60.0 + 3, port=2, peer_port=8, symbol_errors=100 + s))
        rows.append(row(s, s * 60.0 + 1, guid=B, port=7, peer=A, peer_port=1, symbol_errors=2 * s))
    ordered = compute_deltas(table(rows))
    shuffled = compute_deltas(table([rows[i] for i in np.random.default_rng(3).permutation(len(rows))]))

    def by_key(d: pd.DataFrame) -> pd.DataFrame:
        return d.sort_values(["guid", "port", "time"]).reset_index(drop=True)

    pd.testing.assert_frame_equal(by_key(ordered), by_key(shuffled))
    assert ordered["snapshot"].is_monotonic_increasing  # input order (snapshot by snapshot) is kept
    by_port = ordered.groupby(["guid", "port"])["symbol_errors"].apply(list).to_dict()
    assert by_port == {(A, 1): [1, 3, 5, 7, 9], (A, 2): [1] * 5, (B, 7): [2] * 5}


def test_an_empty_table_gives_an_empty_delta_table() -> None:
    d = compute_deltas(table([]))
    assert list(d.columns) == list(DELTA_COLUMNS) and len(d) == 0


def test_a_table_without_key_columns_is_refused_by_name() -> None:
    with pytest.raises(UsageError, match="missing columns: reachable"):
        compute_deltas(table([row(1, 0.0)]).drop(columns=["reachable"]))


def test_matches_a_plain_groupby_diff_when_nothing_special_happens() -> None:
    rng = np.random.default_rng(7)
    totals = np.cumsum(rng.integers(0, 3, (5, 8)), axis=0)
    frame = table(
        [
            row(s, s * 30.0 + p, port=p, peer_port=p, symbol_errors=int(totals[s, p - 1]))
            for s in range(5)
            for p in range(1, 9)
        ]
    )
    ours = compute_deltas(frame).sort_values(["guid", "port", "time"])
    theirs = frame.sort_values(["guid", "port", "time"]).groupby(["guid", "port"])["symbol_errors"].diff()
    assert vals(ours["symbol_errors"]) == vals(theirs.dropna())
    assert int(ours["symbol_errors"].sum()) == int(totals[-1].sum() - totals[0].sum())


values = st.one_of(st.none(), st.integers(0, max_value("symbol_errors")))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(values, values, st.booleans(), st.sampled_from([B, "0x00000000000000c3"])),
        min_size=1,
        max_size=12,
    )
)
def test_deltas_are_never_negative_and_reachable_samples_all_appear(
    samples: list[tuple[int | None, int | None, bool, str]],
) -> None:
    rows = [
        row(i, i * 10.0, symbol_errors=s, link_downed=None if d is None else d % 256, reachable=r, peer=p)
        for i, (s, d, r, p) in enumerate(samples)
    ]
    d = compute_deltas(table(rows))
    for name in COUNTER_NAMES:
        assert (d[name].dropna() >= 0).all()
    assert (d["elapsed"] > 0).all()
    usable = [i for i, (_, _, r, _) in enumerate(samples) if r]  # other counters are 0, so read
    assert len(d) == max(0, len(usable) - 1)
