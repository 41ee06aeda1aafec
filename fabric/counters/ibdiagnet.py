"""ibdiagnet port counters: ibdiagnet2.pm, and the PM_INFO section of ibdiagnet2.db_csv.

Use through :func:`fabric.counters.parse.parse_ibdiagnet_pm`. Error counters come from the base
attribute (their width is what :mod:`fabric.core.fields` promises; the ``_extended``/``Ext``
64-bit twins go to ``other``), data counters from their 64-bit ``_extended`` twins; ``NA``
(``-1`` in db_csv) values are left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from fabric.core import fields
from fabric.counters.samples import DATA_COUNTERS, PortSample, canonical_order, fail, split_lines, to_int
from topology.bounds import lid_or_hex_problem, port_problem
from topology.errors import ParseError
from topology.ibdiag_csv import db_csv_sections, optional_int
from topology.model import normalise_guid

# ibdiagnet2.pm key -> canonical name (base PortCounters). 64-bit data counters carry _extended.
_PM_BASE: Mapping[str, str] = MappingProxyType(
    {
        "symbol_error_counter": "symbol_errors",
        "link_error_recovery_counter": "link_error_recovery",
        "link_down_counter": "link_downed",
        "port_rcv_errors": "rcv_errors",
        "port_rcv_remote_physical_errors": "rcv_remote_physical_errors",
        "port_rcv_switch_relay_errors": "rcv_switch_relay_errors",
        "port_xmit_discard": "xmit_discards",
        "port_xmit_constraint_errors": "xmit_constraint_errors",
        "port_rcv_constraint_errors": "rcv_constraint_errors",
        "local_link_integrity_errors": "local_link_integrity_errors",
        "excessive_buffer_errors": "excessive_buffer_overrun_errors",
        "vl15_dropped": "vl15_dropped",
        "port_xmit_wait": "xmit_wait",
        "port_xmit_data": "xmit_data",
        "port_rcv_data": "rcv_data",
        "port_xmit_pkts": "xmit_pkts",
        "port_rcv_pkts": "rcv_pkts",
    }
)
_PM_EXTENDED: Mapping[str, str] = MappingProxyType(
    {f"{k}_extended": v for k, v in _PM_BASE.items() if v in DATA_COUNTERS}
)
_PM_HEADER = re.compile(
    r"^Port=(?P<port>\d+)\s+Lid=(?P<lid>0x[0-9a-fA-F]+|\d+)\s+GUID=(?P<guid>0x[0-9a-fA-F]+)"
    r"(?:\s+Device=\d+)?(?:\s+Port Name=(?P<name>.*))?$"
)
_PM_FIELD = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9_]*)=(?P<value>\S+)$")


def parse_pm(
    text: str | Iterable[str], source: str, *, problems: list[ParseError] | None = None
) -> list[PortSample]:
    """Samples from ibdiagnet2.pm, or from the PM_INFO section when given an ibdiagnet2.db_csv.

    ``NA`` values are left out; error counters come from the base attribute (their width is what
    :mod:`fields` promises) and data counters from their ``_extended`` 64-bit twins.
    """
    if isinstance(text, str) and "START_PM_INFO" in text:
        return _parse_db_csv_pm(text, source, problems)
    lines = split_lines(text)
    if any(ln.strip() == "START_PM_INFO" for ln in lines):
        return _parse_db_csv_pm("\n".join(lines), source, problems)
    out: list[PortSample] = []
    head: re.Match[str] | None = None
    kv: dict[str, str] = {}

    def flush() -> None:
        if head is not None:
            out.append(_pm_sample(head, kv))

    skipping = False  # inside the block of a header out of range
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#") or set(line) == {"-"}:
            continue
        m = _PM_HEADER.match(line)
        if m:
            flush()
            head, kv = m, {}
            problem = lid_or_hex_problem(m["lid"]) or port_problem(m["port"]) or _guid_problem(m["guid"])
            if problem is not None:  # the port's block is left out with it (named)
                fail("ibdiagnet", source, lineno, raw, problem, problems)
                head = None
                skipping = True
            else:
                skipping = False
            continue
        if skipping:
            continue
        f = _PM_FIELD.match(line)
        if f is None or head is None:
            what = "counter before any 'Port=N Lid=... GUID=...' header" if f else "not a 'key=value' line"
            fail("ibdiagnet", source, lineno, raw, what, problems)
            continue
        value = f["value"]
        if value != "NA":
            try:
                to_int(value)
            except ValueError:
                where = f"GUID {head['guid']} port {head['port']}"
                fail(
                    "ibdiagnet",
                    source,
                    lineno,
                    raw,
                    f"{where}: {f['key']} has no numeric value: unknown",
                    problems,
                )
                continue
        kv[f["key"]] = value
    flush()
    return out


def _guid_problem(text: str) -> str | None:
    try:
        normalise_guid(text)
    except ValueError as exc:
        return str(exc)
    return None


def _pm_sample(head: re.Match[str], kv: Mapping[str, str]) -> PortSample:
    values: dict[str, int] = {}
    other: dict[str, int] = {}
    for key, text in kv.items():
        if text == "NA":
            continue
        number = to_int(text)
        if key in _PM_BASE and _PM_BASE[key] not in DATA_COUNTERS:
            values[_PM_BASE[key]] = number
        elif key not in _PM_BASE and key not in _PM_EXTENDED:
            other[key] = number
    extended = all(k in kv and kv[k] != "NA" for k in _PM_EXTENDED)
    for key, name in (
        _PM_EXTENDED if extended else {k: v for k, v in _PM_BASE.items() if v in DATA_COUNTERS}
    ).items():
        if key in kv and kv[key] != "NA":
            values[name] = to_int(kv[key])
    return PortSample(
        guid=normalise_guid(head["guid"]),
        port=int(head["port"]),
        lid=to_int(head["lid"]),
        values=MappingProxyType(canonical_order(values)),
        extended=extended,
        port_name=(head["name"] or "").strip() or None,
        other=MappingProxyType(other),
    )


_ROW_KEYS = frozenset({"NodeGUID", "PortGUID", "PortNumber"})


def _row_numbers(row: dict[str, str], ext_keys: dict[str, str]) -> dict[str, int]:
    """The row's numeric columns. A counter that is not a number is a ValueError; a column this
    parser does not know and that holds no number (a newer ibdiagnet's text column) is no counter."""
    numbers: dict[str, int] = {}
    for key, value in row.items():
        if key in _ROW_KEYS or not value:
            continue
        try:
            numbers[key] = to_int(value)
        except ValueError:
            if key in fields.BY_PMA_NAME or key in ext_keys:
                raise ValueError(f"{key} {value!r} is not a number") from None
    return numbers


def _parse_db_csv_pm(text: str, source: str, problems: list[ParseError] | None) -> list[PortSample]:
    bad_rows: list[ParseError] = []
    sections = db_csv_sections(text, source, ("NODES", "PORTS", "PM_INFO"), bad_rows=bad_rows)
    for error in bad_rows:  # a row that is not CSV costs its port (or its name or LID), not the run
        fail("ibdiagnet", source, error.lineno, error.line, error.problem, problems)
    pm = sections.get("PM_INFO")
    if pm is None:
        raise ParseError("ibdiagnet", source, 0, "", "no PM_INFO section (its END_PM_INFO line is missing)")
    pm.need(("NodeGUID", "PortNumber"), source)
    nodes, ports = sections.get("NODES"), sections.get("PORTS")
    descriptions = {r.get("NodeGUID"): r.get("NodeDesc") for r in (nodes.rows if nodes else ())}
    # Without a LID column (renamed, or an older run) the LIDs are unknown, the counters still read.
    lids = {(r.get("NodeGuid"), r.get("PortNum")): r.get("LID", "") for r in (ports.rows if ports else ())}
    ext_keys = {f"{pma}Extended": name for name, (_, pma) in fields.COUNTERS.items() if name in DATA_COUNTERS}
    out = []
    for i, row in enumerate(pm.rows):
        lineno = pm.line_of(i)
        raw = ",".join(row.values())
        lid_text = lids.get((row.get("NodeGUID"), row.get("PortNumber")), "0")
        if lid_text in {"0", ""}:  # switch ports answer on port 0's LID
            lid_text = lids.get((row.get("NodeGUID"), "0"), "0")
        problem = port_problem(row.get("PortNumber", "")) or (
            lid_text.upper() not in ("", "N/A", "NA") and lid_or_hex_problem(lid_text)
        )
        if problem:
            fail("ibdiagnet", source, lineno, raw, f"bad PM_INFO row ({problem})", problems)
            continue
        try:
            guid, port = normalise_guid(row["NodeGUID"]), int(row["PortNumber"])
            numbers = _row_numbers(dict(row), ext_keys)
        except (KeyError, ValueError) as exc:
            fail("ibdiagnet", source, lineno, raw, f"bad PM_INFO row ({exc})", problems)
            continue
        numbers = {k: v for k, v in numbers.items() if v != -1}  # -1: not read (NA)
        extended = all(k in numbers for k in ext_keys)
        values: dict[str, int] = {}
        other: dict[str, int] = {}
        for key, value in numbers.items():
            name = fields.BY_PMA_NAME.get(key)
            if name is not None and (name not in DATA_COUNTERS or not extended):
                values[name] = value
            elif key in ext_keys and extended:
                values[ext_keys[key]] = value
            elif name is None:
                other[key] = value
        out.append(
            PortSample(
                guid=guid,
                port=port,
                lid=optional_int(lid_text) or None,
                values=MappingProxyType(canonical_order(values)),
                node_description=descriptions.get(row["NodeGUID"]),
                extended=extended,
                other=MappingProxyType(other),
            )
        )
    return out
