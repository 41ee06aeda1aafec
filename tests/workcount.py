"""The work a parser does on a text, counted, not timed: the same figure on any machine under any
load, so a test can assert that it grows linearly with the text.

Three counts, each of which a superlinear parser drives up:

- calls: every Python and built-in function call made while it parses (``cProfile``'s call
  counts; its clock is not read), so a loop over the lines inside a loop over the lines shows;
- regex input: the characters every regex call is given (from ``pos`` to ``endpos``), so matching
  the rest of the text at every line or slicing it again and again shows;
- regex steps: what Python's backtracking engine does inside one call is invisible to both, so the
  long strings each pattern was given (one of each shape) are run again through
  :mod:`tests.regexsteps` (a step counter that matches as ``re`` does, its spans checked against
  ``re``'s), made longer twice by the same length (:func:`pattern_growth`): a backtracking
  pattern's steps grow faster each time.

What it cannot see: the work inside one built-in call other than a regex's (``list.pop(0)`` in a
loop, a slice copied per line); ``bench/bench_parsers_linear.py`` times every parser at 1 MB.

The counting needs every pattern the parsers compile to be a counting one, so it runs in a process
of its own that installs the counter before it imports them (:func:`child`; :func:`measure_in_child`
starts it).
"""

from __future__ import annotations

import contextlib
import cProfile
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.regexsteps import OverBudget, Steps, Unsupported, engine_steps, real_spans

ROOT = Path(__file__).resolve().parents[1]
# Patterns compiled by these packages count (the stdlib's and libraries' own do not).
PROJECT = ("topology.", "probes.", "fabric.", "tui.", "tests.")
GROWTH = 1.125  # a count may grow at most this much faster than the text (4x text: 4.5x count)
SHORT = 200  # characters of a string a pattern was given that its steps are counted on
LONG = SHORT
# A pattern's steps for the same characters added twice: a linear pattern's grow by the same each
# time; a quadratic one's by 5/3 as much the second time (200 -> 400 -> 600 characters).
SLOWER = 1.3
_SAMPLES_PER_PATTERN = 64  # distinct long strings kept per pattern and method, per text


