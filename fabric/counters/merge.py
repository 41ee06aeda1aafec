"""The two ibqueryerrors passes of one collection merged into one store row per port.

Pass 1 (``--counters -r``) gives every port's data counters and LID, pass 2 (the error pass) the
error counters of the ports it lists; a port pass 2 checked but did not list has its error
counters at 0, but only when pass 2 checked at least as many nodes as pass 1 (else they stay
unknown). The merge goes straight from the scanners' accumulators to rows in the store's
``PORT_COUNTER_FIELDS`` order: a 98,304-port fabric is ~200,000 accumulators, and a frozen
record per port on the way costs more than the whole merge. :class:`MergedPorts` keeps what it
needs to build the public :class:`~fabric.counters.parse.PortSample` records on demand, by the
same rules (tests compare the two).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from fabric.core import fields
from fabric.core.fields import PORT_COUNTER_FIELDS
from fabric.counters import ibqueryerrors as iqe
from fabric.counters.samples import PortSample, Unreachable
from topology.model import Fabric, Guid, Node, PortRef

Key = tuple[Guid, int]
Row = tuple[Any, ...]  # PORT_COUNTER_FIELDS order
ERROR_COUNTERS: tuple[str, ...] = (*fields.ERROR_COUNTERS, "xmit_wait")
assert PORT_COUNTER_FIELDS[8:] == fields.COUNTER_NAMES and ERROR_COUNTERS == iqe.ERROR_NAMES

_ZERO_ERRORS: Mapping[str, int] = MappingProxyType(dict.fromkeys(ERROR_COUNTERS, 0))
_ERROR_SET = frozenset(ERROR_COUNTERS)
_ZERO13: tuple[int, ...] = (0,) * len(ERROR_COUNTERS)
_ZERO12: tuple[int, ...] = _ZERO13[:-1]
_NONE13: tuple[None, ...] = (None,) * len(ERROR_COUNTERS)
_NONE4: tuple[None, ...] = (None,) * len(iqe.DATA_NAMES)
_ERRORS_LEN = iqe.RAW_ERRORS_LEN
_ERROR_AT = {fields.COUNTERS[name][1]: i for i, name in enumerate(ERROR_COUNTERS)}  # by PMA name
# ``reachable`` as the int SQLite stores (sqlite3 binds an exact int directly; a bool goes through
# its adapter lookup, ~0.5 us a value)
REACHABLE = 1


def sample_row(sample: PortSample, peer: PortRef | None, now: float) -> Row:
    """The store row of one sample (the perfquery fallback; the merge makes its rows directly)."""
    values = sample.values
    return (
        sample.guid,
        sample.port,
        sample.lid,
        peer.guid if peer else None,
        peer.port if peer else None,
        REACHABLE,
        None,
        now,
        *[values.get(n) for n in fields.COUNTER_NAMES],
    )


def unreachable_row(port: Unreachable, peer: PortRef | None, now: float) -> Row:
    """The store row of a port that did not answer: ``reachable`` False, the reason, no counters."""
    return (
        port.guid,
        port.port,
        port.lid,
        peer.guid if peer else None,
        peer.port if peer else None,
        False,
        port.reason,
        now,
        *_NO_COUNTERS,
    )


_NO_COUNTERS: tuple[None, ...] = (None,) * len(fields.COUNTER_NAMES)
_FIRST_COUNTER = len(PORT_COUNTER_FIELDS) - len(fields.COUNTER_NAMES)
_COUNTER_LIMIT = 1 << 64  # PMA counters are at most 64 bits, and never negative


def sound_row(row: Row) -> Row:
    """``row``, or the row of an unreachable port saying which counter held a value no counter
    can hold (negative, over 64 bits): one bad value costs its port, never the snapshot."""
    if not row[5]:  # already unreachable
        return row
    for name, value in zip(fields.COUNTER_NAMES, row[_FIRST_COUNTER:], strict=True):
        if value is not None and not (isinstance(value, int) and 0 <= value < _COUNTER_LIMIT):
            shown = str(value) if len(str(value)) <= 24 else f"{str(value)[:21]}..."
            reason = f"counter {name} read as {shown}, which no counter can hold: port not read"
            return (*row[:5], False, reason, row[7], *_NO_COUNTERS)
    return row


class _Resolver:
    """The node GUID of an error-pass port (CAs are printed by port GUID); lookups built once."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self._by_lid: dict[int, Node] | None = None
        self._by_desc: dict[str | None, list[Guid]] | None = None

    def __call__(self, acc: iqe.PortAcc) -> Guid | None:
        guid: Guid = acc[iqe.GUID]
        if guid in self.fabric.nodes:
            return guid
        link = iqe.link_of(acc)
        if link is not None:
            if self._by_lid is None:
                self._by_lid = self.fabric.by_lid()
            node = self._by_lid.get(link[0])
            if node is not None:
                return node.guid
            # the far end knows us: the cable from (peer guid, peer port) leads to our node
            peer_guid, peer_port = link[1], link[3]
            if peer_guid is not None and peer_port is not None:
                for port, far, _ in self.fabric.neighbours(peer_guid):
                    if port == peer_port:
                        return far.guid
        if self._by_desc is None:
            self._by_desc = {}
            for n in self.fabric.nodes.values():
                self._by_desc.setdefault(n.description, []).append(n.guid)
        named = self._by_desc.get(acc[iqe.DESC], [])
        return named[0] if len(named) == 1 else None


