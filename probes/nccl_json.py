"""nccl-tests' JSON report (``-J FILE``, nccl-tests 2.17.3 and later) read into the records the text
parser makes (:class:`probes.nccl_parse.NcclTestResult`), so a saved report is judged as the run's
text is.

The format is nccl-tests' ``src/util.cu`` (JSON_FILE_VERSION 3 of nccl-tests v2.19.6; versions 1
and 2 are read too): one object with ``version``, ``start_time``, ``args`` (the command line),
``env`` (the process environment: only its ``NCCL_*`` variables are kept), ``nccl_version`` (the
library's version code, 22809 for 2.28.9), ``config`` (sizes, iterations, ``devices``: one object
per rank), ``results`` (per size: ``size``, ``count``, ``type``, ``redop``, ``root`` as printed,
``out_of_place`` / ``in_place`` with ``time`` or ``cpu_time``, ``alg_bw``, ``bus_bw``,
``nwrong``), ``out_of_bounds``, ``average_bus_bandwidth`` (``average_bus_bandwidith`` /
``bandwidith`` before 2.17.8) and ``errors`` (NCCL's last error). nccl-tests writes doubles with
``%lf``: NaN as the string ``"nan"``, an infinity as a bare ``inf`` that is no JSON; both are read.
A report cut short (the run was killed before it closed the file) is a :class:`ParseError`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from probes.nccl_env import EnvironmentReader, Evidence, settings_from_env
from probes.nccl_parse import (
    NcclRank,
    NcclRow,
    NcclTestResult,
    NcclTiming,
    NcclWarn,
    completion,
    error_line,
)
from topology.errors import ParseError
from topology.textfile import read_input_text

TOOL = "nccl-tests JSON"
_BARE_INF = re.compile(r"(?<=[:\[,])(\s*)(-?)inf\b")
_NAN = float("nan")


class _Bad(Exception):
    """A field of the wrong kind: which, and what it holds."""


def _field(obj: Mapping[str, Any], key: str, kinds: tuple[type, ...], where: str, default: Any = None) -> Any:
    value = obj.get(key, default)
    if value is None or value is default:
        return value
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise _Bad(f"{where}{key} is {type(value).__name__} {str(value)[:40]!r}")
    return value


def _float(obj: Mapping[str, Any], key: str, where: str) -> float | None:
    value = _field(obj, key, (int, float, str), where)
    if value is None:
        return None
    try:
        return float(value)  # "nan", "inf" as nccl-tests writes them
    except ValueError:
        raise _Bad(f"{where}{key} is not a number: {str(value)[:40]!r}") from None


def _int(obj: Mapping[str, Any], key: str, where: str) -> int | None:
    value = _field(obj, key, (int,), where)
    return None if value is None else int(value)


def _timing(obj: Any, where: str) -> NcclTiming:
    if obj is None:
        return NcclTiming(_NAN, _NAN, _NAN)  # trace replay runs only in place
    if not isinstance(obj, dict):
        raise _Bad(f"{where} is not an object")
    time = _float(obj, "time", where + ".")
    if time is None:
        time = _float(obj, "cpu_time", where + ".")
    wrong = _float(obj, "nwrong", where + ".")
    return NcclTiming(
        _NAN if time is None else time,
        _float(obj, "alg_bw", where + ".") or 0.0,
        _float(obj, "bus_bw", where + ".") or 0.0,
        None if wrong is None or not math.isfinite(wrong) else int(wrong),
    )


def _row(obj: Any, i: int) -> NcclRow:
    where = f"results[{i}]"
    if not isinstance(obj, dict):
        raise _Bad(f"{where} is not an object")
    root_text = _field(obj, "root", (str, int), where + ".")
    try:
        root = None if root_text is None else int(str(root_text).strip())
    except ValueError:
        raise _Bad(f"{where}.root is not a number: {str(root_text)[:40]!r}") from None
    size, count = _int(obj, "size", where + "."), _int(obj, "count", where + ".")
    if size is None or count is None:
        raise _Bad(f"{where} has no size or count")
    return NcclRow(
        size,
        count,
        _field(obj, "type", (str,), where + ".") or "",
        _field(obj, "redop", (str,), where + ".") or "",
        root,
        _timing(obj.get("out_of_place"), where + ".out_of_place"),
        _timing(obj.get("in_place"), where + ".in_place"),
    )


def _rank(obj: Any, i: int) -> NcclRank:
    where = f"config.devices[{i}]."
    if not isinstance(obj, dict):
        raise _Bad(f"config.devices[{i}] is not an object")
    return NcclRank(
        _int(obj, "rank", where) or 0,
        _int(obj, "group", where),
        _int(obj, "pid", where) or 0,
        _field(obj, "hostname", (str,), where) or "",
        _int(obj, "device", where) or 0,
        _field(obj, "device_hex", (str,), where) or "",
        _field(obj, "device_info", (str,), where) or "",
    )


def nccl_version_name(code: int) -> str:
    """NCCL's version code as a version: ``22809`` -> ``2.28.9`` (``2908`` -> ``2.9.8``, the code
    of versions before 2.9).

    >>> nccl_version_name(22809), nccl_version_name(2708)
    ('2.28.9', '2.7.8')
    """
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def _list(doc: Mapping[str, Any], key: str, where: str = "") -> list[Any]:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Bad(f"{where}{key} is not a list")
    return value


def _result(doc: Any, source: str, binary: str | None) -> NcclTestResult:
    if not isinstance(doc, dict) or ("results" not in doc and "config" not in doc):
        raise _Bad("not an nccl-tests report (no 'config' or 'results')")
    args = [a for a in _list(doc, "args") if isinstance(a, str)]
    collective = binary or (args[0].rsplit("/", 1)[-1] if args else None)
    env = EnvironmentReader()
    for name, value in settings_from_env(e for e in _list(doc, "env") if isinstance(e, str)):
        env.add_setting(name, value, Evidence(None, f"env {name}={value}"))
    code = _int(doc, "nccl_version", "")
    config = doc.get("config") or {}
    if not isinstance(config, dict):
        raise _Bad("config is not an object")
    params = {k: str(v) for k, v in config.items() if isinstance(v, int | str) and not isinstance(v, bool)}
    ranks = [_rank(d, i) for i, d in enumerate(_list(config, "devices", "config."))]
    rows = [_row(r, i) for i, r in enumerate(_list(doc, "results"))]
    oob_obj = doc.get("out_of_bounds") or {}
    avg_obj = doc.get("average_bus_bandwidth") or doc.get("average_bus_bandwidith") or {}
    if not isinstance(oob_obj, dict) or not isinstance(avg_obj, dict):
        raise _Bad("out_of_bounds or average_bus_bandwidth is not an object")
    oob = _int(oob_obj, "count", "out_of_bounds.")
    avg = _float(avg_obj, "bandwidth", "average_bus_bandwidth.")
    if avg is None:
        avg = _float(avg_obj, "bandwidith", "average_bus_bandwidth.")
    avg_failed = avg_obj.get("okay") == "false"
    head = ranks[0] if ranks else NcclRank(0, None, 0, "", 0, "", "")
    # NCCL's last error (as the text's '# error:' line): a completion error fails the run as its
    # WARN line would; any other is a note (a non-fatal WARN is also kept as the last error).
    last = [e[:400] for e in _list(doc, "errors") if isinstance(e, str) and e.strip()]
    warns = [NcclWarn(head.host, head.pid, 0, None, e, c) for e in last if (c := completion(e)) is not None]
    notes = [f"NCCL's last error: {e}" for e in last if completion(e) is None]
    if not rows and "end_time" not in doc:
        notes.append("the report has no end_time: the run stopped early")
    error = error_line(None, rows, oob, avg_failed, warns, [])
    return NcclTestResult(
        source,
        collective,
        None,
        nccl_version_name(code) if code else None,
        None,
        tuple(params.items()),
        tuple(ranks),
        tuple(rows),
        avg,
        oob,
        tuple(warns),
        (),
        None,
        tuple(notes),
        error is None,
        error,
        env.result(),
        None,
        code,
        1,
        "json",
    )


def parse_nccl_json(
    text: str, source: str = "<nccl-tests json>", binary: str | None = None
) -> NcclTestResult:
    """Read an nccl-tests JSON report (see the module docstring); :class:`ParseError` (one line)
    when it is no report, is cut short or has a field of the wrong kind."""
    fixed = _BARE_INF.sub(r'\1"\2inf"', text)
    try:
        doc = json.loads(fixed)
    except (ValueError, RecursionError) as exc:
        where = getattr(exc, "lineno", 0)
        problem = "not complete JSON (cut short?)" if text.strip().startswith("{") else "not JSON"
        raise ParseError(TOOL, source, where, "", f"{problem}: {str(exc)[:120]}") from None
    try:
        return _result(doc, source, binary)
    except _Bad as exc:
        raise ParseError(TOOL, source, 0, "", str(exc)) from None
    except (ValueError, OverflowError, RecursionError) as exc:  # an 80-digit code, a huge number
        raise ParseError(TOOL, source, 0, "", f"a value out of range ({str(exc)[:80]})") from None


def read_nccl_json(path: str, binary: str | None = None) -> NcclTestResult:
    """Parse a saved JSON report (bounded, see :mod:`topology.textfile`)."""
    return parse_nccl_json(read_input_text(path, TOOL), path, binary)


__all__ = ["TOOL", "nccl_version_name", "parse_nccl_json", "read_nccl_json"]
