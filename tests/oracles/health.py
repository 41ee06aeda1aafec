"""Health's oracle: the counter table's deltas (:func:`fabric.counters.deltas.compute_deltas`),
summed per port with pandas/numpy group codes, and every link's record by the rules in full
(:meth:`fabric.health.assess.LinkScores.record`, no short cut for quiet links).
:func:`fabric.health.assess` (the store's blocks summed column-wise, quiet links on a short cut)
gives the same per-port table and the same report (tests/fabric/test_health_columnar.py,
tests/fabric/test_health.py, tests/healthpaths.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from fabric.counters.deltas import SATURABLE, compute_deltas
from fabric.health import HealthThresholds, LinkEvent, PastFinding
from fabric.health.assess import LinkScores
from fabric.health.history import History
from fabric.health.ports import FINDING_COUNTERS, SCORED, PortTable
from fabric.health.records import HealthReport, LinkHealth, NodeHealth
from fabric.health.status import Status
from topology.errors import UsageError
from topology.model import Fabric, LinkKey
from topology.wiring import BelowPeers

if TYPE_CHECKING:
    from numpy.typing import NDArray


def assess_oracle(
    frame: pd.DataFrame,
    fabric: Fabric,
    *,
    since: float | None,
    now: float,
    events: Sequence[LinkEvent] = (),
    history: Sequence[PastFinding] = (),
    thresholds: HealthThresholds = HealthThresholds(),  # noqa: B008 (frozen)
    below_peers: Mapping[LinkKey, BelowPeers] | None = None,
) -> HealthReport:
    """The report of the counter table ``frame``'s samples in [since, now], the plain way."""
    t = thresholds
    times = frame["time"]
    start = float(times.min()) if since is None and len(frame) else (now if since is None else since)
    if start > now:
        raise UsageError(f"health window starts after it ends (since {start} > now {now})")
    inside = ((times >= start) & (times <= now)).to_numpy(dtype=bool)
    window = frame if inside.all() else frame[inside]
    pt = port_table(compute_deltas(window), now=now, short_s=t.ber_window_s, long_s=t.ber_window_long_s)
    snapshots = int(window["snapshot"].nunique())
    return report_long_way(pt, fabric, start, now, snapshots, len(window), events, history, t, below_peers)


def report_long_way(
    pt: PortTable,
    fabric: Fabric,
    start: float,
    now: float,
    snapshots: int,
    samples: int,
    events: Sequence[LinkEvent],
    history: Sequence[PastFinding],
    t: HealthThresholds,
    below_peers: Mapping[LinkKey, BelowPeers] | None = None,
) -> HealthReport:
    """Per-port sums over [start, now] -> links, nodes and summary: every link's record by the
    rules in full (no short cut), links and nodes ranked with a key function."""
    scores = LinkScores(pt, fabric, start, now, events, history, t, below_peers)
    keys = scores.keys
    results = [scores.record(i) for i in range(len(keys))]
    order = sorted(range(len(results)), key=lambda i: (results[i].score, -results[i].status.rank, keys[i]))
    ranked = [results[i] for i in order]
    by_key = dict(zip(keys, results, strict=True))
    nodes = nodes_long_way(fabric, by_key, scores.past, scores.today, t)
    return HealthReport(tuple(ranked), tuple(nodes), scores.summary(ranked, nodes, snapshots, samples))


def nodes_long_way(
    fabric: Fabric, by_key: dict[LinkKey, LinkHealth], past: History, today: int, t: HealthThresholds
) -> list[NodeHealth]:
    out: list[NodeHealth] = []
    for guid, node in fabric.nodes.items():
        mine = [by_key[lk.key] for lk in fabric.links_of(guid)]
        worst = max(mine, key=lambda h: (h.status.rank, -h.score), default=None)
        bad = sum(1 for h in mine if h.status.rank >= Status.WARN.rank)
        days = past.node_days.get(guid, set()) | ({today} if bad else set())
        offender = len(days) >= t.repeat_days
        score = min((h.score for h in mine), default=100)
        status = worst.status if worst is not None else Status.OK
        if offender and status is Status.OK:
            status, score = Status.WATCH, min(score, 89)
        out.append(
            NodeHealth(
                guid, node.description, node.kind.value, score, status, len(mine), bad, offender, len(days)
            )
        )
    out.sort(key=lambda n: (n.score, -n.status.rank, n.guid))
    return out


