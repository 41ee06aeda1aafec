"""The write-ahead log's own checksums: a damaged frame loses its commit and every later one.

SQLite reads a WAL up to its first frame that fails the running checksum and drops the rest
without a word; the first process to open the store then folds what it read into the file and
the lost commits are gone for good. A frame that fails its checksum is damage only when a commit
of the same WAL (same salts) follows it: a torn last transaction of a killed writer (never
committed) ends a WAL the same way, and is no damage.

Only ``ibfab store check`` reads the WAL this way (before it opens the store, so the evidence is
still there); the format is SQLite's (https://www.sqlite.org/fileformat.html#the_write_ahead_log).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

_MAGIC = (0x377F0682, 0x377F0683)
_HEADER = 32
_FRAME_HEADER = 24


@dataclass(frozen=True, slots=True)
class WalDamage:
    frame: int  # the first damaged frame, from 1
    frames: int  # frames in the WAL
    lost_commits: int  # commits after it that SQLite will not apply
    why: str


def _checksum(data: bytes, big: bool, s0: int, s1: int) -> tuple[int, int]:
    words = struct.unpack(f"{'>' if big else '<'}{len(data) // 4}I", data)
    mask = 0xFFFFFFFF
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & mask
        s1 = (s1 + words[i + 1] + s0) & mask
    return s0, s1


def wal_damage(wal: Path) -> WalDamage | None:
    """Damage in the WAL at ``wal`` (absent or empty: none)."""
    try:
        data = wal.read_bytes()
    except OSError:
        return None
    if len(data) < _HEADER:
        return None
    magic, _version, page_size, _seq, salt1, salt2, c0, c1 = struct.unpack(">8I", data[:_HEADER])
    frame_size = _FRAME_HEADER + page_size
    frames = (len(data) - _HEADER) // frame_size if page_size else 0
    if magic not in _MAGIC or not page_size or page_size & (page_size - 1):
        commits = _commits_with_salts(data, frame_size, frames, None)
        if commits:
            return WalDamage(
                0, frames, commits, "the WAL's header is damaged: none of its commits is applied"
            )
        return None
    big = bool(magic & 1)
    s0, s1 = _checksum(data[:24], big, 0, 0)
    if (s0, s1) != (c0, c1):
        commits = _commits_with_salts(data, frame_size, frames, (salt1, salt2))
        if commits:
            return WalDamage(
                0, frames, commits, "the WAL's header fails its checksum: none of its commits is applied"
            )
        return None
    for n in range(frames):
        at = _HEADER + n * frame_size
        head = data[at : at + _FRAME_HEADER]
        _page, _commit, f1, f2, k0, k1 = struct.unpack(">6I", head)
        if (f1, f2) != (salt1, salt2):
            return None  # frames of an earlier WAL past the end of this one's
        s0, s1 = _checksum(head[:8], big, s0, s1)
        s0, s1 = _checksum(data[at + _FRAME_HEADER : at + frame_size], big, s0, s1)
        if (s0, s1) != (k0, k1):
            # A commit written after this frame means this one was whole once: damage. None
            # after it: the torn last transaction of a killed writer, never committed.
            later = _commits_with_salts(
                data[at + frame_size :], frame_size, frames - n - 1, (salt1, salt2), 0
            )
            if later:
                why = f"frame {n + 1} of {frames} fails its checksum: it and {later} later commit(s) are lost"
                return WalDamage(n + 1, frames, later, why)
            return None
    return None


def _commits_with_salts(
    data: bytes, frame_size: int, frames: int, salts: tuple[int, int] | None, header: int = _HEADER
) -> int:
    """Commit frames (a database size in their header) among ``frames`` with ``salts`` (None:
    the salts most frames carry)."""
    heads = [
        struct.unpack(">6I", data[header + n * frame_size : header + n * frame_size + _FRAME_HEADER])
        for n in range(frames)
        if header + n * frame_size + _FRAME_HEADER <= len(data)
    ]
    if salts is None and heads:
        pairs = [(h[2], h[3]) for h in heads]
        salts = max(set(pairs), key=pairs.count)
    return sum(1 for h in heads if h[1] and (h[2], h[3]) == salts)
