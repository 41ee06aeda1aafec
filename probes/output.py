"""A command's output, bounded in bytes as it arrives and decoded only when it is read.

Each stream (stdout, stderr) of one command keeps at most :data:`MAX_OUTPUT_BYTES` bytes
(:class:`OutputCap`: its head and tail, with a line where the middle was cut). The bytes are kept as
they came; text is made from them only by whoever shows or parses it (:func:`decode`, or
:func:`text_chunks` a piece at a time), because decoding multiplies the size: an invalid byte
becomes U+FFFD, three bytes in UTF-8 and two or four in a Python string.

A fan-out bounds what all its hosts hold together: it runs every host under one
:class:`OutputBudget` (:func:`spending`), from which each stream takes what it keeps beyond its
first :data:`FREE_BYTES`. When the budget is spent, a stream keeps what it has (three quarters of it
from the start, a quarter from the end) and the rest is cut, as at the per-stream cap.
"""

from __future__ import annotations

import codecs
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# Per stream (stdout, stderr) of one command on one host. ``ibqueryerrors --counters`` on a
# 50,000-port fabric or ibnetdiscover on a 16,000-HCA one is 10-30 MB; `cat /dev/zero` is not.
MAX_OUTPUT_BYTES = 64 * 2**20
# What a fan-out's hosts hold in all, beyond each stream's FREE_BYTES: four hosts at the full cap on
# both streams, or 512 hosts at 512 KiB each; a host's probe output (perftest, sysfs) is a few KiB.
FANOUT_OUTPUT_BYTES = 256 * 2**20
# Every stream keeps this much whatever the budget says (its first 48 and last 16 KiB), so a host
# whose output came after the budget was spent still says how it began and how it ended.
FREE_BYTES = 64 * 2**10
_TAIL_SHARE = 4  # a quarter of what a stream keeps is the end of the output (where errors are said)
_CHUNK = 2**20  # bytes decoded at a time by text_chunks
_BLOCK = 2**20  # bytes of output kept per object


class OutputBudget:
    """Bytes that the streams of many commands may keep in all (thread-safe).

    >>> b = OutputBudget(10); b.take(4), b.take(8), b.take(1), b.left
    (4, 6, 0, 0)
    """

    def __init__(self, total: int) -> None:
        self.total = max(0, total)
        self._left = self.total
        self._lock = threading.Lock()

    @property
    def left(self) -> int:
        return self._left

    def take(self, wanted: int) -> int:
        """Up to ``wanted`` bytes, what is left of them; they are kept for good (a fan-out's
        results are all held until it returns)."""
        with self._lock:
            given = min(max(0, wanted), self._left)
            self._left -= given
            return given


_BUDGET: ContextVar[OutputBudget | None] = ContextVar("output_budget", default=None)


@contextmanager
def spending(budget: OutputBudget | None) -> Iterator[None]:
    """Every :class:`OutputCap` made in this thread while the block runs takes from ``budget``
    (None: no budget beyond each stream's cap). A fan-out wraps each host's run in it."""
    token = _BUDGET.set(budget)
    try:
        yield
    finally:
        _BUDGET.reset(token)