class MergedPorts:
    """Both passes by port: ``rows`` (every port either pass read, in ``peers`` order) and,
    on demand, the same ports as samples."""

    __slots__ = ("_data", "_errors_ran", "_listed", "complete", "rows")

    def __init__(
        self,
        rows: dict[Key, Row],
        data: dict[Key, iqe.PortAcc],
        listed: dict[Key, iqe.PortAcc],
        errors_ran: bool,
        complete: bool,
    ) -> None:
        self.rows = rows
        self._data = data
        self._listed = listed
        self._errors_ran = errors_ran
        self.complete = complete

    def samples(self) -> dict[Key, PortSample]:
        """The merged ports as PortSample records, keyed like ``rows``."""
        zero = _ZERO_ERRORS
        out: dict[Key, PortSample] = {}
        for key in self.rows:
            acc = self._data.get(key)
            err = self._listed.get(key)
            if acc is None:  # error pass reached a port the data pass did not
                assert err is not None
                out[key] = PortSample(
                    key[0],
                    key[1],
                    err[iqe.LID],
                    MappingProxyType({**zero, **_errors_only(err)}),
                    err[iqe.DESC],
                    False,
                    False,
                    "node",
                    None,
                    MappingProxyType(iqe.materialise(err)[iqe.OTHER]),
                )
                continue
            values = iqe.canonical(acc)
            ext = iqe.extended(values)
            if err is not None:
                # zeros first: error counters keep their canonical place ahead of the data counters
                values = {**zero, **values, **zero, **_errors_only(err)}
            elif self.complete:
                values = {**zero, **values, **zero}
            out[key] = PortSample(
                key[0],
                key[1],
                acc[iqe.LID],
                MappingProxyType(values),
                acc[iqe.DESC],
                ext,
                False,
                "node" if self._errors_ran else acc[iqe.KIND],
                None,
                MappingProxyType(acc[iqe.OTHER]),
            )
        return out