def port_table(deltas: pd.DataFrame, *, now: float, short_s: float, long_s: float) -> PortTable:
    """Sum ``deltas`` (from :func:`fabric.counters.deltas.compute_deltas`) per (guid, port)."""
    sums = PortSums(now=now, short_s=short_s, long_s=long_s)
    sums.add(deltas)
    return sums.table()


_PORT_BITS = 32  # a port key is guid number << 32 | port number


class PortSums:
    """:func:`port_table` built piece by piece: ``add`` the deltas of each piece, then ``table``.

    Memory is one entry per port (plus the rare flap rows), whatever the number of pieces; the
    table equals ``port_table`` of all the pieces' deltas together, in the same order (ports by
    first appearance, sums added in row order).
    """

    def __init__(self, *, now: float, short_s: float, long_s: float) -> None:
        self._short_from = now - short_s
        self._long_from = now - long_s
        self._guid_names: list[str] = []
        self._guids: pd.Index[Any] = pd.Index([], dtype=object)
        self._keys: pd.Index[Any] = pd.Index(np.zeros(0, dtype=np.int64))
        self._samples = np.zeros(0, dtype=np.int64)
        self._seconds = np.zeros(0, dtype=np.float64)
        self._sums = {name: np.zeros(0, dtype=np.int64) for name in SCORED}
        self._symbol_short = np.zeros(0, dtype=np.int64)
        self._symbol_long = np.zeros(0, dtype=np.int64)
        self._saturated: dict[str, NDArray[np.bool_]] = {}
        self._reset = np.zeros(0, dtype=bool)
        self._link_changes = np.zeros(0, dtype=np.int64)
        self._first_finding = np.zeros(0, dtype=np.float64)
        self._last_finding = np.zeros(0, dtype=np.float64)
        self._flap_rows: list[pd.DataFrame] = []

    def add(self, deltas: pd.DataFrame) -> None:
        """Add one piece's delta rows (the pieces in table order)."""
        guid = deltas["guid"]
        if isinstance(guid.dtype, pd.CategoricalDtype):  # as compute_deltas returns it: already coded
            guid_codes, guid_names = guid.cat.codes.to_numpy(), guid.cat.categories
        else:
            guid_codes, guid_names = pd.factorize(guid, sort=False)
        port = deltas["port"].to_numpy(dtype=np.int64)
        if port.size and (int(port.min()) < 0 or int(port.max()) >= 1 << _PORT_BITS):
            raise UsageError(f"port number out of range in the delta table: {int(port.max())}")
        number = self._guid_numbers(guid_names)
        codes, keys = pd.factorize((number[guid_codes] << _PORT_BITS) | port, sort=False)
        at = self._keys.get_indexer(keys)
        if (new := at < 0).any():
            at[new] = np.arange(len(self._keys), len(self._keys) + int(new.sum()))
            self._grow(np.asarray(keys, dtype=np.int64)[new])
        row_port = at[codes]  # each delta row's port, numbered across pieces
        n = len(self._keys)

        def total(values: NDArray[np.generic]) -> NDArray[np.int64]:
            # bincount weights are float64: exact for sums below 2**53, far beyond any error count
            return np.bincount(row_port, weights=values, minlength=n).round().astype(np.int64)

        time = deltas["time"].to_numpy(dtype=np.float64)
        prev_time = deltas["prev_time"].to_numpy(dtype=np.float64)
        same_cable = ~deltas["link_changed"].to_numpy(dtype=bool)
        elapsed = np.where(same_cable, deltas["elapsed"].to_numpy(dtype=np.float64), 0.0)
        self._samples += np.bincount(row_port, minlength=n)
        np.add.at(self._seconds, row_port, elapsed)  # row by row, as one bincount over every piece
        counts: dict[str, NDArray[np.int64]] = {}
        finding = np.zeros(len(deltas), dtype=bool)
        for name in SCORED:
            counts[name] = deltas[name].to_numpy(dtype=np.int64, na_value=0)
            if counts[name].any():
                self._sums[name] += total(counts[name])
            if name in FINDING_COUNTERS:
                finding |= counts[name] > 0
        symbol = counts["symbol_errors"]
        if symbol.any():
            self._symbol_short += total(np.where(prev_time >= self._short_from, symbol, 0))
            self._symbol_long += total(np.where(prev_time >= self._long_from, symbol, 0))
        for name in SCORED:
            if name in SATURABLE and (flags := deltas[f"saturated_{name}"].to_numpy(dtype=bool)).any():
                hit = np.bincount(row_port[flags], minlength=n) > 0
                self._saturated[name] = self._saturated[name] | hit if name in self._saturated else hit
        reset = deltas["reset"].to_numpy(dtype=bool)
        if reset.any():
            self._reset |= np.bincount(row_port[reset], minlength=n) > 0
        self._link_changes += np.bincount(row_port, weights=~same_cable, minlength=n).astype(np.int64)
        if finding.any():
            found_at = pd.Series(time[finding]).groupby(row_port[finding])
            first, last = found_at.min(), found_at.max()
            where = first.index.to_numpy()
            self._first_finding[where] = np.fmin(self._first_finding[where], first.to_numpy())
            self._last_finding[where] = np.fmax(self._last_finding[where], last.to_numpy())
        flap_mask = (counts["link_downed"] > 0) | (counts["link_error_recovery"] > 0)
        if flap_mask.any():
            self._flap_rows.append(
                pd.DataFrame(
                    {
                        "guid": np.asarray(guid_names, dtype=object)[guid_codes[flap_mask]],
                        "port": port[flap_mask],
                        "prev_time": prev_time[flap_mask],
                        "time": time[flap_mask],
                        "link_downed": counts["link_downed"][flap_mask],
                        "link_error_recovery": counts["link_error_recovery"][flap_mask],
                    }
                )
            )

    def table(self) -> PortTable:
        keys = self._keys.to_numpy(dtype=np.int64)
        n = keys.size
        empty = np.zeros(0, dtype=np.int64)
        flap_rows = (
            pd.concat(self._flap_rows, ignore_index=True)
            if self._flap_rows
            else pd.DataFrame(
                {
                    "guid": np.zeros(0, dtype=object),
                    "port": empty,
                    "prev_time": np.zeros(0),
                    "time": np.zeros(0),
                    "link_downed": empty,
                    "link_error_recovery": empty,
                }
            )
        )
        return PortTable(
            guids=np.asarray(self._guid_names, dtype=object)[keys >> _PORT_BITS],
            ports=keys & ((1 << _PORT_BITS) - 1),
            samples=self._samples,
            seconds=self._seconds,
            sums=self._sums,
            symbol_short=self._symbol_short,
            symbol_long=self._symbol_long,
            saturated={name: self._saturated[name] for name in SCORED if name in self._saturated},
            reset=self._reset,
            link_changes=self._link_changes,
            first_finding=self._first_finding if n else np.zeros(0),
            last_finding=self._last_finding if n else np.zeros(0),
            flap_rows=flap_rows,
        )

    def _guid_numbers(self, names: Any) -> NDArray[np.int64]:
        """Each of ``names``' number across pieces (new GUIDs get the next ones)."""
        number = np.asarray(self._guids.get_indexer(names), dtype=np.int64)
        if (new := number < 0).any():
            fresh = [str(g) for g in np.asarray(names, dtype=object)[new]]
            number[new] = np.arange(len(self._guid_names), len(self._guid_names) + len(fresh))
            self._guid_names += fresh
            self._guids = pd.Index(self._guid_names, dtype=object)
        return number

    def _grow(self, keys: NDArray[np.int64]) -> None:
        """Room for ports seen for the first time, in the order they were seen."""
        k = keys.size
        self._keys = pd.Index(np.concatenate((self._keys.to_numpy(dtype=np.int64), keys)))
        self._samples = np.concatenate((self._samples, np.zeros(k, dtype=np.int64)))
        self._seconds = np.concatenate((self._seconds, np.zeros(k)))
        self._sums = {
            name: np.concatenate((v, np.zeros(k, dtype=np.int64))) for name, v in self._sums.items()
        }
        self._symbol_short = np.concatenate((self._symbol_short, np.zeros(k, dtype=np.int64)))
        self._symbol_long = np.concatenate((self._symbol_long, np.zeros(k, dtype=np.int64)))
        self._saturated = {
            name: np.concatenate((v, np.zeros(k, dtype=bool))) for name, v in self._saturated.items()
        }
        self._reset = np.concatenate((self._reset, np.zeros(k, dtype=bool)))
        self._link_changes = np.concatenate((self._link_changes, np.zeros(k, dtype=np.int64)))
        self._first_finding = np.concatenate((self._first_finding, np.full(k, np.nan)))
        self._last_finding = np.concatenate((self._last_finding, np.full(k, np.nan)))