class OutputCap:
    """One stream of a command's output, kept whole up to ``limit`` bytes; past it, the first
    three quarters and the last quarter, with a line where the middle was cut. Under a budget
    (``budget``, else the one :func:`spending` set) the stream keeps at most :data:`FREE_BYTES`
    plus what the budget grants it, and is cut the same way when the budget runs out.

    >>> cap = OutputCap(8); cap.feed(b"0123456789abcdef"); cap.cut, cap.data()[:6], cap.data()[-2:]
    (8, b'012345', b'ef')
    """

    def __init__(self, limit: int = MAX_OUTPUT_BYTES, budget: OutputBudget | None = None) -> None:
        self.limit = max(1, limit)
        self._budget = budget if budget is not None else _BUDGET.get()
        # what this stream may keep now; under a budget it grows as output comes, while granted
        self._allowed = self.limit if self._budget is None else min(self.limit, FREE_BYTES)
        self._head = _Blocks()
        self._tail: _Ring | None = None  # made when something is first cut
        self.cut = 0

    @property
    def held(self) -> int:
        """Bytes kept now."""
        return self._head.size + (self._tail.size if self._tail else 0)

    def feed(self, data: bytes) -> None:
        if not data:
            return
        if self._tail is None:  # nothing past the head yet
            wanted = self._head.size + len(data) - self._allowed
            if wanted > 0 and self._budget is not None:
                self._allowed += self._budget.take(min(wanted, self.limit - self._allowed))
            fits = self._head.size + len(data) <= self._allowed
            if fits and self._allowed < self.limit:  # the allowance may grow yet: the head takes all
                self._head.append(data)
                return
            # What is allowed is final: three quarters for the head, the rest for the tail.
            tail_limit = max(1, self._allowed // _TAIL_SHARE)
            head_limit = self._allowed - tail_limit
            if self._head.size + len(data) <= head_limit:
                self._head.append(data)
                return
            self._tail = _Ring(tail_limit)
            if self._head.size > head_limit:  # the head's end starts the tail
                self.cut += self._tail.append(self._head.take_back(self._head.size - head_limit))
            else:
                room = head_limit - self._head.size
                self._head.append(data[:room])
                data = data[room:]
        self.cut += self._tail.append(data)

    def data(self) -> bytes:
        """What was kept, as one bytes object (with a line where the middle was cut)."""
        note = b""
        if self.cut:
            limit = f"the {self.limit} byte limit"
            if self._allowed < self.limit:
                limit = f"the {self._allowed} bytes this stream could keep of the fan-out's output budget"
            note = (
                f"\n[ibfab: {self.cut} bytes cut here: the output passed {limit};"
                f" its first {self._head.size} and last {self.held - self._head.size} bytes are kept]\n"
            ).encode()
        tail = self._tail.parts() if self._tail else []
        return b"".join((*self._head.parts(), note, *tail))

    def take(self) -> bytes:
        """:meth:`data`, the stream's buffers let go (it has ended): its bytes are not held twice
        for longer than the join."""
        whole = self.data()
        self._head, self._tail = _Blocks(), None
        return whole


class _Blocks:
    """Bytes appended in pieces of any size, copied into blocks of :data:`_BLOCK` bytes allocated
    once each: memory is what is kept (plus one block), however small the pieces (a line per SSH
    packet) and however large the whole (no bytearray regrown to 64 MiB, no block reallocated)."""

    def __init__(self) -> None:
        self._blocks: list[bytearray] = []
        self._fill = 0  # bytes used in the last block
        self.size = 0

    def append(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        self.size += len(view)
        while len(view):
            if not self._blocks or self._fill == _BLOCK:
                self._blocks.append(bytearray(_BLOCK))
                self._fill = 0
            k = min(len(view), _BLOCK - self._fill)
            self._blocks[-1][self._fill : self._fill + k] = view[:k]
            self._fill += k
            view = view[k:]

    def take_back(self, n: int) -> bytes:
        """Remove the last ``n`` bytes and return them."""
        self.size -= n
        pieces: list[bytes] = []
        while n:
            k = min(n, self._fill)
            pieces.append(bytes(self._blocks[-1][self._fill - k : self._fill]))
            self._fill -= k
            n -= k
            if not self._fill:
                self._blocks.pop()
                self._fill = _BLOCK if self._blocks else 0
        return b"".join(reversed(pieces))

    def parts(self) -> list[memoryview]:
        views = [memoryview(b) for b in self._blocks]
        if views:
            views[-1] = views[-1][: self._fill]
        return views


class _Ring:
    """The last ``size`` bytes of what was appended, in one buffer allocated once."""

    def __init__(self, size: int) -> None:
        self._buffer = bytearray(size)
        self._at = 0  # where the next byte goes
        self.size = 0  # bytes kept (the buffer's length once it has wrapped)

    def append(self, data: bytes | memoryview) -> int:
        """Append ``data``; returns how many bytes were dropped from the front."""
        view = memoryview(data)
        capacity = len(self._buffer)
        if len(view) >= capacity:
            dropped = self.size + len(view) - capacity
            self._buffer[:] = view[len(view) - capacity :]
            self._at, self.size = 0, capacity
            return dropped
        first = min(len(view), capacity - self._at)
        self._buffer[self._at : self._at + first] = view[:first]
        self._buffer[: len(view) - first] = view[first:]
        self._at = (self._at + len(view)) % capacity
        dropped = max(0, self.size + len(view) - capacity)
        self.size = min(capacity, self.size + len(view))
        return dropped

    def parts(self) -> list[memoryview]:
        view = memoryview(self._buffer)
        if self.size < len(self._buffer):
            return [view[self._at - self.size : self._at]]
        return [view[self._at :], view[: self._at]]


def as_bytes(data: bytes | str) -> bytes:
    """Output as bytes (text given as text is encoded as UTF-8)."""
    return data if isinstance(data, bytes) else data.encode()


def decode(data: bytes | str) -> str:
    """A command's output as text: UTF-8, an invalid byte as U+FFFD (text is returned as is)."""
    return data if isinstance(data, str) else data.decode("utf-8", errors="replace")


def text_chunks(data: bytes | str, size: int = _CHUNK) -> Iterator[str]:
    """:func:`decode` a piece at a time (about ``size`` bytes each), so showing a large output
    never holds all its text at once; a character split between pieces is decoded whole.

    >>> list(text_chunks("é!".encode(), size=1))
    ['', 'é', '!']
    """
    if isinstance(data, str):
        for start in range(0, len(data), size):
            yield data[start : start + size]
        return
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    view = memoryview(data)
    for start in range(0, len(data), size):
        yield decoder.decode(view[start : start + size], final=start + size >= len(data))
