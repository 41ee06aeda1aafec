"""How much work Python's regex engine does on a string, counted, not timed.

:func:`engine_steps` runs a compiled pattern on a string as ``re``'s backtracking engine would (the
same order of trying: greedy and lazy repeats, alternatives left to right, lookarounds, possessive
repeats and atomic groups) and counts its steps: a character looked at, a node tried. The count is
a property of the pattern and the string, the same on any machine under any load, so a test can
assert that a pattern's work grows linearly with its input (a backtracking pattern's grows with
the square or worse).

It also returns the spans it matched, so a caller checks them against ``re`` itself: where they
agree, the steps counted are those of the matching ``re`` did. A construct it does not know (a
back-reference, a conditional group) is an :class:`Unsupported` error naming the pattern.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as P  # type: ignore[attr-defined]
from typing import Any

# The methods that search from each position in turn, and on from each match's end.
SCANNING = frozenset({"search", "findall", "finditer", "sub", "subn", "split"})
ANCHORED = frozenset({"match", "fullmatch"})


class Unsupported(Exception):
    """The pattern uses a construct this counter does not model."""


class OverBudget(Exception):
    """More steps than the caller allowed (what it asked is already answered: superlinear)."""


@dataclass(frozen=True, slots=True)
class Steps:
    steps: int
    spans: tuple[tuple[int, int], ...]  # what the method matched (finditer's spans for scanning ones)


def engine_steps(
    pattern: re.Pattern[str],
    method: str,
    string: str,
    pos: int = 0,
    endpos: int | None = None,
    budget: int = 10**8,
) -> Steps:
    """The steps ``pattern.<method>(string, pos, endpos)`` takes (every match for the scanning
    methods, as ``findall`` would); :class:`OverBudget` past ``budget`` steps."""
    if not isinstance(string, str):
        raise Unsupported(f"{pattern.pattern!r}: bytes input")
    end = len(string) if endpos is None else max(0, min(endpos, len(string)))
    engine = _Engine(pattern, string, end, budget)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20_000))
    try:
        return Steps(engine.steps_of(method, pos), tuple(engine.spans))
    finally:
        sys.setrecursionlimit(old)


def real_spans(
    pattern: re.Pattern[str], method: str, string: str, pos: int = 0, endpos: int | None = None
) -> tuple[tuple[int, int], ...]:
    """The spans ``re`` itself matches, in the form :func:`engine_steps` returns them."""
    end = len(string) if endpos is None else endpos
    if method in SCANNING:
        return tuple(m.span() for m in pattern.finditer(string, pos, end))
    found = getattr(pattern, method)(string, pos, end)
    return (found.span(),) if found else ()


class _Engine:
    def __init__(self, pattern: re.Pattern[str], string: str, end: int, budget: int) -> None:
        self.s = string
        self.end = end
        self.budget = budget
        self.count = 0
        self.spans: list[tuple[int, int]] = []
        self.flags = pattern.flags
        self.name = pattern.pattern
        self.tree = list(P.parse(pattern.pattern, pattern.flags))

    def step(self, n: int = 1) -> None:
        self.count += n
        if self.count > self.budget:
            raise OverBudget(self.name)

    def steps_of(self, method: str, pos: int) -> int:
        pos = max(0, min(pos, self.end))
        if method in ANCHORED:
            found = self.attempt(pos, full=method == "fullmatch", nonempty=False)
            if found is not None:
                self.spans.append((pos, found))
            return self.count
        if method not in SCANNING:
            raise Unsupported(f"{self.name!r}: method {method}")
        start, nonempty = pos, False
        while start <= self.end:
            hit = self.search(start, nonempty)
            if hit is None:
                break
            self.spans.append(hit)
            a, b = hit
            start, nonempty = b, a == b  # after an empty match, the next must not be empty there
        return self.count

    def search(self, start: int, nonempty: bool) -> tuple[int, int] | None:
        for at in range(start, self.end + 1):
            self.step()
            found = self.attempt(at, full=False, nonempty=nonempty and at == start)
            if found is not None:
                return at, found
        return None

    def attempt(self, at: int, full: bool, nonempty: bool) -> int | None:
        for j in self.seq(self.tree, 0, at, self.flags):
            if (full and j != self.end) or (nonempty and j == at):
                continue
            return j
        return None

    # -- matching: each generator yields the end positions of its node, in the order re tries them
    def seq(self, items: Sequence[Any], k: int, i: int, flags: int) -> Iterator[int]:
        if k == len(items):
            yield i
            return
        for j in self.node(items[k], i, flags):
            yield from self.seq(items, k + 1, j, flags)

    def node(self, item: tuple[Any, Any], i: int, flags: int) -> Iterator[int]:
        op, av = item
        self.step()
        if op in _ONE_CHAR:
            if i < self.end and self.one(item, self.s[i], flags):
                yield i + 1
        elif op is C.AT:
            if self.at(av, i, flags):
                yield i
        elif op is C.SUBPATTERN:
            _, add, remove, body = av
            yield from self.seq(list(body), 0, i, (flags | add) & ~remove)
        elif op is C.BRANCH:
            for alternative in av[1]:
                yield from self.seq(list(alternative), 0, i, flags)
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            yield from self.repeat(op, av, i, flags)
        elif op is C.ATOMIC_GROUP:
            for j in self.seq(list(av), 0, i, flags):
                yield j
                return
        elif op in (C.ASSERT, C.ASSERT_NOT):
            direction, body = av
            yield from self.look(op is C.ASSERT, direction, list(body), i, flags)
        else:
            raise Unsupported(f"{self.name!r}: {op}")

    def repeat(self, op: Any, av: tuple[int, int, Any], i: int, flags: int) -> Iterator[int]:
        low, high, body = av
        body = list(body)
        high = sys.maxsize if high is C.MAXREPEAT else high
        if len(body) == 1 and body[0][0] in _ONE_CHAR:  # one character a time: no state per repeat
            item = body[0]
            if op is C.MIN_REPEAT:
                n = 0
                while True:
                    if n >= low:
                        yield i + n
                    self.step()
                    if n >= high or i + n >= self.end or not self.one(item, self.s[i + n], flags):
                        return
                    n += 1
            n = 0
            while n < high and i + n < self.end:
                self.step()
                if not self.one(item, self.s[i + n], flags):
                    break
                n += 1
            if n < low:
                return
            if op is C.POSSESSIVE_REPEAT:
                yield i + n
                return
            for m in range(n, low - 1, -1):
                self.step()
                yield i + m
            return
        found = self.repeat_general(op is C.MIN_REPEAT, low, high, body, i, 0, flags)
        if op is C.POSSESSIVE_REPEAT:
            for j in found:
                yield j
                return
        else:
            yield from found

    def repeat_general(
        self, lazy: bool, low: int, high: int, body: list[Any], i: int, count: int, flags: int
    ) -> Iterator[int]:
        if lazy and count >= low:
            yield i
        if count < high:
            for j in self.seq(body, 0, i, flags):
                if j == i and count >= low:
                    continue  # an empty pass adds nothing (re stops such a repeat too)
                yield from self.repeat_general(lazy, low, high, body, j, count + 1, flags)
        if not lazy and count >= low:
            yield i

    def look(self, positive: bool, direction: int, body: list[Any], i: int, flags: int) -> Iterator[int]:
        if direction == 1:
            found = any(True for _ in self.seq(body, 0, i, flags))
        else:
            width, most = P.SubPattern(P.State(), body).getwidth()
            if width != most:
                raise Unsupported(f"{self.name!r}: a look-behind of varying width")
            found = i - width >= 0 and any(j == i for j in self.seq(body, 0, i - width, flags))
        if found == positive:
            yield i

    # -- one character, one position
    def one(self, item: tuple[Any, Any], ch: str, flags: int) -> bool:
        op, av = item
        if op is C.ANY:
            return bool(flags & re.DOTALL) or ch != "\n"
        if op is C.LITERAL:
            return _same(ch, av, flags)
        if op is C.NOT_LITERAL:
            return not _same(ch, av, flags)
        if op is C.IN:
            return self.in_set(av, ch, flags)
        raise Unsupported(f"{self.name!r}: {op}")

    def in_set(self, members: Sequence[tuple[Any, Any]], ch: str, flags: int) -> bool:
        negate, hit = False, False
        for op, av in members:
            self.step()
            if op is C.NEGATE:
                negate = True
            elif op is C.LITERAL:
                hit = hit or _same(ch, av, flags)
            elif op is C.RANGE:
                low, high = av
                hit = hit or any(low <= ord(c) <= high for c in _cases(ch, flags))
            elif op is C.CATEGORY:
                hit = hit or _category(av, ch, flags)
            else:
                raise Unsupported(f"{self.name!r}: {op} in a set")
        return hit != negate

    def at(self, where: Any, i: int, flags: int) -> bool:
        s, end = self.s, self.end
        multiline = bool(flags & re.MULTILINE)
        if where is C.AT_BEGINNING:
            return i == 0 or (multiline and s[i - 1] == "\n")
        if where is C.AT_BEGINNING_STRING:
            return i == 0
        if where is C.AT_END:
            return i == end or (s[i] == "\n" and (multiline or i + 1 == end))
        if where is C.AT_END_STRING:
            return i == end
        if where in (C.AT_BOUNDARY, C.AT_NON_BOUNDARY):
            if end == 0:
                return False
            before = i > 0 and _word(s[i - 1], flags)
            after = i < end and _word(s[i], flags)
            return (before != after) == (where is C.AT_BOUNDARY)
        raise Unsupported(f"{self.name!r}: {where}")


_ONE_CHAR = (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN)


def _cases(ch: str, flags: int) -> tuple[str, ...]:
    return (ch, ch.lower(), ch.upper()) if flags & re.IGNORECASE else (ch,)


def _same(ch: str, code: int, flags: int) -> bool:
    if flags & re.IGNORECASE:
        return ch.lower() == chr(code).lower()
    return ord(ch) == code


def _word(ch: str, flags: int) -> bool:
    if flags & re.ASCII:
        return ch.isascii() and (ch.isalnum() or ch == "_")
    return ch.isalnum() or ch == "_"


def _category(category: Any, ch: str, flags: int) -> bool:
    ascii_only = bool(flags & re.ASCII)
    if category is C.CATEGORY_DIGIT:
        return ch.isdecimal() and (ch.isascii() or not ascii_only)
    if category is C.CATEGORY_NOT_DIGIT:
        return not _category(C.CATEGORY_DIGIT, ch, flags)
    if category is C.CATEGORY_SPACE:
        return ch in " \t\n\r\f\v" if ascii_only else ch.isspace()
    if category is C.CATEGORY_NOT_SPACE:
        return not _category(C.CATEGORY_SPACE, ch, flags)
    if category is C.CATEGORY_WORD:
        return _word(ch, flags)
    if category is C.CATEGORY_NOT_WORD:
        return not _word(ch, flags)
    raise Unsupported(f"category {category}")
