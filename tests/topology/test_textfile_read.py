"""A file of known size is read in one call and its lines checked in place
(topology.textfile._read_whole); a stream (stdin) chunk by chunk. Both must refuse the same
files, with the same line, and return the same bytes: compared on random data with small
limits, so that long lines fall on, before and across every window edge."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topology.textfile import InputFileError, _read_bounded, read_input_bytes


def outcome(read: Callable[[], bytes]) -> tuple[str, bytes | str]:
    try:
        return "ok", read()
    except InputFileError as exc:
        return "refused", str(exc).replace("<stream>", "F").replace("<file>", "F")


_data = st.lists(st.sampled_from([b"a", b"bb", b"\n", b"xxxxxxx", b"\n\n"]), max_size=40).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(_data, st.integers(1, 9), st.integers(1, 80))
def test_a_file_and_a_stream_are_bounded_alike(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, max_line: int, max_bytes: int
) -> None:
    path = tmp_path_factory.mktemp("read") / "f"
    path.write_bytes(data)

    def as_file() -> bytes:
        with open(path, "rb") as fh:
            return _read_bounded(fh, "<file>", "capture", max_bytes, max_line)

    def as_stream() -> bytes:
        return _read_bounded(io.BufferedReader(io.BytesIO(data)), "<stream>", "capture", max_bytes, max_line)

    if len(data) > max_bytes:  # refused by size before reading (a file: from its fstat)
        assert outcome(as_file)[0] == outcome(as_stream)[0] == "refused"
        return
    assert outcome(as_file) == outcome(as_stream)
    if outcome(as_file)[0] == "ok":
        assert as_file() == data


def test_a_long_line_is_named_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "capture.topo"
    path.write_bytes(b"ok\n" * 5 + b"x" * (2 << 20) + b"\nok\n")
    with pytest.raises(InputFileError, match=r"capture.topo:6: ibnetdiscover: line 6 is longer than 1 MiB"):
        read_input_bytes(path, "ibnetdiscover")
    path.write_bytes(b"ok\n" * 5 + b"x" * (1 << 20) + b"\nok\n")  # exactly the limit: read
    assert len(read_input_bytes(path, "ibnetdiscover")) == 15 + (1 << 20) + 4
