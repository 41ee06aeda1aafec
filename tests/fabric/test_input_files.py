"""Every file a command reads, given something that is not that file: larger than the limit (a
sparse file: nothing is written), binary, not UTF-8, a directory, missing. Each is one line on
stderr naming the file, with the README's exit code (3: an input that does not parse; 2: a
thresholds file, a usage error; 5: a name that is no file is looked up in the store), never a
traceback. The readers that no command takes a path for are checked directly below."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.app.slurm import read_node_map
from fabric.cli.main import main
from fabric.counters.parse import read_ibdiagnet_pm, read_ibqueryerrors, read_perfquery
from probes.nccl_parse import read_nccl_tests
from probes.opensm import parse_opensm_log
from probes.perftest import read_perftest
from tests.conftest import REALDATA, ROOT
from topology.cables import read_cables
from topology.errors import MAX_ERROR_CHARS, ParseError
from topology.textfile import MAX_INPUT_BYTES, input_lines

SMALL = str(REALDATA / "ibnetdiscover" / "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt")
CASES = ("oversized", "binary", "bad_utf8", "directory", "missing")
_RING = ROOT / "tests" / "data" / "sl2vl"
RING_CHECK = ["routes", "check", "--input", str(_RING / "ibnetdiscover-ring5.txt")]
RING_CHECK += ["--tables", str(_RING / "dump_fts-ring5-dfsssp.txt")]


def _make(case: str, path: Path) -> Path:
    if case == "oversized":
        with open(path, "wb") as fh:
            fh.truncate(MAX_INPUT_BYTES + 1)  # sparse: its size is all that is read
    elif case == "binary":
        path.write_bytes(bytes(range(256)) * 64)
    elif case == "bad_utf8":
        path.write_bytes(b"\xc3\x28 \xa0\xa1 caf\xe9 \xe2\x82\n" * 50)
    elif case == "directory":
        path.mkdir()
    return path


# command (FILE and DB filled in), the file's name, and the exit code for a bad_utf8 file when it
# is not 3. A tool's output keeps a bad byte as U+FFFD and is then refused by its parser (it is not
# that tool's output); a file people write (pairs, a health report) is refused as not UTF-8.
COMMANDS: dict[str, tuple[list[str], str]] = {
    "discover --input": (["discover", "--input", "FILE"], "x.topo"),
    "discover --ibdiagnet": (["discover", "--ibdiagnet", "FILE"], "ibdiagnet2.db_csv"),
    "counters collect --ibdiagnet": (
        ["counters", "collect", "--ibdiagnet", "FILE", "--db", "DB"],
        "ibdiagnet2.db_csv",
    ),
    "topology diff": (["topology", "diff", "FILE", SMALL, "--db", "DB"], "before.topo"),
    "topology check --plan": (["topology", "check", "--input", SMALL, "--plan", "FILE"], "plan.csv"),
    "sweep plan --input": (["sweep", "plan", "--input", "FILE", "--pattern", "pairwise"], "x.topo"),
    "sweep plan --pairs": (
        ["sweep", "plan", "--input", SMALL, "--pattern", "custom", "--pairs", "FILE"],
        "p.txt",
    ),
    "sweep plan --routes": (["sweep", "plan", "--input", SMALL, "--routes", "FILE"], "x.lft"),
    "whatif --lft": (["whatif", "ar", "on", "--input", SMALL, "--lft", "FILE"], "x.lft"),
    "recommend --health": (["recommend", "--input", SMALL, "--health", "FILE", "--db", "DB"], "h.json"),
    "recommend --opensm-conf": (
        ["recommend", "--input", SMALL, "--opensm-conf", "FILE", "--db", "DB"],
        "o.conf",
    ),
    "drain recommended --health": (
        ["drain", "recommended", "--input", SMALL, "--health", "FILE", "--db", "DB"],
        "h.json",
    ),
    "place --free": (["place", "--input", SMALL, "--free", "FILE", "--nodes", "2"], "free.txt"),
    "hosts run -i": (["hosts", "run", "-i", "FILE", "--", "true"], "inv.toml"),
    "routes check --sl2vl": ([*RING_CHECK, "--sl2vl", "FILE"], "x.sl2vl"),
    "routes check --path-records": ([*RING_CHECK, "--path-records", "FILE"], "pr.txt"),
    "health --thresholds": (["health", "--thresholds", "FILE", "--db", "DB"], "t.toml"),
}
# Where the answer is not exit 3 (a refusal of the input), and why.
EXPECTED: dict[tuple[str, str], int] = {
    # thresholds are options, refused as a usage error (README: "thresholds: 2")
    **{("health --thresholds", case): 2 for case in CASES},
    # an ibdiagnet directory (or a db_csv path) that is not there: a usage error naming it
    ("discover --ibdiagnet", "directory"): 2,
    ("discover --ibdiagnet", "missing"): 2,
    ("counters collect --ibdiagnet", "directory"): 2,
    ("counters collect --ibdiagnet", "missing"): 2,
    # a name that is no file is a snapshot reference: the store (absent here) answers
    ("topology diff", "missing"): 5,
    # opensm.conf is read as the SM writes it: bad bytes stand in for themselves, no key is read
    ("recommend --opensm-conf", "bad_utf8"): 0,
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_file_that_is_not_the_file_is_one_line(tmp_path: Path, command: str, case: str) -> None:
    args, name = COMMANDS[command]
    path = _make(case, tmp_path / name)
    argv = [str(path) if a == "FILE" else str(tmp_path / "s.db") if a == "DB" else a for a in args]
    res = CliRunner().invoke(main, argv)
    code = EXPECTED.get((command, case), 3)
    assert res.exit_code == code, (res.exit_code, res.output, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("ibfab: error: ")]
    if code == 0:
        assert errors == []
        return
    assert len(errors) == 1 and res.stderr.count("\n") <= 2, res.stderr
    error = errors[0]
    assert len(error) <= MAX_ERROR_CHARS + 20
    if code == 3 and command != "hosts run -i":  # the inventory's own messages name the file too
        assert str(path) in error, error
    if case == "oversized" and code == 3:
        # forwarding tables stream with no size limit (a 16,384-HCA fabric's dump is 1.8 GB):
        # the file of zeros is refused by its first line instead
        assert "larger than" in error or ("lft" in error and "longer than 1 MiB" in error)
    if case == "binary" and code == 3 and "inventory" not in error:
        assert "binary data (a NUL byte at line 1)" in error or "not UTF-8" in error


# -- the readers no command hands a path (saved captures read by the API) ----------------------
READERS: dict[str, Callable[[str], object]] = {
    "perfquery": read_perfquery,
    "ibqueryerrors": read_ibqueryerrors,
    "ibdiagnet pm": read_ibdiagnet_pm,
    "ibdiagnet cables": read_cables,
    "nccl-tests": read_nccl_tests,
    "ib_write_bw": lambda p: read_perftest(p, "ib_write_bw"),
    "node map": lambda p: read_node_map(p),
}


@pytest.mark.parametrize("case", ("oversized", "binary", "directory", "missing"))
@pytest.mark.parametrize("what", sorted(READERS))
def test_every_reader_refuses_what_is_not_its_file(tmp_path: Path, what: str, case: str) -> None:
    path = _make(case, tmp_path / "capture.txt")
    with pytest.raises(ParseError) as err:
        READERS[what](str(path))
    line = err.value.one_line()
    assert line.startswith(str(path)) and what in line
    assert {"oversized": "larger than", "binary": "binary data", "directory": "is a directory"}.get(
        case, "No such file"
    ) in line


def test_a_node_map_must_be_utf8_and_says_the_line(tmp_path: Path) -> None:
    path = tmp_path / "map.txt"
    path.write_bytes(b"dgx-01 node01\ndgx-02 n\xf6de02\n")
    with pytest.raises(ParseError, match=r"map.txt:2: node map: not UTF-8 text \(byte 22, line 2\)"):
        read_node_map(str(path))


def test_a_capture_keeps_a_latin1_byte(tmp_path: Path) -> None:
    """Tool output is not refused for a byte that is not UTF-8 (a node description in Latin-1)."""
    real = REALDATA / "perfquery" / "treydock-perfquery-E-rcverrordetails.txt"
    copy = tmp_path / "perfquery.txt"
    copy.write_bytes(real.read_bytes().replace(b"\n", b" \xe9\n", 1))
    assert read_perfquery(str(copy)) == read_perfquery(str(real))


# -- logs: streamed, never refused for their size ------------------------------------------------
def test_an_opensm_log_is_read_as_a_stream(tmp_path: Path) -> None:
    """A log of a NUL run longer than a line may be (an unclean shutdown) and lines after it: read
    in the memory of a line, the version and engine after the run still found."""
    log = tmp_path / "opensm.log"
    with open(log, "wb") as fh:
        fh.write(b"Jan 01 00:00:00 000001 [7F] 0x02 -> OpenSM 3.3.20\n")
        fh.write(b"\0" * (32 << 20))  # 32 MiB with no line end
        fh.write(b"\nJan 02 00:00:00 000001 [7F] 0x02 -> OpenSM 3.3.23\n")
        fh.write(b"Jan 02 00:00:01 000002 [7F] 0x02 -> minhop tables configured on all switches\n")
    tracemalloc.start()
    try:
        found = parse_opensm_log(input_lines(log, "opensm log"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == ("3.3.23", "minhop")
    assert peak < 8 << 20, peak  # a 1 MiB line at a time (a few copies), not 32 MiB


@pytest.mark.parametrize("case", ("directory", "missing"))
def test_an_opensm_log_given_that_cannot_be_read(tmp_path: Path, case: str) -> None:
    path = _make(case, tmp_path / "opensm.log")
    res = CliRunner().invoke(
        main, ["recommend", "--input", SMALL, "--opensm-log", str(path), "--db", str(tmp_path / "s.db")]
    )
    assert res.exit_code == 3 and "Traceback" not in res.output
    assert f"ibfab: error: {path}: opensm log: " in res.stderr


def test_an_opensm_log_of_garbage_says_it_names_nothing(tmp_path: Path) -> None:
    path = _make("binary", tmp_path / "opensm.log")
    res = CliRunner().invoke(
        main, ["recommend", "--input", SMALL, "--opensm-log", str(path), "--db", str(tmp_path / "s.db")]
    )
    assert res.exit_code == 0, res.output
    assert "names neither a version nor an engine" in res.output
