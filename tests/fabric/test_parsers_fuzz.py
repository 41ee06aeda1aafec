"""Garbled tool output never crashes a parser: seeded random edits of every real capture give a
result or the project's one-line error (an IbfabError), never another exception.

Edits: a character dropped, changed or doubled, a line dropped, doubled or swapped with the next,
or the text cut short. (Found this way: nccl-tests' '# Avg bus bandwidth : 150."09' raised a bare
ValueError.)
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from fabric.counters.parse import parse_ibdiagnet_pm, parse_ibqueryerrors, parse_perfquery
from probes.nccl_parse import parse_nccl_tests
from probes.perftest import parse_perftest
from tests.conftest import realdata_files
from tests.mutate import random_edit
from topology.errors import IbfabError
from topology.routes import parse_lft_dump

PARSERS: dict[str, Callable[[str], object]] = {
    "perfquery": lambda t: parse_perfquery(t, "fuzz"),
    "ibqueryerrors": lambda t: parse_ibqueryerrors(t, "fuzz"),
    "ibdiagnet": lambda t: parse_ibdiagnet_pm(t, "fuzz"),
    "ib_write_bw": lambda t: parse_perftest(t, "fuzz"),
    "ib_read_bw": lambda t: parse_perftest(t, "fuzz"),
    "ib_write_lat": lambda t: parse_perftest(t, "fuzz"),
    "ib_send_lat": lambda t: parse_perftest(t, "fuzz"),
    "nccl-tests": lambda t: parse_nccl_tests(t, "fuzz"),
    "opensm": lambda t: parse_lft_dump(t, "fuzz"),
}
CASES = [(tool, p) for tool in PARSERS for p in realdata_files(tool) if p.stat().st_size < 400_000]
EDITS = 60


def _edit(rng: random.Random, text: str) -> str:
    return random_edit(rng, text, '0123456789abcdefx[]"#:|. \t-', cut=True)


def test_every_tool_has_captures() -> None:
    assert {tool for tool, _ in CASES} == set(PARSERS)


@pytest.mark.parametrize(("tool", "path"), CASES, ids=[f"{t}/{p.name}" for t, p in CASES])
def test_random_edits_give_a_result_or_a_one_line_error(tool: str, path: Path) -> None:
    parse = PARSERS[tool]
    base = path.read_text(encoding="utf-8", errors="replace")
    rng = random.Random(f"{tool}/{path.name}")
    for _ in range(EDITS):
        text = _edit(rng, base)
        try:
            parse(text)
        except IbfabError as exc:
            assert "\n" not in str(exc).strip(), f"multi-line error: {exc}"
