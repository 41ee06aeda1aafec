"""Garbled tool output never crashes a parser: seeded random edits of every real capture give a
result or the project's one-line error (an IbfabError), never another exception; and every
command that reads a file, run through the CLI on hypothesis-mutated real files, ends with a
documented exit code, a one-line error, no traceback and bounded memory (issue 30).

Formats with no file entry point in the CLI (saved perfquery, ibqueryerrors, perftest,
nccl-tests and iblinkinfo output: read from the tools as they run) are fuzzed at the parser.

Edits: a character dropped, changed or doubled, a line dropped, doubled or swapped with the next,
or the text cut short. (Found this way: nccl-tests' '# Avg bus bandwidth : 150."09' raised a bare
ValueError.)
"""

from __future__ import annotations

import random
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric.cli import main
from fabric.counters.parse import parse_ibdiagnet_pm, parse_ibqueryerrors, parse_perfquery
from probes.iblinkinfo import parse_iblinkinfo
from probes.inventory import read_inventory
from probes.nccl_parse import parse_nccl_tests
from probes.perftest import parse_perftest
from probes.transport import CommandResult
from tests.conftest import REALDATA, ROOT, realdata_files
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
    "iblinkinfo": lambda t: parse_iblinkinfo(t, "fuzz"),
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


# -- every file entry point, through the CLI (issue 30) ------------------------------------------
# Hypothesis drives byte-level edits of real captures (tests/data/realdata; the samples for the
# files people write) into each command that reads a file, as a user would run it. Every example
# must end with a documented exit code (README: 0/1 a result, 2 usage, 3 unparsable input, 5 the
# store; `topology check`: 10 differs, 11 not all checked), errors on one line, no traceback, and its peak memory bounded.
# Derandomized and bounded in examples: the same inputs on every run, in well under a minute.

SMALL_TOPO = REALDATA / "ibnetdiscover" / "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt"
IBDIAG = REALDATA / "ibdiagnet"
DB_CSV = IBDIAG / "garyli-ndr-272nodes-ibdiagnet2.db_csv"
SAMPLES = ROOT / "samples"
MEMORY_BOUND = 256 << 20  # a few MB of input: anything near this is a blow-up

# Tokens an edit puts in: separators, a bare CR, a NUL, bytes that are not UTF-8, numbers no
# field can hold, values tools print for "unknown", a field longer than any tool writes.
TOKENS = (
    b"\r",
    b"\r",
    b'"',
    b"\n",
    b"\0",
    b"\xff\xfe",
    b"\xe9",
    b'"',
    b",",
    b"\t",
    b" ",
    b"#",
    b"[",
    b"]",
    b"=",
    b":",
    b"-1",
    b"0x",
    b"N/A",
    b"",
    b"65535",
    b"70000",
    b"9" * 23,
    b"9" * 5000,
    b"x" * 140_000,
    b'"' + b"x" * 140_000 + b'"',
)
# What an edit does (where: ``at`` modulo the places of its kind): a number of the file replaced
# (the values parsers read), a bare CR, a huge quoted field or a token put inside a line, a
# header's word replaced, a byte dropped, a line dropped or doubled, the file cut short.
EDIT = st.tuples(
    st.sampled_from(
        ("number", "cr", "huge", "in-line", "word", "number", "drop", "line-drop", "line-dup", "cut")
    ),
    st.integers(0, 2**31),
    st.sampled_from(TOKENS),
)
# What a number becomes (its token picks one of these: the values no field of a tool can hold).
NUMBERS = (b"9" * 5000, b"9" * 23, b"70000", b"50000", b"256", b"-1", b"0x", b"N/A", b"", b"1e400")
# A number on its own (a LID, a port, a count), not the digits of a GUID or of 4xHDR.
_NUMBER = re.compile(rb"(?<![0-9A-Za-z_.])\d+(?![0-9A-Za-z_])")
_WORD = re.compile(rb"[A-Za-z_]{2,}")


