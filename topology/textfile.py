"""Reading an input file (or stdin) with bounds: its size and the length of its lines.

Every file a user hands ibfab (a capture, an ibdiagnet run, a cable plan, a pair list, a saved
health report, an OpenSM log) is read here, so that each is refused the same way, on one line
naming the file (and the line where there is one), exit 3:

>>> read_input_bytes("/dev/zero", "ibnetdiscover")   # doctest: +SKIP
InputFileError: /dev/zero: ibnetdiscover: larger than 1024 MiB: not read (is it the right file?)

* a missing file, a directory, a device that never ends, a file over :data:`MAX_INPUT_BYTES` or
  with a line over :data:`MAX_LINE_BYTES` (:func:`read_input_bytes`);
* binary data (a NUL byte: no tool writes one into text) and, for files people write
  (``strict``), bytes that are not UTF-8 (:func:`read_input_text`). Tool output keeps a bad byte
  as U+FFFD instead: a node description in Latin-1 must not lose the capture;
* a log is read as a stream of lines (:func:`input_lines`): memory bounded by a line whatever
  the size of the log, a line past the limit cut, NUL runs (a log after a crash) kept.

A saved capture of the largest fabric (ibnetdiscover of 16,000 HCAs: ~20 MB; ibdiagnet's db_csv
of 50,000 ports: ~200 MB) fits well within :data:`MAX_INPUT_BYTES`; a device, a runaway log or a
wrong file does not, and is refused before it is read whole. No tool writes a line of a megabyte:
a longer one is refused with its line number (never echoed).
"""

from __future__ import annotations

import codecs
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from topology.errors import ParseError

MAX_INPUT_BYTES = 1 << 30  # 1 GiB
MAX_LINE_BYTES = 1 << 20  # 1 MiB
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


class InputFileError(ParseError):
    """An input file that cannot be read as text: missing, a directory, too large, binary, not
    UTF-8. A :class:`ParseError` (exit 3) whose message says ``FILE[:LINE]: WHAT: PROBLEM``."""

    def __init__(self, what: str, source: str, lineno: int, problem: str) -> None:
        super().__init__(what, source, lineno, "", problem)
        where = f"{source}:{lineno}" if lineno else source
        self.args = (f"{where}: {what}: {problem}",)


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
    except OSError as exc:
        raise _os_error(exc, what, name) from exc


def read_input_text(
    path: str | Path,
    what: str,
    *,
    max_bytes: int = MAX_INPUT_BYTES,
    max_line: int = MAX_LINE_BYTES,
    strict: bool = False,
) -> str:
    """:func:`read_input_bytes` as text by :func:`decode_input` (line ends as saved)."""
    data = read_input_bytes(path, what, max_bytes=max_bytes, max_line=max_line)
    return decode_input(data, str(path), what, strict=strict)


def decode_input(data: bytes, source: str, what: str, *, strict: bool = False) -> str:
    """The text of an input file's bytes: UTF-16 when it starts with its byte order mark (a
    PowerShell redirect), else UTF-8 (a byte order mark dropped). A NUL byte outside UTF-16 is
    binary data, refused with its line; a byte that is not UTF-8 is refused the same way when
    ``strict`` (a file people write), else it becomes U+FFFD (tool output)."""
    if data[:2] in _UTF16_BOMS:
        try:
            return data.decode("utf-16", "strict" if strict else "replace")
        except UnicodeDecodeError as exc:
            raise InputFileError(what, source, 0, f"not UTF-16 text (byte {exc.start})") from exc
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise InputFileError(what, source, line, f"binary data (a NUL byte at line {line}): not a text file")
    if not strict:
        return data.decode("utf-8-sig", "replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFileError(
            what, source, line, f"not UTF-8 text (byte {exc.start}, line {line}): save it as UTF-8"
        ) from exc


