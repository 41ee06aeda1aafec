"""Prometheus as a counter source: the range queries over the names ``ibfab exporter`` serves
(treydock/infiniband_exporter's), and their answers turned into the counter table health reads.

Pure functions of the HTTP API's JSON (``/api/v1/query_range``, result type ``matrix``); fetching
is fabric.app.health.prometheus's. Each evaluation step of the range becomes a "snapshot" of every
port that had a sample then (Prometheus returns, per step, the newest sample within its lookback),
so health's deltas, sums, flaps and BER come out of it as out of the store's snapshots. Data
counters are served in bytes (words x 4) and go back to words. Values travel as floats: exact up to
2**53, which every error counter and any realistic XmitWait stays under.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from fabric.core.fields import COUNTER_NAMES, FRAME_COLUMNS
from fabric.exports.prometheus import COUNTER_METRICS, counter_metric_name
from topology.errors import ParseError
from topology.model import normalise_guid

if TYPE_CHECKING:
    import pandas as pd

TOOL = "prometheus"
# The API refuses a range of more than 11,000 points per series.
MAX_POINTS = 11_000
_GUID = re.compile(r"^0x[0-9a-fA-F]{1,16}$")


def counter_query(name: str) -> str:
    """The PromQL selecting counter ``name`` on every switch and HCA port.

    >>> counter_query("symbol_errors")
    '{__name__=~"infiniband_switch_port_symbol_error_total|infiniband_hca_port_symbol_error_total"}'
    """
    names = "|".join(counter_metric_name(kind, name) for kind in ("switch", "hca"))
    return '{__name__=~"' + names + '"}'


def step_for(window_s: float, step_s: float) -> float:
    """``step_s``, or the smallest step that keeps the range under the API's point limit."""
    return max(step_s, math.ceil(window_s / (MAX_POINTS - 1)))


def matrix(doc: Any, source: str) -> list[dict[str, Any]]:
    """The series of one query_range answer; an error answer or another shape is a ParseError."""
    if not isinstance(doc, dict):
        raise ParseError(TOOL, source, 0, "", "the answer is not a JSON object")
    if doc.get("status") != "success":
        why = f"{doc.get('errorType', 'error')}: {doc.get('error', 'no reason given')}"
        raise ParseError(TOOL, source, 0, "", f"query failed: {why}")
    data = doc.get("data")
    if (
        not isinstance(data, dict)
        or data.get("resultType") != "matrix"
        or not isinstance(data.get("result"), list)
    ):
        raise ParseError(TOOL, source, 0, "", "expected a matrix result (a range query's answer)")
    return list(data["result"])


def counter_table(answers: Mapping[str, Iterable[dict[str, Any]]], source: str) -> pd.DataFrame:
    """The counter table (fields.FRAME_COLUMNS) of the range answers, one per counter name.

    A port has a row at every step where any of its counters has a sample; a counter without one
    there is NA. Snapshots are numbered by step from 1; ``time`` is the step's time."""
    import numpy as np
    import pandas as pd

    cells: dict[tuple[float, str, int], dict[str, int]] = {}
    peers: dict[tuple[str, int], tuple[str | None, int | None]] = {}
    for name, series_list in answers.items():
        if name not in COUNTER_METRICS:
            raise ParseError(TOOL, source, 0, "", f"no such counter {name!r}")
        scale = COUNTER_METRICS[name][1]
        for series in series_list:
            labels = series.get("metric", {})
            guid, port = _port(labels, source)
            remote = labels.get("remote_guid") or None
            remote_port = labels.get("remote_port") or None
            peers[(guid, port)] = (
                normalise_guid(remote) if remote and _GUID.match(remote) else None,
                int(remote_port) if remote_port and remote_port.isdigit() else None,
            )
            for point in series.get("values", []):
                when, text = float(point[0]), point[1]
                value = float(text)
                if not math.isfinite(value) or value < 0:
                    continue  # a stale marker or garbage: no reading at that step
                cells.setdefault((when, guid, port), {})[name] = int(value) // scale
    times = sorted({t for t, _, _ in cells})
    snapshot_of = {t: i + 1 for i, t in enumerate(times)}
    keys = sorted(cells)
    columns: dict[str, Any] = {
        "snapshot": np.array([snapshot_of[t] for t, _, _ in keys], dtype=np.int64),
        "time": np.array([t for t, _, _ in keys], dtype=np.float64),
        "guid": pd.Series([g for _, g, _ in keys], dtype=object),
        "port": np.array([p for _, _, p in keys], dtype=np.int64),
        "lid": pd.array([None] * len(keys), dtype="Int64"),
        "peer_guid": pd.Series([peers[(g, p)][0] for _, g, p in keys], dtype=object),
        "peer_port": pd.array([peers[(g, p)][1] for _, g, p in keys], dtype="Int64"),
        "reachable": np.ones(len(keys), dtype=bool),
    }
    for name in COUNTER_NAMES:
        columns[name] = pd.array([cells[k].get(name) for k in keys], dtype="Int64")
    return pd.DataFrame(columns, columns=list(FRAME_COLUMNS))


def _port(labels: Mapping[str, str], source: str) -> tuple[str, int]:
    guid, port = labels.get("guid", ""), labels.get("port", "")
    if not _GUID.match(guid) or not port.isdigit():
        shown = ", ".join(f"{k}={v!r}" for k, v in sorted(labels.items()))[:200]
        raise ParseError(TOOL, source, 0, "", f"a series without a node GUID and port number: {shown}")
    return normalise_guid(guid), int(port)


__all__ = ["MAX_POINTS", "counter_query", "counter_table", "matrix", "step_for"]