def merge_passes(
    fabric: Fabric,
    peers: Mapping[Key, PortRef],
    data: iqe.Scan | None,
    errors: iqe.Scan | None,
    now: float,
    notes: list[str],
) -> MergedPorts:
    """One row per cabled port (a key of ``peers``) that either pass read."""
    listed: dict[Key, iqe.PortAcc] = {}
    complete = False
    if errors is not None:
        nodes = fabric.nodes
        resolve = _Resolver(fabric)
        for acc in errors.accs:
            if acc[iqe.SUMMED]:
                continue
            guid = acc[iqe.GUID]
            if guid not in nodes:
                guid = resolve(acc)
                if guid is None:
                    notes.append(
                        f"ibqueryerrors listed {acc[iqe.GUID]} port {acc[iqe.PORT]} ({acc[iqe.DESC]!r}), not in the fabric"
                    )
                    continue
            listed[(guid, acc[iqe.PORT])] = acc
        complete = (
            data is not None
            and errors.checked_anything
            and errors.summary.get("nodes", 0) >= data.summary.get("nodes", 0)
        )
        if not complete:
            notes.append("ibqueryerrors error pass incomplete: error counters of unlisted ports left unknown")
    chosen: dict[Key, iqe.PortAcc] = {}
    if data is not None:
        for acc in data.accs:
            key = (acc[iqe.GUID], acc[iqe.PORT])
            if key in peers and not acc[iqe.SUMMED]:
                chosen[key] = acc
    rows: dict[Key, Row] = {}
    unlisted: tuple[int | None, ...] = _ZERO13 if complete else _NONE13
    errs: tuple[int | None, ...]
    data_len, errors_len, raw_at, lid_at = iqe.RAW_DATA_LEN, _ERRORS_LEN, iqe.RAW, iqe.LID
    for key, far in peers.items():
        read = chosen.get(key)
        err = listed.get(key)
        if read is None:
            if err is not None:
                rows[key] = (
                    *key,
                    err[lid_at],
                    far.guid,
                    far.port,
                    REACHABLE,
                    None,
                    now,
                    *_errors13(err),
                    *_NONE4,
                )
            continue
        raw = read[raw_at]
        if raw is not None and len(raw) == data_len:  # a --counters line as the pass prints it
            if err is not None:
                e = err[raw_at]
                if e is not None and len(e) == errors_len and not e[0]:
                    # most ports: no error counter but xmit_wait above 0
                    rows[key] = (
                        key[0],
                        key[1],
                        read[lid_at],
                        far.guid,
                        far.port,
                        REACHABLE,
                        None,
                        now,
                        *_ZERO12,
                        int(e[-1]) if e[-1] else 0,
                        int(raw[0]),
                        int(raw[1]),
                        int(raw[2]),
                        int(raw[3]),
                    )
                    continue
                errs = _errors13(err)
            else:
                errs = unlisted
            rows[key] = (
                key[0],
                key[1],
                read[lid_at],
                far.guid,
                far.port,
                REACHABLE,
                None,
                now,
                *errs,
                int(raw[0]),
                int(raw[1]),
                int(raw[2]),
                int(raw[3]),
            )
        else:
            rows[key] = _generic_row(key, read, err, errors is not None, complete, far, now)
    return MergedPorts(rows, chosen, listed, errors is not None, complete)


def _errors13(err: iqe.PortAcc) -> tuple[int, ...]:
    """The error counters (ERROR_COUNTERS order) an error-pass port listed, 0 where not listed."""
    raw = err[iqe.RAW]
    if raw is not None and len(raw) == _ERRORS_LEN:
        items, xmit_wait = raw
        out = [*_ZERO12, int(xmit_wait) if xmit_wait else 0]
        for pma, value in iqe.pairs(items):
            out[_ERROR_AT[pma]] = int(value)
        return tuple(out)
    values = _errors_only(err)
    return tuple([values.get(n, 0) for n in ERROR_COUNTERS])


def _errors_only(acc: iqe.PortAcc) -> dict[str, int]:
    values: dict[str, int] = iqe.materialise(acc)[iqe.VALUES]
    return values if _ERROR_SET.issuperset(values) else {k: v for k, v in values.items() if k in _ERROR_SET}


def _generic_row(
    key: Key,
    acc: iqe.PortAcc,
    err: iqe.PortAcc | None,
    errors_ran: bool,
    complete: bool,
    far: PortRef,
    now: float,
) -> Row:
    """A data-pass port read line by line (its counters are dicts): the rules of MergedPorts.samples."""
    values = iqe.canonical(acc)
    if errors_ran:
        if err is not None:
            values = {**_ZERO_ERRORS, **values, **_ZERO_ERRORS, **_errors_only(err)}
        elif complete:
            values = {**_ZERO_ERRORS, **values, **_ZERO_ERRORS}
    return (
        *key,
        acc[iqe.LID],
        far.guid,
        far.port,
        REACHABLE,
        None,
        now,
        *[values.get(n) for n in fields.COUNTER_NAMES],
    )


__all__ = ["ERROR_COUNTERS", "REACHABLE", "MergedPorts", "Row", "merge_passes", "sample_row"]
