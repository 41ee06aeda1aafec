"""JSON on stdout for every ``--json`` that prints a large document (discover, health)."""

from __future__ import annotations

import sys


def write_json(doc: object) -> None:
    """``doc`` as indented JSON on stdout. orjson: the stdlib encoder indents in pure Python, which
    cost as much as parsing the capture (0.38 s of a 9 MB document for 8,192 HCAs; orjson 0.02 s)
    and as much as scoring the links (0.4 s of a 25,024-link health report; the text it builds,
    about 50 MB there, is the price)."""
    import orjson

    sys.stdout.flush()  # what was echoed before goes first
    sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))
    sys.stdout.buffer.flush()
