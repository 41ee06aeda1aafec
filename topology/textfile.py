"""Reading an input file (or stdin) with bounds: its size and the length of its lines.

>>> read_input_bytes("/dev/zero", "ibnetdiscover")   # doctest: +SKIP
ParseError: /dev/zero: ibnetdiscover output: larger than 1024 MiB: not read (is it the right file?)

A saved capture of the largest fabric (ibnetdiscover of 16,000 HCAs: ~20 MB; ibdiagnet's db_csv
of 50,000 ports: ~200 MB) fits well within :data:`MAX_INPUT_BYTES`; a device, a runaway log or a
wrong file does not, and is refused before it is read whole. No tool writes a line of a megabyte:
a longer one is refused with its line number (never echoed).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import BinaryIO

from topology.errors import ParseError

MAX_INPUT_BYTES = 1 << 30  # 1 GiB
MAX_LINE_BYTES = 1 << 20  # 1 MiB


def read_input_bytes(
    path: str | Path, what: str, *, max_bytes: int = MAX_INPUT_BYTES, max_line: int = MAX_LINE_BYTES
) -> bytes:
    """The bytes of ``path`` (``-``: stdin); ParseError (one line, exit 3) when it cannot be read,
    is a directory, is over ``max_bytes`` or has a line over ``max_line`` (refused as soon as
    seen: ``/dev/zero`` after its first MiB)."""
    name = str(path)
    try:
        if name == "-":
            return _read_bounded(sys.stdin.buffer, name, what, max_bytes, max_line)
        with open(path, "rb") as fh:
            return _read_bounded(fh, name, what, max_bytes, max_line)
    except IsADirectoryError as exc:
        raise ParseError(what, name, 0, "", "is a directory, not a file") from exc
    except OSError as exc:
        raise ParseError(what, name, 0, "", exc.strerror or str(exc)) from exc


def read_input_text(
    path: str | Path, what: str, *, max_bytes: int = MAX_INPUT_BYTES, max_line: int = MAX_LINE_BYTES
) -> str:
    """:func:`read_input_bytes` decoded as UTF-8 (a bad byte becomes U+FFFD)."""
    return read_input_bytes(path, what, max_bytes=max_bytes, max_line=max_line).decode("utf-8", "replace")


def _read_bounded(fh: BinaryIO, name: str, what: str, max_bytes: int, max_line: int) -> bytes:
    if name != "-":
        try:
            size = os.fstat(fh.fileno()).st_size
        except (OSError, ValueError):
            size = 0
        if size > max_bytes:
            raise ParseError(what, name, 0, "", f"{size} bytes, larger than {_mib(max_bytes)}: not read")
    chunks: list[bytes] = []
    total = lines = 0
    line_len = 0  # bytes since the last line break
    # Chunks of max_line bytes: a line inside one is shorter than the limit, so only the line
    # running into each chunk and the one running out of it need counting.
    while chunk := fh.read(max_line):
        total += len(chunk)
        if total > max_bytes:
            raise ParseError(
                what, name, 0, "", f"larger than {_mib(max_bytes)}: not read (is it the right file?)"
            )
        first = chunk.find(b"\n")
        if first < 0:
            line_len += len(chunk)
        else:
            line_len += first
            if line_len <= max_line:
                lines += chunk.count(b"\n")
                line_len = len(chunk) - chunk.rfind(b"\n") - 1
        if line_len > max_line:
            raise ParseError(what, name, lines + 1, "", f"line {lines + 1} is longer than {_mib(max_line)}")
        chunks.append(chunk)
    return b"".join(chunks)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_LINE_BYTES",
    "read_input_bytes",
    "read_input_text",
]
