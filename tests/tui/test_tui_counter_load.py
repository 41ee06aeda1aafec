"""The column-wise counter load (what makes the TUI's health fast) gives exactly the frame that
row-by-row reading gives: NULLs, values at and above 2**63, unreachable ports, times that are and
are not multiples of 2**-22, snapshots written out of order, GUID and port filters."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fabric.core.fields import COUNTER_NAMES
from fabric.store import Store
from fabric.store.counters import _read_columns, _read_rows, _time_filter

T0 = 1_800_000_000.0


def _row(guid: str, port: int, when: float, **counters: int | None) -> tuple[object, ...]:
    values = {name: 0 for name in COUNTER_NAMES} | counters
    peer = None if port == 9 else f"0x{int(guid, 16) + 1:016x}"
    return (
        guid,
        port,
        None if port == 2 else 7 + port,
        peer,
        None if peer is None else 1,
        port != 3,
        "timeout" if port == 3 else None,
        when,
        *(values[n] for n in COUNTER_NAMES),
    )


def _store(path: Path, time_offset: float, huge: bool = False) -> Path:
    """Three snapshots of five ports; ``huge``: two counters at or above 2**63 (beside NULLs)."""
    with Store.open(path) as store:
        for s in (2, 0, 1):  # written out of time order
            when = T0 + s * 60.0 + time_offset
            rows = [
                _row("0x0000000000000b02", 1, when, symbol_errors=s * 10, xmit_data=s * 10**12),
                _row("0x0000000000000a01", 2, when + 0.25, xmit_wait=None, rcv_pkts=2**64 - 1 if huge else 5),
                _row("0x0000000000000a01", 1, when, link_downed=255, rcv_errors=None),
                _row("0x0000000000000a01", 3, when),  # unreachable: every counter NULL
                _row("0x0000000000000c00", 9, when, xmit_data=2**63 + s if huge else s),  # no peer
            ]
            rows[3] = (*rows[3][:8], *([None] * len(COUNTER_NAMES)))
            store.save_counter_snapshot(when, "test", None, rows)
    return path


@pytest.mark.parametrize("offset", [0.0, 0.123456789, 1e-7])
def test_column_load_equals_row_load(tmp_path: Path, offset: float) -> None:
    path = _store(tmp_path / "c.db", offset)
    with Store.open(path) as store:
        frame = store.load_counters()
        for where_extra, extra in (("", []), (" AND p.guid = ?", ["0x0000000000000a01"])):
            where, args = _time_filter(None, None, "s.")
            with store._read() as db:
                fast = _read_columns(db, where + where_extra, [*args, *extra])
                slow = _read_rows(db, where + where_extra, [*args, *extra])
            assert fast is not None
            pd.testing.assert_frame_equal(fast, slow, check_exact=True)
        assert len(frame) == 15 and frame["snapshot"].tolist() == sorted(frame["snapshot"].tolist())
        first = frame[frame["snapshot"] == 2]  # written second, taken first
        assert first["guid"].tolist()[:3] == ["0x0000000000000a01"] * 3 and first["port"].tolist()[:3] == [
            1,
            2,
            3,
        ]
        assert int(first["link_downed"].iloc[0]) == 255 and pd.isna(first["rcv_errors"].iloc[0])
        assert pd.isna(first["lid"].iloc[1]) and int(first["rcv_pkts"].iloc[1]) == 5
        assert not first["reachable"].iloc[2] and first["symbol_errors"].isna().iloc[2]
        assert first["peer_guid"].iloc[4] is None and first["time"].iloc[1] == T0 + offset + 0.25
        since = store.load_counters(since=T0 + 30.0, guids=["0x0000000000000b02"])
        assert since["symbol_errors"].tolist() == [20, 10]  # by snapshot id, as written


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
def test_values_above_int64_beside_nulls_load_clamped(tmp_path: Path) -> None:
    # reading rows, pandas made such a column float64 and then refused to cast 2**63 to Int64
    path = _store(tmp_path / "c.db", 0.0, huge=True)
    with Store.open(path) as store:
        where, args = _time_filter(None, None, "s.")
        with store._read() as db, pytest.raises(TypeError):
            _read_rows(db, where, args)
        frame = store.load_counters()
    assert frame["rcv_pkts"].tolist()[1::5] == [2**63 - 1] * 3
    assert frame["xmit_data"].tolist()[4::5] == [2**63 - 1] * 3
    assert frame["xmit_data"].isna().tolist()[2::5] == [True] * 3


def test_empty_window_gives_an_empty_frame_of_the_same_shape(tmp_path: Path) -> None:
    path = _store(tmp_path / "c.db", 0.0)
    with Store.open(path) as store:
        empty = store.load_counters(since=T0 + 10_000)
        where, args = _time_filter(T0 + 10_000, None, "s.")
        with store._read() as db:
            slow = _read_rows(db, where, args)
    assert empty.empty
    assert list(empty.columns) == list(slow.columns)
    assert empty.dtypes.to_dict() == slow.dtypes.to_dict()


def test_text_the_columns_cannot_carry_falls_back_to_rows(tmp_path: Path) -> None:
    path = _store(tmp_path / "c.db", 0.0)
    with Store.open(path) as store:
        with store._write() as db:  # a GUID with the column separator in it (a foreign store)
            db.execute("UPDATE port_counters SET guid = 'odd\x1fguid' WHERE port = 9")
        where, args = _time_filter(None, None, "s.")
        with store._read() as db:
            assert _read_columns(db, where, args) is None
        frame = store.load_counters()
    assert len(frame) == 15 and frame["guid"].tolist()[-1] == "odd\x1fguid"


def _reader_threads() -> list[str]:
    import threading

    return [t.name for t in threading.enumerate() if t.name.startswith("ibfab-counters")]


def test_pieces_are_the_loads_of_their_snapshots_read_ahead(tmp_path: Path) -> None:
    path = _store(tmp_path / "c.db", 0.0)
    with Store.open(path) as store:
        ids = [s.id for s in store.list_counter_snapshots()]  # by time: ids 2, 3, 1
        pieces = [[ids[1]], [ids[0], ids[2]], [ids[2]]]
        for since in (None, T0 + 30.0):
            got = list(store.load_counter_pieces(pieces, since=since))
            assert [len(f) for f in got] == ([5, 10, 5] if since is None else [5, 5, 5])
            for piece, frame in zip(pieces, got, strict=True):
                pd.testing.assert_frame_equal(frame, store.load_counters(since=since, snapshots=piece))
        assert got[1]["snapshot"].tolist() == [1] * 5  # snapshot 2 (taken first, at T0) is before `since`
        reading = store.load_counter_pieces(pieces)
        assert next(reading)["snapshot"].tolist() == [ids[1]] * 5
        assert _reader_threads()  # the next piece is being read meanwhile
        reading.close()  # stopped early: the reader thread and its connection are gone
        assert _reader_threads() == []
        single = list(store.load_counter_pieces([ids]))  # one piece: read here, no thread
        pd.testing.assert_frame_equal(single[0], store.load_counters())
