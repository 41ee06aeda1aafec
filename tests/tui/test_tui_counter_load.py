"""The counter load from the store's blocks (what makes the TUI's health fast) gives exactly the
frame of the rows saved: NULLs, values at and above 2**63, unreachable ports, times that are and
are not multiples of 2**-22, snapshots written out of order, GUID and snapshot filters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fabric.core.fields import COUNTER_NAMES, FRAME_COLUMNS
from fabric.store import Store

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


def _expected(saved: list[tuple[int, list[tuple[object, ...]]]]) -> pd.DataFrame:
    """The counter table of (snapshot id, rows) as fields.py defines it, built row by row here."""
    records = [
        (sid, *r)
        for sid, rows in sorted(saved)
        for r in sorted(rows, key=lambda r: (str(r[0]), int(str(r[1]))))
    ]
    columns = list(zip(*records, strict=True))

    def ints(values: tuple[object, ...], clamp: bool = False) -> object:
        cells: list[Any] = [
            None if v is None else min(int(str(v)), 2**63 - 1) if clamp else v for v in values
        ]
        return pd.array(cells, dtype="Int64")

    sid, guid, port, lid, peer, peer_port, up, _, when, *counters = columns
    table = {
        "snapshot": pd.array(sid, dtype="int64"),
        "time": pd.array(when, dtype="float64"),
        "guid": pd.Series(guid, dtype=object),
        "port": pd.array(port, dtype="int64"),
        "lid": ints(lid),
        "peer_guid": pd.Series(peer, dtype=object),
        "peer_port": ints(peer_port),
        "reachable": pd.array(up, dtype="bool"),
        **{name: ints(values, clamp=True) for name, values in zip(COUNTER_NAMES, counters, strict=True)},
    }
    return pd.DataFrame(table, columns=list(FRAME_COLUMNS))


SAVED: list[tuple[int, list[tuple[object, ...]]]] = []


def _store(path: Path, time_offset: float, huge: bool = False) -> Path:
    """Three snapshots of five ports; ``huge``: two counters at or above 2**63 (beside NULLs).
    What was saved is left in SAVED."""
    SAVED.clear()
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
            SAVED.append((store.save_counter_snapshot(when, "test", None, rows), rows))
    return path


@pytest.mark.parametrize("offset", [0.0, 0.123456789, 1e-7])
def test_load_gives_the_rows_saved(tmp_path: Path, offset: float) -> None:
    path = _store(tmp_path / "c.db", offset)
    with Store.open(path) as store:
        frame = store.load_counters()
        pd.testing.assert_frame_equal(frame, _expected(SAVED), check_exact=True)
        only = store.load_counters(guids=["0x0000000000000a01"])
        want = _expected(SAVED)
        want = want[want["guid"] == "0x0000000000000a01"].reset_index(drop=True)
        pd.testing.assert_frame_equal(only, want, check_exact=True)
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


def test_values_above_int64_beside_nulls_load_clamped(tmp_path: Path) -> None:
    path = _store(tmp_path / "c.db", 0.0, huge=True)
    with Store.open(path) as store:
        frame = store.load_counters()
        exact = store.load_port_counters(SAVED[0][0])
    assert frame["rcv_pkts"].tolist()[1::5] == [2**63 - 1] * 3
    assert frame["xmit_data"].tolist()[4::5] == [2**63 - 1] * 3
    assert frame["xmit_data"].isna().tolist()[2::5] == [True] * 3
    pd.testing.assert_frame_equal(frame, _expected(SAVED), check_exact=True)
    assert exact[1].counters["rcv_pkts"] == 2**64 - 1 and exact[4].counters["xmit_data"] == 2**63 + 2


def test_empty_window_gives_an_empty_frame_of_the_same_shape(tmp_path: Path) -> None:
    path = _store(tmp_path / "c.db", 0.0)
    with Store.open(path) as store:
        empty = store.load_counters(since=T0 + 10_000)
        full = store.load_counters()
    assert empty.empty
    assert list(empty.columns) == list(full.columns)
    assert empty.dtypes.to_dict() == full.dtypes.to_dict()


def test_any_guid_text_comes_back_as_saved(tmp_path: Path) -> None:
    rows = [_row("0x0000000000000a01", 1, T0), ("odd\x1fguid \u00e9", *_row("0x0000000000000a01", 2, T0)[1:])]
    with Store.open(tmp_path / "c.db") as store:
        sid = store.save_counter_snapshot(T0, "test", None, rows)
        frame = store.load_counters()
    assert frame["guid"].tolist() == ["0x0000000000000a01", "odd\x1fguid \u00e9"]
    pd.testing.assert_frame_equal(frame, _expected([(sid, rows)]), check_exact=True)


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
