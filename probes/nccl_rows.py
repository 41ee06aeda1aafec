"""nccl-tests' results table: the row and timing records, and rows put back together.

A row is split by its table header (every layout nccl-tests has printed); :class:`RowAssembler`
joins the pieces of a row that NCCL's log lines cut apart (:mod:`probes.nccl_parse`). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NcclTiming:
    time_us: float
    algbw: float  # GB/s
    busbw: float  # GB/s
    wrong: int | None = None  # '#wrong' column (None when printed N/A)
    max_error: float | None = None  # old 'error' column (None when printed N/A)


@dataclass(frozen=True, slots=True)
class NcclRow:
    size: int  # bytes
    count: int  # elements
    type: str
    redop: str  # '' where the column is blank (old alltoall)
    root: int | None  # -1 for unrooted collectives in the newer layout; None when no column
    out_of_place: NcclTiming
    in_place: NcclTiming


def _number(text: str) -> float | None:
    return None if text == "N/A" else float(text)


def _timing(names: Sequence[str], values: Sequence[str]) -> NcclTiming:
    got = dict(zip(names, values, strict=True))
    wrong = _number(got["#wrong"]) if "#wrong" in got else None
    if wrong is not None and not (wrong >= 0 and wrong < 1 << 63):  # a count of elements (%g prints it)
        raise ValueError(f"#wrong {got['#wrong'][:20]!r} is no count")
    return NcclTiming(
        float(got.get("time", got.get("cputime", "nan"))),
        float(got["algbw"]),
        float(got["busbw"]),
        None if wrong is None else int(wrong),
        _number(got["error"]) if "error" in got else None,
    )


def table_row(columns: Sequence[str], tokens: list[str]) -> NcclRow:
    """Split a row by the header. The timing columns on the right are always all there, so count
    them from the right; on the left a blank redop (old alltoall) is the one column that may be missing."""
    names = [c for c in columns if c != "timestamp"]
    if "timestamp" in columns:  # '%Y-%m-%d %H:%M:%S' is two tokens
        tokens = tokens[:-2]
    first_time = next(i for i, c in enumerate(names) if c in ("time", "cputime"))
    left, right = names[:first_time], names[first_time:]
    lt, rt = tokens[: -len(right)], tokens[-len(right) :]
    extra = left[3:]
    if len(lt) == len(left) - 1 and "redop" in extra:
        extra = [c for c in extra if c != "redop"]
    if len(rt) != len(right) or len(lt) != 3 + len(extra):
        raise ValueError(f"{len(tokens)} columns where the header has {len(names)}")
    got = dict(zip(extra, lt[3:], strict=True))
    half = len(right) // 2
    return NcclRow(
        int(lt[0]),
        int(lt[1]),
        lt[2],
        got.get("redop", ""),
        int(got["root"]) if "root" in got else None,
        _timing(right[:half], rt[:half]),
        _timing(right[half:], rt[half:]),
    )


class RowAssembler:
    """Rows put back together from the pieces NCCL's log cut them into.

    nccl-tests prints a row in three writes (its five first columns, the out-of-place timings, the
    in-place timings and the newline); a log line written between two of them ends the piece on
    its line, and the next piece follows the log (a WARN even starts with a newline of its own).
    Pieces are joined as written (a block-buffered pipe can cut a word in two); a row is complete
    when a piece ends its line and the pieces hold the header's columns. A new row that starts
    before the last one was complete means that one did not fit the header.
    """

    def __init__(self) -> None:
        self.columns: list[str] | None = None
        self.pieces: list[str] = []
        self.tokens = 0
        self.lineno = 0
        self.cut = False  # the last piece was cut by a log line: the next line goes on with it

    def header(self, line: str) -> None:
        self.columns = line.lstrip("#").split()

    @property
    def needed(self) -> int:
        """Tokens of a complete row (a blank redop in old alltoall outputs is one fewer)."""
        cols = self.columns or []
        names = [c for c in cols if c != "timestamp"]
        return len(names) + (2 if "timestamp" in cols else 0) - (1 if "redop" in names else 0)

    def starts_row(self, piece: str) -> bool:
        words = piece.split(None, 3)
        return (
            self.columns is not None
            and len(words) >= 3
            and words[0].isdigit()
            and words[1].isdigit()
            and words[2][:1].isalpha()
            and words[2] != "N/A"
        )

    def add(self, piece: str, lineno: int) -> tuple[int, str] | None:
        """Take a piece; the row it cut off, if any: (its first line, its text)."""
        words = len(piece.split())
        if not words:
            return None
        broken = None
        if self.pieces and self.starts_row(piece):
            broken = (self.lineno, self.drop())
        if not self.pieces:
            self.lineno = lineno
        self.pieces.append(piece)
        self.tokens += words
        if self.tokens > self.needed + 3:  # more than any row: stop collecting (memory stays bounded)
            broken = broken or (self.lineno, self.drop())
        return broken

    def complete(self) -> list[str] | None:
        """The row's words when the pieces so far make a whole row."""
        if not self.pieces or self.tokens < self.needed:
            return None
        words = "".join(self.pieces).split()
        self.pieces, self.tokens, self.cut = [], 0, False
        return words

    def drop(self) -> str:
        text = "".join(self.pieces).strip()
        self.pieces, self.tokens, self.cut = [], 0, False
        return text

    def continues(self, line: str) -> bool:
        """``line`` goes on with the row being put together: right after a cut, whatever it
        holds (a word may have been cut in two); else when it is the rest of a row or a new one."""
        return bool(self.pieces) and (self.cut or numeric_piece(line) or self.starts_row(line))


def numeric_piece(line: str) -> bool:
    """Every word of ``line`` is a value of the table's right side (a number, N/A, inf, nan, a
    timestamp's date or time): the rest of a row, not some other line."""
    words = line.split()
    return bool(words) and all(
        w == "N/A" or w.lstrip("+-")[:1].isdigit() or w.lstrip("+-") in ("inf", "nan") for w in words
    )


__all__ = ["NcclRow", "NcclTiming", "RowAssembler", "numeric_piece", "table_row"]
