"""Prometheus range answers -> the counter table health reads (fabric.exports.prometheus_query)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from fabric.core.fields import FRAME_COLUMNS
from fabric.counters.deltas import compute_deltas
from fabric.exports.prometheus_query import MAX_POINTS, counter_query, counter_table, matrix, step_for
from topology.errors import ParseError

A, B = "0x0000000000000a01", "0x0000000000000b02"


def _series(
    name: str, guid: str, port: int, values: list[tuple[float, str]], remote: str = B
) -> dict[str, Any]:
    labels = {"__name__": name, "guid": guid.upper().replace("0X", "0x"), "port": str(port), "switch": "leaf"}
    labels |= {"remote_guid": remote, "remote_port": "3", "remote_name": "x"}
    return {"metric": labels, "values": [[t, v] for t, v in values]}


def test_answers_become_the_counter_table_with_data_in_words() -> None:
    answers = {
        "symbol_errors": [
            _series(
                "infiniband_switch_port_symbol_error_total", A, 1, [(100.0, "0"), (160.0, "5"), (220.0, "9")]
            )
        ],
        "xmit_data": [
            _series(
                "infiniband_switch_port_transmit_data_bytes_total", A, 1, [(100.0, "400"), (160.0, "800")]
            ),
            _series(
                "infiniband_hca_port_transmit_data_bytes_total",
                B,
                3,
                [(160.0, "40"), (220.0, "NaN")],
                remote="",
            ),
        ],
    }
    frame = counter_table(answers, "test")
    assert tuple(frame.columns) == FRAME_COLUMNS
    assert frame[["snapshot", "time", "guid", "port"]].values.tolist() == [
        [1, 100.0, A, 1],
        [2, 160.0, A, 1],
        [2, 160.0, B, 3],
        [3, 220.0, A, 1],
    ]
    assert frame["xmit_data"].tolist() == [100, 200, 10, pd.NA]  # bytes / 4; a stale marker: no reading
    assert frame["symbol_errors"].tolist() == [0, 5, pd.NA, 9]
    assert frame["peer_guid"].tolist() == [B, B, None, B] and frame["peer_port"].tolist()[:2] == [3, 3]
    deltas = compute_deltas(frame)
    assert deltas[deltas["guid"] == A]["symbol_errors"].tolist() == [5, 4]


def test_error_answers_and_foreign_series_are_parse_errors() -> None:
    with pytest.raises(ParseError, match="query failed: bad_data: parse error"):
        matrix({"status": "error", "errorType": "bad_data", "error": "parse error"}, "prom")
    with pytest.raises(ParseError, match="expected a matrix"):
        matrix({"status": "success", "data": {"resultType": "vector", "result": []}}, "prom")
    with pytest.raises(ParseError, match="without a node GUID"):
        counter_table({"symbol_errors": [{"metric": {"port": "1"}, "values": [[1, "1"]]}]}, "prom")


def test_queries_and_steps() -> None:
    query = counter_query("xmit_data")
    assert "infiniband_switch_port_transmit_data_bytes_total" in query and "infiniband_hca_port" in query
    assert step_for(3600.0, 60.0) == 60.0
    assert step_for(90 * 86400.0, 60.0) * (MAX_POINTS - 1) >= 90 * 86400.0