@dataclass
class Work:
    calls: int = 0
    regex_chars: int = 0
    # (pattern, method, string) of the longest strings each pattern was given
    samples: dict[tuple[int, str, str], tuple[re.Pattern[str], str, str]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.calls + self.regex_chars


_WORK: Work | None = None  # counting now (None: not)


def _record(pattern: re.Pattern[str], method: str, string: Any, pos: int, endpos: int) -> None:
    work = _WORK
    if work is None or not isinstance(string, str):
        return
    end = min(endpos, len(string))
    pos = max(0, pos)
    work.regex_chars += max(0, end - pos)
    if end - pos > SHORT:
        text = string[pos : min(end, pos + LONG)]
        key = (id(pattern), method, text)
        kept = sum(1 for k in work.samples if k[:2] == key[:2])
        if key not in work.samples and kept < _SAMPLES_PER_PATTERN:
            work.samples[key] = (pattern, method, text)


class CountedPattern:
    """A compiled pattern that records what it is given (:data:`_WORK`), then does as ``re`` does."""

    __slots__ = ("_p",)

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self._p = pattern

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Any:
        _record(self._p, "search", string, pos, endpos)
        return self._p.search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Any:
        _record(self._p, "match", string, pos, endpos)
        return self._p.match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Any:
        _record(self._p, "fullmatch", string, pos, endpos)
        return self._p.fullmatch(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Any:
        _record(self._p, "findall", string, pos, endpos)
        return self._p.findall(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Any:
        _record(self._p, "finditer", string, pos, endpos)
        return self._p.finditer(string, pos, endpos)

    def sub(self, repl: Any, string: str, count: int = 0) -> Any:
        _record(self._p, "sub", string, 0, sys.maxsize)
        return self._p.sub(repl, string, count)

    def subn(self, repl: Any, string: str, count: int = 0) -> Any:
        _record(self._p, "subn", string, 0, sys.maxsize)
        return self._p.subn(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> Any:
        _record(self._p, "split", string, 0, sys.maxsize)
        return self._p.split(string, maxsplit)

    def __getattr__(self, name: str) -> Any:  # pattern, flags, groups, groupindex, scanner
        return getattr(self._p, name)

    def __eq__(self, other: object) -> bool:
        return self._p == (other._p if isinstance(other, CountedPattern) else other)

    def __hash__(self) -> int:
        return hash(self._p)

    def __repr__(self) -> str:
        return repr(self._p)


def install() -> None:
    """From now on, patterns compiled by the project (``re.compile``, ``re.search(...)``, ...)
    count what they are given. Call it before the project's modules are imported."""
    real = re._compile  # type: ignore[attr-defined]
    wrapped: dict[re.Pattern[str], CountedPattern] = {}

    def compile_counted(pattern: Any, flags: Any) -> Any:
        if isinstance(pattern, CountedPattern):
            return pattern
        compiled = real(pattern, flags)
        frame = sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__") == "re":
            frame = frame.f_back  # type: ignore[assignment]
        caller = frame.f_globals.get("__name__", "") if frame is not None else ""
        if not isinstance(compiled.pattern, str) or not caller.startswith(PROJECT):
            return compiled
        return wrapped.setdefault(compiled, CountedPattern(compiled))

    re._compile = compile_counted  # type: ignore[attr-defined]


@contextlib.contextmanager
def counting() -> Iterator[Work]:
    global _WORK
    work = Work()
    profile = cProfile.Profile()
    _WORK = work
    profile.enable()
    try:
        yield work
    finally:
        profile.disable()
        _WORK = None
        here = __file__
        work.calls = sum(
            entry.callcount
            for entry in profile.getstats()
            if not (isinstance(entry.code, type(install.__code__)) and entry.code.co_filename == here)
        )


def measure(parse: Callable[[str], object], text: str) -> Work:
    """The work of ``parse(text)`` (refusing the text with the project's error is work too)."""
    from topology.errors import IbfabError

    with counting() as work, contextlib.suppress(IbfabError):
        parse(text)
    return work


def pattern_growth(pattern: re.Pattern[str], method: str, text: str) -> str | None:
    """Why ``pattern.<method>`` is not linear on ``text``, or None when it is; also when the step
    counter disagrees with ``re`` on what matched.

    The text is made longer with more of its own end (its last quarter, repeated), twice by the same
    length: a linear pattern's steps grow by the same amount each time, a quadratic one's by about
    two thirds more the second time (a longer prefix of the text instead would hold more of a long
    line than the shorter did, and a linear pattern's steps would seem to grow faster than it).
    """
    base = text[:SHORT]
    if len(base) < SHORT:
        return None
    more = base[-SHORT // 4 :] * 4
    first = allowed = 0
    try:
        steps = [_checked(pattern, method, base + more * k).steps for k in (0, 1)]
        first = steps[1] - steps[0]
        allowed = steps[1] + int(SLOWER * first) + 64
        _checked(pattern, method, base + more * 2, allowed)
    except OverBudget:
        return (
            f"its steps grew by {first} for {len(more)} more characters, then by over {allowed - steps[1]}"
            f" for {len(more)} more"
        )
    except (Unsupported, _Disagrees) as exc:
        return f"cannot count its steps: {exc}"
    return None


class _Disagrees(Exception):
    """The step counter matched other spans than ``re``: its count is not ``re``'s."""


def _checked(pattern: re.Pattern[str], method: str, text: str, budget: int = 10**8) -> Steps:
    found = engine_steps(pattern, method, text, budget=budget)
    if found.spans != real_spans(pattern, method, text):
        raise _Disagrees(f"it matched {found.spans[:3]}, re {real_spans(pattern, method, text)[:3]}")
    return found


_LOWER = re.compile(r"[^\W\d_A-Z]")
_UPPER = re.compile(r"[A-Z]")
_DIGITS = re.compile(r"\d")
_RUNS = re.compile(r"(.)\1{2,}", re.DOTALL)


def shape(text: str) -> str:
    """``text`` with letters as ``a`` or ``A``, digits as ``0`` and every run cut to two: strings of
    one shape make a pattern do much the same work, so its steps are counted once per shape."""
    return _RUNS.sub(r"\1\1", _DIGITS.sub("0", _UPPER.sub("A", _LOWER.sub("a", text))))


# -- the child process ---------------------------------------------------------------------------
def child() -> None:
    """Measure the parsers named in argv[1] (JSON: names, small size, large size) on their
    adversarial texts; print a JSON report per parser."""
    install()
    names, small, large = json.loads(sys.argv[1])
    from tests.fabric import test_parsers_linear as linear

    report: dict[str, dict[str, list[str]]] = {}
    for name in names:
        parse, seed = {**linear.PARSERS, **linear.TOYS}[name]
        text_seed = seed()
        slow: list[str] = []
        samples: dict[tuple[int, str, str], tuple[re.Pattern[str], str, str]] = {}
        texts = zip(
            linear.adversarial_texts(text_seed, small),
            linear.adversarial_texts(text_seed, large),
            strict=True,
        )
        for (label, little), (_, big) in texts:
            few, many = measure(parse, little), measure(parse, big)
            for what, a, b in (
                ("calls", few.calls, many.calls),
                ("regex input", few.regex_chars, many.regex_chars),
            ):
                growth = (b / max(a, 1)) / (len(big) / max(1, len(little)))
                if growth > GROWTH and b > 1000:
                    slow.append(f"{label}: {what} {a} -> {b} for {len(little)} -> {len(big)} characters")
            for pattern, method, sample in many.samples.values():
                samples.setdefault((id(pattern), method, shape(sample)), (pattern, method, sample))
        backtracking: dict[tuple[int, str], str] = {}  # one finding per pattern and method
        for pattern, method, sample in samples.values():
            if (id(pattern), method) in backtracking:
                continue
            why = pattern_growth(pattern, method, sample)
            if why is not None:
                backtracking[(id(pattern), method)] = (
                    f"{pattern.pattern!r}.{method} on {sample[:40]!r}...: {why}"
                )
        report[name] = {"slow": slow, "backtracking": sorted(backtracking.values())}
    print(json.dumps(report))


def measure_in_child(
    names: list[str], small: int, large: int, timeout: float = 600
) -> dict[str, dict[str, list[str]]]:
    code = "from tests.workcount import child; child()"
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps([names, small, large])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the counting process failed: {done.stderr[-3000:]}")
    report: dict[str, dict[str, list[str]]] = json.loads(done.stdout.strip().splitlines()[-1])
    return report
