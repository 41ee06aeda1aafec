"""nccl-tests in every form it prints today: text and JSON (-J) of one run read to the same rows,
NCCL's log anywhere (in the middle of a row too), launcher tags, processes that each ran alone.

The files in tests/data/nccl-forms were built from nccl-tests v2.19.6 (src/util.cu: the text and
JSON_FILE_VERSION 3; v2.17.6 for version 1) and NCCL v2.28.9-1 (src/debug.cc and the messages of
init.cc, transport/net_ib.cc, net_socket.cc, net.cc, enqueue.cc): see their README.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from probes.nccl_json import nccl_version_name, parse_nccl_json, read_nccl_json
from probes.nccl_log import split_log
from probes.nccl_parse import NcclRow, NcclTestResult, parse_nccl_tests, read_nccl_tests
from tests.ncclforms import BUILDERS, FORMS
from topology.errors import ParseError

IB_TEXT = FORMS / "all_reduce_perf-2nodes-16xH100-ib-info.txt"
IB_JSON = FORMS / "all_reduce_perf-2nodes-16xH100-ib-info.json"


def read(path: Path) -> NcclTestResult:
    return read_nccl_json(str(path)) if path.suffix == ".json" else read_nccl_tests(str(path))


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_each_file_is_what_the_builder_makes(name: str) -> None:
    assert (FORMS / name).read_text(encoding="utf-8") == BUILDERS[name](), (
        "rebuild with python -m tests.ncclforms"
    )


def test_every_file_has_a_readme_line() -> None:
    readme = (FORMS / "README.md").read_text(encoding="utf-8")
    assert {p.name for p in FORMS.iterdir() if p.name != "README.md"} == set(BUILDERS)
    assert all(f"`{name}`" in readme for name in BUILDERS)


def _same(a: NcclRow, b: NcclRow) -> bool:
    """The text prints values cut to their column (getFloatStr: 2 decimals, fewer when wide)."""

    def close(x: float, y: float) -> bool:
        return abs(x - y) <= 0.05 + 5e-5 * abs(y)

    return (
        (a.size, a.count, a.type, a.redop, a.root) == (b.size, b.count, b.type, b.redop, b.root)
        and all(
            close(getattr(ta, f), getattr(tb, f))
            for ta, tb in ((a.out_of_place, b.out_of_place), (a.in_place, b.in_place))
            for f in ("time_us", "algbw", "busbw")
        )
        and (a.out_of_place.wrong, a.in_place.wrong) == (b.out_of_place.wrong, b.in_place.wrong)
    )


@pytest.mark.parametrize(
    "text_file",
    ["all_reduce_perf-2nodes-16xH100-ib-info.txt", "all_reduce_perf-2nodes-16xH100-ib-info-tag-output.txt"],
)
def test_text_and_json_of_one_run_give_the_same_rows(text_file: str) -> None:
    text, report = read(FORMS / text_file), read(IB_JSON)
    assert len(text.rows) == len(report.rows) == 14
    assert all(_same(a, b) for a, b in zip(text.rows, report.rows, strict=True))
    assert [(r.rank, r.host, r.pid, r.device, r.bus_id) for r in text.ranks] == [
        (r.rank, r.host, r.pid, r.device, r.bus_id) for r in report.ranks
    ]
    assert text.collective == report.collective == "all_reduce_perf"
    assert text.nccl_library == report.nccl_library == 22809
    assert math.isclose(text.avg_busbw or 0, report.avg_busbw or 0, rel_tol=1e-5)
    assert text.ok and report.ok and (text.out_of_bounds, report.out_of_bounds) == (0, 0)
    assert (text.form, report.form) == ("text", "json")


def test_info_lines_are_kept_apart_counted_and_read() -> None:
    r = read(IB_TEXT)
    assert r.environment.info_lines == 16 * 8 + 16 * 4  # start-up lines and channel lines per process
    assert r.nccl_version == "2.28.9+cuda13.0" and r.nccl_tests_version == "2.19.6"
    assert (r.nccl_headers, r.nccl_library) == (22809, 22809)
    assert (r.environment.nodes, r.environment.local_ranks) == (2, 8)
    [a, b] = r.environment.hosts
    assert (a.host, b.host) == ("dgx-0001", "dgx-0002")
    assert (
        a.network == "IB"
        and a.gdr is True
        and [h.label for h in a.hcas or ()] == [f"mlx5_{i}:1/IB" for i in range(8)]
    )
    assert any("NET/IB : Using [0]mlx5_0:1/IB" in e.text for e in a.evidence)
    assert not r.warns and not r.notes


def test_log_lines_inside_rows_leave_the_rows_whole() -> None:
    r = read(FORMS / "all_gather_perf-1gpu-vm-coll-info-mid-row.txt")
    assert [row.size for row in r.rows] == [0, 0, 4, 8, 16, 32, 64]
    first = r.rows[0]
    assert (first.count, first.type, first.redop, first.root) == (0, "float", "none", -1)
    assert (first.out_of_place.time_us, first.in_place.time_us, first.in_place.wrong) == (4.21, 4.05, 0)
    assert r.environment.info_lines == 8 + 7 + 7 * 6  # start-up, warm-up, six calls per row
    [vm] = r.environment.hosts
    assert (vm.host, vm.network, vm.no_ib_device) == ("vm", "Socket", True)
    assert r.ok and not r.notes


def test_a_warn_between_a_rows_pieces() -> None:
    r = read(FORMS / "all_reduce_perf-2nodes-16xH100-4-of-8-hcas-warn-mid-row.txt")
    assert len(r.rows) == 14 and r.rows[9].size == 1 << 29 and r.rows[9].in_place.wrong == 0
    [w] = r.warns
    assert (w.host, w.pid, w.cuda_device, w.location) == ("dgx-0001", 39120, 0, "transport/net_ib.cc:253")
    assert w.message == "NET/IB : mlx5_3:1 Got non-fatal async event: port error(10)"
    assert r.ok  # a non-fatal event fails nothing by itself
    assert r.notes == ("NCCL's last error: NET/IB : mlx5_3:1 Got non-fatal async event: port error(10)",)
    assert r.environment.setting("NCCL_IB_HCA") == "mlx5_0,mlx5_1,mlx5_2,mlx5_3"


def test_processes_that_each_ran_alone() -> None:
    r = read(FORMS / "all_reduce_perf-no-mpi-2-processes-each-alone.txt")
    assert r.separate_runs == 2 and not r.ok
    assert r.error is not None and "2 separate nccl-tests runs" in r.error and "MPI=1" in r.error
    assert {x.host for x in r.ranks} == {"dgx-0001", "dgx-0002"} and {x.rank for x in r.ranks} == {0}


def test_old_json_spelling_and_only_nccl_settings_kept() -> None:
    r = read(FORMS / "reduce_scatter_perf-2nodes-per-rail-v1.json")
    assert r.avg_busbw is not None and r.avg_busbw > 40 and r.collective == "reduce_scatter_perf"
    assert r.nccl_version == "2.28.7" and r.nranks == 2
    assert r.environment.settings == (("NCCL_IB_HCA", "=mlx5_0"),)


# --- NCCL's log line, alone --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "before", "host", "level", "location", "message"),
    [
        ("vm:1299:1299 [0] NCCL INFO Using network IB", "", "vm", "INFO", None, "Using network IB"),
        ("     8    2  float  sum  -1vm:1299:1299 [0] NCCL INFO x", "     8    2  float  sum  -1", "vm", "INFO", None, "x"),
        ("    0.07    0.00    0.00      0n1:7:8 [3] NCCL INFO y", "    0.07    0.00    0.00      0", "n1", "INFO", None, "y"),
        ("  0.07  0.00  0.00    N/Anode-7:1:1 [0] NCCL INFO z", "  0.07  0.00  0.00    N/A", "node-7", "INFO", None, "z"),
        (
            "[2026-01-21 09:14:03] a-1:5:6 [2] transport/net_ib.cc:253 NCCL WARN NET/IB : bad",
            "", "a-1", "WARN", "transport/net_ib.cc:253", "NET/IB : bad",
        ),
        ("     -1[2026-01-21 09:14:03] a:5:6 [2] f.cc:1 NCCL WARN w", "     -1", "a", "WARN", "f.cc:1", "w"),
        ("h:1:2 [0] net.cc:9 (ncclNetInit) NCCL WARN v2.30", "", "h", "WARN", "net.cc:9 (ncclNetInit)", "v2.30"),
        ("h:1:2 [0] 12.500 run:77 NCCL TRACE t", "", "h", "TRACE", "12.500 run:77", "t"),
        ("h:1:2 NCCL CALL ncclCommInitRank(...)", "", "h", "CALL", None, "ncclCommInitRank(...)"),
    ],
)  # fmt: skip
def test_split_log(line: str, before: str, host: str, level: str, location: str | None, message: str) -> None:
    text, log = split_log(line)
    assert log is not None and (text, log.host, log.level, log.location, log.message) == (
        before,
        host,
        level,
        location,
        message,
    )


def test_a_host_name_starting_with_digits_is_kept_when_seen_alone() -> None:
    known = {"10gpu:42"}
    text, log = split_log("  8  2  float  sum      -110gpu:42:42 [0] NCCL INFO x", known)
    assert log is not None and (text, log.host) == ("  8  2  float  sum      -1", "10gpu")
    text, log = split_log("  8  2  float  sum      -1vm:42:42 [0] NCCL INFO x")  # no process seen yet
    assert log is not None and (text, log.host) == ("  8  2  float  sum      -1", "vm")


@pytest.mark.parametrize(
    "line",
    [
        "NCCL version 2.28.9+cuda13.0",
        "#  NCCL INFO in a comment",
        "x NCCL INFO no prefix",
        "a:b:c [0] NCCL INFO x",
    ],
)
def test_not_a_log_line(line: str) -> None:
    assert split_log(line) == (line, None)


def test_a_word_cut_by_another_process_is_joined() -> None:
    header = "#  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong\n"
    text = (
        header
        + "n2:9:9 [1] NCCL INFO Init COMPLETE\n"
        + "   1048576   262144  fln2:9:9 [1] NCCL INFO Channel 00/0 : 9[1] -> 1[1] [send] via NET/IB/1/GDRDMA\n"
        + "oat  sum  -1  62.20  16.86  31.61  0  61.96  16.92  31.73  0\n"
    )
    [row] = parse_nccl_tests(text, "cut").rows
    assert (row.type, row.in_place.busbw) == ("float", 31.73)


def test_launcher_labels_are_dropped() -> None:
    header = "0: #  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong\n"
    row = "0:   1024  256  float  sum  -1  20.10  0.05  0.10  0  19.90  0.05  0.10  0\n"
    [parsed] = parse_nccl_tests(header + row, "srun -l").rows
    assert parsed.size == 1024


# --- the JSON report ---------------------------------------------------------------------------


def test_json_infinity_and_nan_as_nccl_tests_writes_them() -> None:
    text = IB_JSON.read_text(encoding="utf-8").replace('"alg_bw":16.', '"alg_bw":inf,"x":16.', 1)
    text = text.replace('"bus_bw":31.', '"bus_bw":"nan","y":31.', 1)
    r = parse_nccl_json(text, "inf.json")
    assert math.isinf(r.rows[0].out_of_place.algbw) and math.isnan(r.rows[0].out_of_place.busbw)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"version":3,"results":[{"size":8', "not complete JSON"),
        ("hello", "not JSON"),
        ('{"version":3,"results":[{"size":"8","count":2}]}', "results[0].size is str"),
        ('{"version":3,"results":[{"size":true,"count":2}]}', "results[0].size is bool"),
        ('{"version":3,"config":[1]}', "config is not an object"),
        ('{"version":3,"results":[{"count":2}]}', "has no size"),
        ('{"a":1}', "not an nccl-tests report"),
        ("[" * 100_000, "not JSON"),
        ('{"version":3,"results":[{"size":' + "9" * 5000 + ',"count":1}]}', ""),
    ],
    ids=["cut", "text", "str", "bool", "config", "nosize", "other", "deep", "digits"],
)
def test_json_that_is_no_report_is_a_one_line_parse_error(text: str, problem: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_nccl_json(text, "bad.json")
    assert problem in str(err.value) and "\n" not in str(err.value) and "bad.json" in str(err.value)


def test_version_codes() -> None:
    assert [nccl_version_name(c) for c in (22809, 21212, 2708)] == ["2.28.9", "2.12.12", "2.7.8"]
