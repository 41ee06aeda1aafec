"""Garbled tool output never crashes a parser: seeded random edits of every real capture give a
result or the project's one-line error (an IbfabError), never another exception.

Edits: a character dropped, changed or doubled, a line dropped, doubled or swapped with the next,
or the text cut short. (Found this way: nccl-tests' '# Avg bus bandwidth : 150."09' raised a bare
ValueError.)
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from fabric.counters.parse import parse_ibdiagnet_pm, parse_ibqueryerrors, parse_perfquery
from probes.nccl_parse import parse_nccl_tests
from probes.perftest import parse_perftest
from probes.transport import CommandResult
from tests.conftest import REALDATA, realdata_files
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


# --- property tests: every parser of remote output, random bytes and mutated real outputs --------
# A host's output is whatever it printed; the parsers that read it (perftest, nccl-tests text and
# JSON, iblinkinfo, perfquery) raise ParseError and nothing else, so a sweep records that host's
# failure and goes on. Seeded (derandomized) and bounded in examples, so the run is the same
# every time and stays quick.

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from probes.iblinkinfo import parse_iblinkinfo  # noqa: E402
from probes.nccl_json import parse_nccl_json  # noqa: E402
from tests.ncclforms import FORMS  # noqa: E402
from topology.errors import ParseError  # noqa: E402

REMOTE: dict[str, Callable[[str], object]] = {
    "ib_write_bw": lambda t: parse_perftest(t, "fuzz"),
    "nccl-tests": lambda t: parse_nccl_tests(t, "fuzz"),
    "nccl-tests JSON": lambda t: parse_nccl_json(t, "fuzz"),
    "iblinkinfo": lambda t: parse_iblinkinfo(t, "fuzz"),
    "perfquery": lambda t: parse_perfquery(t, "fuzz"),
}
_SEEDS: dict[str, list[Path]] = {
    "ib_write_bw": realdata_files("ib_write_bw"),
    "nccl-tests": realdata_files("nccl-tests")
    + [
        FORMS / f"{n}.txt"
        for n in (
            "all_reduce_perf-2nodes-16xH100-4-of-8-hcas-warn-mid-row",
            "all_gather_perf-1gpu-vm-coll-info-mid-row",
        )
    ],
    "nccl-tests JSON": sorted(FORMS.glob("*.json")),
    "iblinkinfo": realdata_files("iblinkinfo"),
    "perfquery": realdata_files("perfquery"),
}
SEED_TEXTS = {
    tool: [p.read_text(encoding="utf-8", errors="replace")[:20_000] for p in paths]
    for tool, paths in _SEEDS.items()
}
# What a broken host or a hostile file puts where a number, a GUID or a name goes.
NASTY = [
    "1e999", "-1e999", "nan", "inf", "9" * 80, "9" * 5000, "0x" + "f" * 80, "0x", "-", "-0", "\x00", "\ufffd",
    "N/A", "[", "]", "{", "}", '"', ":", ",", "==(", ")==>", "NCCL INFO ", "NCCL WARN ", " [0] ", "#", "\t",
    "\r", "\n", " " * 300, "18446744073709551616", "-9223372036854775809", "1.5.5", "...........",
]  # fmt: skip
_FIELD = re.compile(r"0x[0-9a-fA-F]+|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
FUZZ = settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))


def _only_parse_errors(tool: str, text: str) -> None:
    try:
        REMOTE[tool](text)
    except ParseError as exc:
        assert "\n" not in exc.one_line()


@st.composite
def mutated(draw: st.DrawFn, tool: str) -> str:
    text = draw(st.sampled_from(SEED_TEXTS[tool]))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["field", "field", "insert", "replace", "delete", "cut"]))
        fields = [m.span() for m in _FIELD.finditer(text, max(0, at - 2000), at + 2000)]
        if kind == "field" and fields:  # a number, GUID or count the parser converts
            a, b = draw(st.sampled_from(fields))
            text = text[:a] + draw(st.sampled_from(NASTY)) + text[b:]
        elif kind == "cut":
            text = text[:at]
        elif kind == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 40)) :]
        else:
            token = draw(st.sampled_from(NASTY) | st.text(max_size=12))
            end = at + (draw(st.integers(1, 20)) if kind == "replace" else 0)
            text = text[:at] + token + text[end:]
    return text


@pytest.mark.parametrize("tool", sorted(REMOTE))
def test_random_bytes_give_a_result_or_a_parse_error(tool: str) -> None:
    @FUZZ
    @given(st.binary(max_size=3000))
    def check(data: bytes) -> None:
        _only_parse_errors(tool, data.decode("utf-8", errors="replace"))

    check()


@pytest.mark.parametrize("tool", sorted(REMOTE))
def test_mutated_real_outputs_give_a_result_or_a_parse_error(tool: str) -> None:
    assert SEED_TEXTS[tool], f"no capture of {tool} to mutate"

    @FUZZ
    @given(mutated(tool))
    def check(text: str) -> None:
        _only_parse_errors(tool, text)

    check()


BREAKERS = ("1e999", "9" * 80, "0x" + "f" * 80, "9" * 5000, "-1", "18446744073709551616")
_MAX_FIELDS = 24  # per capture: spread over it


@pytest.mark.parametrize("tool", sorted(REMOTE))
def test_every_number_of_every_capture_replaced_by_a_breaker(tool: str) -> None:
    """Each number, GUID or count of each capture (up to 24 of them, spread over the file's first 10,000 characters), in turn
    replaced by each breaker: a value too large for 64 bits, an infinity, 5,000 digits."""
    for text in SEED_TEXTS[tool]:
        text = text[:10_000]
        spans = [m.span() for m in _FIELD.finditer(text)]
        step = max(1, len(spans) // _MAX_FIELDS)
        for a, b in spans[::step]:
            for breaker in BREAKERS:
                _only_parse_errors(tool, text[:a] + breaker + text[b:])


# --- one host's garbage is that host's failure; the sweep goes on --------------------------------


class _GarbledHosts:
    """Hosts at their command boundary: each prints the real ib_write_bw client/server output,
    except ``bad``, whose client prints garbage with exit 0."""

    def __init__(self, host: str, good: str, garbage: str) -> None:
        self._host, self.good, self.garbage = host, good, garbage

    @property
    def host(self) -> str:
        return self._host

    def run(self, argv: Sequence[str], timeout: float) -> CommandResult:
        if argv[0] == "sh":  # the server (started through sh) and its cleanup
            return CommandResult(self._host, tuple(argv), 0, self.good if "exec" in argv[-1] else "", "", 0.1)
        out = self.garbage if self._host == "bad" else self.good
        return CommandResult(self._host, tuple(argv), 0, out, "", 0.1)

    def require(self, result: CommandResult, ok_codes: Sequence[int] = (0,)) -> CommandResult:
        return result

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    "garbage",
    ["\x00\x01 bytes", " #bytes  #iterations  BW average[Gb/sec]\n 8 1e999 1e999\n", "0x" + "f" * 80],
)
def test_one_hosts_garbage_is_that_pairs_failure_and_the_round_goes_on(garbage: str) -> None:
    from probes.inventory import HostEntry
    from probes.pairs import Endpoint, Probe
    from probes.perftest import PerftestOptions
    from probes.sweep import SshPerftestBackend
    from topology.model import Guid

    good = (REALDATA / "ib_write_bw" / "superbench-loopback-8M-hdr-server-client-concat.txt").read_text()
    names = ["good-a", "good-b", "bad", "good-c"]
    hosts = {n: HostEntry(n) for n in names}
    eps = {n: Endpoint(n, "mlx5_0", Guid(f"0x{i + 1:016x}"), None, 0) for i, n in enumerate(names)}
    backend = SshPerftestBackend(
        hosts, lambda h: _GarbledHosts(h.name, good, garbage), PerftestOptions("ib_write_bw"), start_delay=0.0
    )
    results = backend.run_round(
        [Probe(eps["good-a"], eps["good-b"], 0), Probe(eps["bad"], eps["good-c"], 0)], 0
    )
    ok, bad = results
    assert ok.ok and ok.gbps is not None and ok.gbps > 150
    assert not bad.ok and bad.gbps is None and bad.error is not None and "client bad" in bad.error