def input_lines(path: str | Path, what: str, *, max_line: int = MAX_LINE_BYTES) -> Iterator[str]:
    """The lines of a log (line ends dropped), read as a stream: the file is opened here (an
    :class:`InputFileError` when it cannot be), then read a line at a time, so memory stays within
    ``max_line`` whatever the size of the log. A longer line is cut to ``max_line`` (a log is read
    for what it says, not refused for one line); NUL bytes are kept (a log after a crash)."""
    name = str(path)
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed by the generator below
    except OSError as exc:
        raise _os_error(exc, what, name) from exc
    return _lines(fh, name, what, max_line)


def _lines(fh: BinaryIO, name: str, what: str, max_line: int) -> Iterator[str]:
    with fh:
        cut = False  # inside a line already cut: skip to its end
        while True:
            try:
                raw = fh.readline(max_line)
            except OSError as exc:
                raise _os_error(exc, what, name) from exc
            if not raw:
                return
            ended = raw.endswith(b"\n")
            if not cut:
                yield raw.rstrip(b"\r\n").decode("utf-8", "replace")
            cut = not ended


def open_input_text(
    path: str | Path,
    what: str,
    *,
    encoding: str = "utf-8-sig",
    errors: str = "strict",
    max_bytes: int = MAX_INPUT_BYTES,
    max_line: int = MAX_LINE_BYTES,
) -> io.TextIOWrapper:
    """``path`` as a stream of text lines with their line ends as saved (``newline=""``, as the
    csv module wants them), held to the same bounds as :func:`read_input_bytes` while it is read:
    memory of a buffer, whatever the size of the file. A file that starts with a UTF-16 byte
    order mark is read as UTF-16. Past a bound, at a NUL byte (binary) or at a byte that does not
    decode (``errors="strict"``: a UnicodeDecodeError), reading raises. Close it (a with-block)."""
    name = str(path)
    try:
        fh = open(path, "rb")  # noqa: SIM115 - owned by the returned stream
    except OSError as exc:
        raise _os_error(exc, what, name) from exc
    try:
        size = os.fstat(fh.fileno()).st_size
        if size > max_bytes:
            raise InputFileError(what, name, 0, f"{size} bytes, larger than {_mib(max_bytes)}: not read")
        utf16 = fh.read(2) in _UTF16_BOMS
        fh.seek(0)
    except BaseException:
        fh.close()
        raise
    raw = _BoundedReader(fh, name, what, max_bytes, max_line, nul_ok=utf16)
    return io.TextIOWrapper(
        io.BufferedReader(raw), encoding="utf-16" if utf16 else encoding, errors=errors, newline=""
    )


class _BoundedReader(io.RawIOBase):
    """A binary file's bytes as they are read, refused past ``max_bytes``, at a line longer than
    ``max_line`` or at a NUL byte (unless ``nul_ok``), with the line it is on."""

    def __init__(
        self, fh: BinaryIO, name: str, what: str, max_bytes: int, max_line: int, nul_ok: bool
    ) -> None:
        super().__init__()
        self._fh, self._name, self._what = fh, name, what
        self._max_bytes, self._max_line, self._nul_ok = max_bytes, max_line, nul_ok
        self._total = self._lines = self._line_len = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            chunk = self._fh.read(min(len(buffer), self._max_line))
        except OSError as exc:
            raise _os_error(exc, self._what, self._name) from exc
        n = len(chunk)
        self._total += n
        if self._total > self._max_bytes:
            raise InputFileError(
                self._what,
                self._name,
                0,
                f"larger than {_mib(self._max_bytes)}: not read (is it the right file?)",
            )
        if not self._nul_ok and (nul := chunk.find(b"\0")) >= 0:
            line = self._lines + chunk.count(b"\n", 0, nul) + 1
            raise InputFileError(
                self._what, self._name, line, f"binary data (a NUL byte at line {line}): not a text file"
            )
        # A chunk is at most a line's limit long: only the line running into it can be over.
        last = chunk.rfind(b"\n")
        if last < 0:
            self._line_len += n
        else:
            self._line_len += chunk.find(b"\n")
            if self._line_len <= self._max_line:
                self._lines += chunk.count(b"\n")
                self._line_len = n - last - 1
        if self._line_len > self._max_line:
            line = self._lines + 1
            raise InputFileError(
                self._what, self._name, line, f"line {line} is longer than {_mib(self._max_line)}"
            )
        buffer[:n] = chunk
        return n

    def close(self) -> None:
        self._fh.close()
        super().close()


