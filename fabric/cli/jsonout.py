"""JSON on stdout, written one way for every command: :func:`write_json` for a document
(``--json``), :func:`write_json_line` for one object a line (a stream, ``counters collect --json``)."""

from __future__ import annotations

import sys


def _dumps(doc: object, option: int) -> bytes:
    import orjson

    # Keys that are not text (a count by port number) are written as text, as the stdlib does.
    return orjson.dumps(doc, option=option | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE)


def _write(data: bytes) -> None:
    sys.stdout.flush()  # what was echoed before goes first
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def write_json(doc: object, *, sort_keys: bool = False) -> None:
    """``doc`` as indented JSON on stdout. orjson: the stdlib encoder indents in pure Python, which
    cost as much as parsing the capture (0.38 s of a 9 MB document for 8,192 HCAs; orjson 0.02 s)
    and as much as scoring the links (0.4 s of a 25,024-link health report; the text it builds,
    about 50 MB there, is the price)."""
    import orjson

    _write(_dumps(doc, orjson.OPT_INDENT_2 | (orjson.OPT_SORT_KEYS if sort_keys else 0)))


def write_json_line(doc: object) -> None:
    """``doc`` as one line of JSON on stdout (a stream of records, one per line)."""
    _write(_dumps(doc, 0))
