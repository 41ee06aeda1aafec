"""Every parser's time on 1 MB of adversarial text, against reading that same text, in one run.

The texts are those of ``tests/fabric/test_parsers_linear.py`` (runs of each character the
patterns repeat, real lines repeated into one line, real lines with a long run at each separator,
64 KB lines, the real text repeated), at 1 MB. Reading a text (into lines, each into words with
one regex pass: what any parser does at least once) is the unit, measured on the same text in the
same run, so a busy machine slows both: a parser's ratio on real text is 1-20x, at most about 65x on
its worst input; a backtracking pattern is over 10,000x at 1 MB.

Printed per parser: its worst ratio and the input it was on, its time and reading's there, and the
peak memory the parse allocated on that input (tracemalloc, a second run). The suite asserts the
same property by counting work (calls, regex input, regex steps), never by time.
Run from the repository root: ``.venv/bin/python bench/bench_parsers_linear.py [NAME ...]``.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fabric.test_parsers_linear import PARSERS, adversarial_texts
from topology.errors import IbfabError

SIZE = 1 << 20
_WORDS = re.compile(r"\S+")


def reading(text: str) -> float:
    """Seconds to read ``text`` the plainest way, best of three."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for line in text.splitlines():
            _WORDS.findall(line)
        best = min(best, time.perf_counter() - started)
    return max(best, 1e-3)  # a floor: splitting one long line takes microseconds


def timed(parse: Callable[[str], object], text: str) -> float:
    """Seconds of one parse, best of two (refusing the text with the project's error counts)."""
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        with contextlib.suppress(IbfabError):
            parse(text)
        best = min(best, time.perf_counter() - started)
    return best


def peak_mib(parse: Callable[[str], object], text: str) -> float:
    tracemalloc.start()
    try:
        with contextlib.suppress(IbfabError):
            parse(text)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main(names: list[str]) -> int:
    print(f"each parser on its adversarial texts at {SIZE >> 20} MB; ratio = parse time / reading time")
    print(f"{'parser':<22} {'worst':>7} {'parse s':>8} {'read s':>7} {'peak MiB':>9}  on")
    for name in names or sorted(PARSERS):
        parse, seed = PARSERS[name]
        worst = (0.0, "", 0.0, 0.0, "")
        for label, text in adversarial_texts(seed(), SIZE):
            took, unit = timed(parse, text), reading(text)
            if took / unit > worst[0]:
                worst = (took / unit, label, took, unit, text)
        ratio, label, took, unit, text = worst
        print(f"{name:<22} {ratio:6.1f}x {took:8.3f} {unit:7.3f} {peak_mib(parse, text):9.2f}  {label}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