def _os_error(exc: OSError, what: str, name: str) -> InputFileError:
    if isinstance(exc, IsADirectoryError):
        return InputFileError(what, name, 0, "is a directory, not a file")
    return InputFileError(what, name, 0, exc.strerror or str(exc))


def _read_bounded(fh: BinaryIO, name: str, what: str, max_bytes: int, max_line: int) -> bytes:
    if name != "-":
        try:
            size = os.fstat(fh.fileno()).st_size
        except (OSError, ValueError):
            size = 0
        if size > max_bytes:
            raise InputFileError(what, name, 0, f"{size} bytes, larger than {_mib(max_bytes)}: not read")
        if size > 0:
            return _read_whole(fh, size, name, what, max_bytes, max_line)
    chunks: list[bytes] = []
    total = 0
    line_len = 0  # bytes since the last line break
    # Chunks of max_line bytes: a line inside one is shorter than the limit, so only the line
    # running into each chunk and the one running out of it need counting. The line breaks are
    # counted only for the error (the long line starts after those of the chunks before it):
    # counting them in every file read cost as much as decoding it.
    while chunk := fh.read(max_line):
        total += len(chunk)
        if total > max_bytes:
            raise InputFileError(
                what, name, 0, f"larger than {_mib(max_bytes)}: not read (is it the right file?)"
            )
        first = chunk.find(b"\n")
        if first < 0:
            line_len += len(chunk)
        else:
            line_len += first
            if line_len <= max_line:
                line_len = len(chunk) - chunk.rfind(b"\n") - 1
        if line_len > max_line:
            line = sum(c.count(b"\n") for c in chunks) + 1
            raise InputFileError(what, name, line, f"line {line} is longer than {_mib(max_line)}")
        chunks.append(chunk)
    return b"".join(chunks)


def _read_whole(fh: BinaryIO, size: int, name: str, what: str, max_bytes: int, max_line: int) -> bytes:
    """A file of known ``size``, read in one call and its lines checked in place, window by
    window as :func:`_read_bounded` checks its chunks: no chunk list and no joined copy of it
    (each a fresh copy of the file for the system to map in: a tenth of ``ibfab discover``'s page
    faults at 8,192 HCAs). Read to its end all the same, so a file that grew is still bounded."""
    data = fh.read(size + 1)
    while len(data) <= max_bytes and (more := fh.read(max_line)):
        data += more  # a file that grew since fstat (rare): bounded all the same
    if len(data) > max_bytes:
        raise InputFileError(
            what, name, 0, f"larger than {_mib(max_bytes)}: not read (is it the right file?)"
        )
    line_len = 0  # bytes since the last line break, at the window's start
    for start in range(0, len(data), max_line):
        end = min(start + max_line, len(data))
        first = data.find(b"\n", start, end)
        if first < 0:
            line_len += end - start
        else:
            line_len += first - start
            if line_len <= max_line:
                line_len = end - data.rfind(b"\n", start, end) - 1
        if line_len > max_line:
            line = data.count(b"\n", 0, start) + 1
            raise InputFileError(what, name, line, f"line {line} is longer than {_mib(max_line)}")
    return data


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_LINE_BYTES",
    "InputFileError",
    "decode_input",
    "input_lines",
    "open_input_text",
    "read_input_bytes",
    "read_input_text",
]
