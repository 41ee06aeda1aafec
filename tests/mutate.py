"""Seeded random edits of tool output, for the tests that feed parsers garbled text."""

from __future__ import annotations

import random


def random_edit(rng: random.Random, text: str, alphabet: str, *, cut: bool = False) -> str:
    """``text`` with one edit: a character dropped, changed (to one of ``alphabet``) or doubled,
    a line dropped, doubled or swapped with the next, or, with ``cut``, the text cut short."""
    lines = text.split("\n")
    if cut and len(lines) < 2:
        return text[: rng.randrange(len(text) + 1)]
    kind, i = rng.randrange(7 if cut else 6), rng.randrange(len(lines) - 1)
    line = lines[i]
    j = rng.randrange(len(line)) if line else 0
    if kind == 0 and line:
        lines[i] = line[:j] + line[j + 1 :]
    elif kind == 1 and line:
        lines[i] = line[:j] + rng.choice(alphabet) + line[j + 1 :]
    elif kind == 2 and line:
        lines[i] = line[:j] + line[j] + line[j:]
    elif kind == 3:
        del lines[i]
    elif kind == 4:
        lines.insert(i, line)
    elif kind == 5 or not cut:
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    else:
        return text[: rng.randrange(len(text))]
    return "\n".join(lines)