def _mutate(data: bytes, edits: list[tuple[str, int, bytes]]) -> bytes:
    for kind, at, token in edits:
        if not data:
            break
        i = at % len(data)
        if kind in ("number", "word"):
            places = [m.span() for m in (_NUMBER if kind == "number" else _WORD).finditer(data)]
            if places:
                start, end = places[at % len(places)]
                if kind == "number":
                    token = NUMBERS[(at // len(places) + len(token)) % len(NUMBERS)]
                data = data[:start] + token + data[end:]
            continue
        start = data.rfind(b"\n", 0, i) + 1
        end = data.find(b"\n", i)
        end = len(data) if end < 0 else end + 1
        if kind in ("in-line", "cr", "huge"):  # a token, a bare CR, a field no tool writes
            token = {"cr": b"\r", "huge": b'"' + b"x" * 140_000 + b'"'}.get(kind, token)
            middle = start + (end - start) // 2
            data = data[:middle] + token + data[middle:]
        elif kind == "drop":
            data = data[:i] + data[i + 1 :]
        elif kind == "cut":
            data = data[:i]
        else:
            line = data[start:end]
            data = data[:start] + (line + line if kind == "line-dup" else b"") + data[end:]
    return data


@dataclass(frozen=True)
class Entry:
    """A command that reads a file: ``argv(file, scratch)`` runs it on the mutated ``file`` (or,
    with ``parse``, the file's reader alone, for files whose commands then reach hosts)."""

    name: str
    inputs: tuple[Path, ...]  # the real files (or samples) the edits start from
    argv: Callable[[Path, Path], list[str]] | None
    exits: frozenset[int]
    examples: int
    file_name: str = "input.txt"  # what the mutated file is called (in its own folder)
    beside: tuple[tuple[str, Path | bytes], ...] = ()  # other files of the folder, unchanged
    parse: Callable[[Path], object] | None = None


def _store(scratch: Path) -> Path:
    """A store with a few counter snapshots (what `health --thresholds` reads), made once."""
    db = scratch.parent / "health.db"
    if not db.exists():
        from tests.fabric.test_store_heal import _build

        _build(db)
    return db


# The tables of a db_csv some reader of ibfab reads (the others are skipped whole): a fuzzed run
# keeps only these, so that its edits land where they are read.
_READ_TABLES = (
    b"RUN_INFO",
    b"NODES",
    b"PORTS",
    b"LINKS",
    b"PM_INFO",
    b"AR_INFO",
    b"FEC_MODE",
    b"TEMP_SENSING",
    b"SM_INFO",
)


def _db_csv_read_tables() -> bytes:
    text = DB_CSV.read_bytes()
    kept = []
    for name in _READ_TABLES:
        start = text.find(b"START_" + name + b"\n")
        if start >= 0:
            kept.append(text[start : text.index(b"END_" + name + b"\n", start) + len(name) + 5])
    return b"\n".join(kept)


def _db_csv_without_pm() -> bytes:
    text = DB_CSV.read_bytes()
    start, end = text.index(b"START_PM_INFO"), text.index(b"END_PM_INFO") + len(b"END_PM_INFO\n")
    return text[:start] + text[end:]


def _hosts_of(capture: Path) -> bytes:
    """The hosts of a real capture, one a line (a free list, as a site writes one)."""
    from topology.classify import classify
    from topology.ibnetdiscover import read_ibnetdiscover

    hosts = sorted(classify(read_ibnetdiscover(capture)).hosts)
    return "".join(f"{h}\n" for h in hosts).encode()


ENTRIES = (
    Entry(
        "discover --input",
        tuple(p for p in realdata_files("ibnetdiscover") if p.stat().st_size < 120_000),
        lambda f, s: ["discover", "--input", str(f), "--json"],
        frozenset({0, 3}),
        80,
    ),
    Entry(
        "discover --ibdiagnet (db_csv)",
        (DB_CSV,),
        lambda f, s: ["discover", "--ibdiagnet", str(f), "--json"],
        frozenset({0, 2, 3}),
        20,
        "ibdiagnet2.db_csv",
    ),
    Entry(
        "counters collect --ibdiagnet (db_csv PM_INFO)",
        (DB_CSV,),
        lambda f, s: ["counters", "collect", "--ibdiagnet", str(f), "--db", str(s / "c.db")],
        frozenset({0, 2, 3}),
        16,
        "ibdiagnet2.db_csv",
    ),
    Entry(
        "counters collect --ibdiagnet (.pm)",
        (IBDIAG / "garyli-ndr-272nodes-ibdiagnet2.pm",),
        lambda f, s: ["counters", "collect", "--ibdiagnet", str(f.parent), "--db", str(s / "c.db")],
        frozenset({0, 2, 3}),
        10,
        "ibdiagnet2.pm",
        (("ibdiagnet2.db_csv", _db_csv_without_pm()),),
    ),
    Entry(
        "topology cable --ibdiagnet (.cables)",
        (IBDIAG / "garyli-ndr-272nodes-ibdiagnet2.cables",),
        lambda f, s: ["topology", "cable", "--ibdiagnet", str(f.parent), "ib-switch-sequoia/1"],
        frozenset({0, 2, 3}),
        10,
        "ibdiagnet2.cables",
        (("ibdiagnet2.db_csv", DB_CSV),),
    ),
    Entry(
        "topology check --plan",
        tuple(realdata_files("ndt")),
        lambda f, s: ["topology", "check", "--plan", str(f), "--input", str(SMALL_TOPO)],
        frozenset({0, 3, 10, 11}),  # 10: the fabric differs, 11: some planned cables not checkable
        60,
        "plan.csv",
    ),
    Entry(
        "recommend --opensm-log",
        tuple(realdata_files("opensm")),
        lambda f, s: [
            "recommend",
            "--opensm-log",
            str(f),
            "--input",
            str(SMALL_TOPO),
            "--db",
            str(s / "none.db"),
        ],
        frozenset({0, 3}),
        20,
    ),
    Entry(
        "health --thresholds",
        (SAMPLES / "health.toml",),
        lambda f, s: [
            "health",
            "--thresholds",
            str(f),
            "--db",
            str(_store(s)),
            "--since",
            "all",
            "--no-record",
        ],
        frozenset({0, 1, 2, 3}),  # 1: a link not healthy; 2: thresholds refused
        40,
        "health.toml",
    ),
    Entry(
        "place --free",
        (SMALL_TOPO,),
        lambda f, s: [
            "place",
            "--nodes",
            "2",
            "--free",
            str(f),
            "--input",
            str(SMALL_TOPO),
            "--db",
            str(s / "n.db"),
        ],
        frozenset({0, 2, 3}),
        30,
        "free.txt",
        (),
    ),
    Entry(
        "inventory (its reader: every command with one then reaches hosts)",
        (SAMPLES / "inventory.toml",),
        None,
        frozenset(),
        60,
        "inventory.toml",
        parse=lambda f: read_inventory(f),
    ),
)
# The free list starts from the capture's own hosts (made from it at run time).
_CLI_SEEDS: dict[str, Callable[[], list[tuple[str, bytes]]]] = {
    "place --free": lambda: [("hosts of " + SMALL_TOPO.name, _hosts_of(SMALL_TOPO))],
    "discover --ibdiagnet (db_csv)": lambda: [("read tables of " + DB_CSV.name, _db_csv_read_tables())],
    "counters collect --ibdiagnet (db_csv PM_INFO)": lambda: [
        ("read tables of " + DB_CSV.name, _db_csv_read_tables())
    ],
}


def _peak_rss() -> int | None:
    """This process's peak resident bytes since the last reset (Linux; None elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def test_every_fuzzed_entry_point_has_its_real_inputs() -> None:
    assert all(e.inputs and all(p.is_file() for p in e.inputs) for e in ENTRIES)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_mutated_real_inputs_through_the_cli_end_in_a_documented_way(entry: Entry) -> None:
    seeds = _CLI_SEEDS.get(entry.name)
    originals = seeds() if seeds is not None else [(p.name, p.read_bytes()) for p in entry.inputs]
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "scratch"

        @settings(
            derandomize=True,
            max_examples=entry.examples,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(st.integers(0, len(originals) - 1), st.lists(EDIT, min_size=1, max_size=3))
        def run(which: int, edits: list[tuple[str, int, bytes]]) -> None:
            original = originals[which]
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
            for name, content in entry.beside:
                (scratch / name).write_bytes(content if isinstance(content, bytes) else content.read_bytes())
            target = scratch / entry.file_name
            target.write_bytes(_mutate(original[1], edits))
            measured = _reset_peak_rss()
            before = _peak_rss()
            where = f"{entry.name} on {original[0]} with {[(k, a, t[:12]) for k, a, t in edits]}"
            if entry.parse is not None:
                try:
                    entry.parse(target)
                except IbfabError as exc:
                    assert "\n" not in str(exc).strip(), f"{where}: multi-line error: {exc}"
                after = _peak_rss()
                if measured and before is not None and after is not None:
                    assert after - before < MEMORY_BOUND, (
                        f"{where}: peak memory grew {(after - before) >> 20} MiB"
                    )
                return
            assert entry.argv is not None
            res = CliRunner().invoke(main, entry.argv(target, scratch))
            after = _peak_rss()
            if res.exception is not None and not isinstance(res.exception, SystemExit):
                raise AssertionError(
                    f"{where}: {type(res.exception).__name__}: {res.exception}"
                ) from res.exception
            assert "Traceback" not in res.output, where
            assert res.exit_code in entry.exits, f"{where}: exit {res.exit_code}: {res.output[-400:]}"
            errors = [ln for ln in res.stderr.splitlines() if ln.startswith("ibfab: error:")]
            if res.exit_code not in (0, 1, 10, 11):
                assert len(errors) == 1 and len(errors[0]) <= 420, f"{where}: {res.stderr[-600:]}"
            if measured and before is not None and after is not None:
                assert after - before < MEMORY_BOUND, (
                    f"{where}: peak memory grew {(after - before) >> 20} MiB"
                )

        run()
