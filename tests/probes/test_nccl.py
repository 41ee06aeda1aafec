"""nccl-tests command lines, bus-bandwidth factors and output parser, against every real capture."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from probes.nccl import (
    NcclTestOptions,
    busbw_factor,
    busbw_from_algbw,
    hostfile_text,
    mpirun_argv,
    parse_nccl_tests,
    rail_split_env,
    read_nccl_tests,
    srun_argv,
)
from tests.conftest import realdata_files
from topology.errors import ParseError, UsageError

CAPTURES = realdata_files("nccl-tests")


@dataclass(frozen=True)
class Expected:
    """Values read by eye from the capture (and, for ``nranks``, from SOURCES.tsv when not printed)."""

    binary: str
    rows: int
    ok: bool = True
    avg_busbw: float | None = None
    out_of_bounds: int | None = None
    nranks: int | None = None  # ranks in the communicator
    listed_ranks: int = 0
    nccl_version: str | None = None
    tests_version: str | None = None
    hosts: tuple[str, ...] = ()
    error_has: tuple[str, ...] = ()
    size: int | None = None  # a row to check
    oop: tuple[float, float, float] | None = None  # out-of-place time, algbw, busbw at ``size``
    ip: tuple[float, float, float] | None = None
    wrong: tuple[int | None, int | None] = (None, None)
    max_error: float | None = None
    redop: str = "sum"
    root: int | None = -1
    failures: int = 0
    warns: int = 0
    launcher_lines: int = 0  # lines around the output (MACHINEFILE, ssh warnings, SLURM_* echoes)


EXPECTED: dict[str, Expected] = {
    "deepops-all_reduce_perf-2x-dgxa100-8xhdr-k8s-old-format.txt": Expected(
        "all_reduce_perf", 30, avg_busbw=53.7098, out_of_bounds=0, nranks=16, size=4294967296,
        oop=(42715, 100.55, 188.53), ip=(42677, 100.64, 188.70), max_error=5e-07, root=None,
    ),
    "meta-gcm-all_reduce_perf-2nodes-16xA100-80GB-pairwise-templated-hosts.txt": Expected(
        "all_reduce_perf", 6, avg_busbw=150.209, out_of_bounds=0, nranks=16, listed_ranks=16,
        nccl_version="2.12.12+cuda11.6", hosts=("{host1}", "{host2}"), size=1073741824,
        oop=(11013, 97.50, 182.80), ip=(11099, 96.74, 181.39), wrong=(0, 0),
    ),
    "meta-gcm-all_reduce_perf-mpirun-not-enough-slots-failure.txt": Expected(
        "all_reduce_perf", 0, ok=False, error_has=("not enough slots", "16 processes"),
    ),
    "nccl-issue1698-roce-completion-status12-vendor129-excerpt.txt": Expected(
        "all_reduce_perf", 0, ok=False, warns=2,
        error_has=("mycl-g2", "192.168.3.5", "IBV_WC_RETRY_EXC_ERR", "vendor err 129", "mlx5_10"),
    ),
    "nccl-issue928-ib-completion-error4-vendor81-excerpt.txt": Expected(
        "all_reduce_perf", 0, ok=False, warns=2,
        error_has=("H100-2", "fe80::966d:ae03:8b:df78%ib0", "IBV_WC_LOC_PROT_ERR", "vendor err 81"),
    ),
    "nccl-tests-issue369-gh200-2nodes-wrong-out-of-bounds-FAILED.txt": Expected(
        "all_reduce_perf", 25, ok=False, avg_busbw=4.79995, out_of_bounds=4, nranks=2, listed_ranks=2,
        tests_version="2.17.8", hosts=("gpu-1-1", "gpu-1-7"), size=1048576, oop=(477.32, 2.20, 2.20),
        ip=(492.81, 2.13, 2.13), wrong=(96, 32), failures=2,
        error_has=("4 out-of-bounds values", "1048576 B: #wrong 96 out-of-place, 32 in-place"),
    ),
    "nccl-tests-issue369-gh200-2x4-cuda-busy-failure.txt": Expected(
        "all_reduce_perf", 0, ok=False, nranks=8, listed_ranks=8, tests_version="2.17.8",
        hosts=("gpu-1-1", "gpu-1-7"), failures=12,
        error_has=("Test CUDA failure common.cu:1304", "CUDA-capable device(s) is/are busy or unavailable"),
    ),
    "oci-hpc-all_reduce_perf-2nodes-16xH100-nccl2.23.4.txt": Expected(
        "all_reduce_perf", 5, avg_busbw=464.075, out_of_bounds=0, nranks=16, listed_ranks=16,
        nccl_version="2.23.4+cuda12.6", hosts=("h100-ord01-03-14", "h100-ord01-03-294"), size=17179869184,
        oop=(68359, 251.32, 471.22), ip=(68427, 251.07, 470.75), wrong=(0, 0),
        launcher_lines=3,
    ),
    "oci-oke-all_reduce_perf-2nodes-16xA100-nccl2.14.3-mpijob.txt": Expected(
        "all_reduce_perf", 2, avg_busbw=175.531, out_of_bounds=0, nranks=16, listed_ranks=16,
        nccl_version="2.14.3+cuda11.7", hosts=("nccl-test-a100-worker-0", "nccl-test-a100-worker-1"),
        size=10737418240, oop=(111812, 96.03, 180.06), ip=(111797, 96.04, 180.08), wrong=(0, 0),
        launcher_lines=2,
    ),
    "oci-oke-all_reduce_perf-v2.17.9-2nodes-A100-ranks-elided.txt": Expected(
        "all_reduce_perf", 2, avg_busbw=186.25, out_of_bounds=0, nranks=16, listed_ranks=4,
        nccl_version="2.29.3+cuda13.1", tests_version="2.17.9", size=1073741824,
        hosts=("oke-chfmqtu3dcq-nfgm3eqopla-sc7rl5e2tga-0", "oke-chfmqtu3dcq-nfgm3eqopla-sc7rl5e2tga-1"),
        oop=(10920.1, 98.33, 184.36), ip=(10940.7, 98.14, 184.02), wrong=(0, 0), launcher_lines=5,
    ),
    "oci-oke-rccl-tests-all_reduce_perf-2nodes-MI300X.txt": Expected(
        "all_reduce_perf", 5, avg_busbw=354.659, out_of_bounds=0, nranks=16, listed_ranks=4,
        hosts=("inst-ao2dl-oke-rdma", "inst-aq8lt-oke-rdma"), size=2147483648,
        oop=(11406, 188.28, 353.03), ip=(11406, 188.28, 353.02), wrong=(0, 0), launcher_lines=4,
    ),
    "superbench-all_reduce_perf-1node-8xA100-old-format.txt": Expected(
        "all_reduce_perf", 34, avg_busbw=68.4048, out_of_bounds=0, nranks=8, listed_ranks=8,
        hosts=("localhost",), size=8589934592, oop=(63896, 134.44, 235.26), ip=(63959, 134.30, 235.03),
        root=None,
    ),
    "superbench-alltoall_perf-1node-8xA100-old-format.txt": Expected(
        "alltoall_perf", 34, avg_busbw=58.6481, out_of_bounds=0, nranks=8, listed_ranks=8,
        hosts=("localhost",), size=8589934592, oop=(33508, 256.36, 224.31), ip=(33234, 258.47, 226.16),
        redop="", root=None,
    ),
    "superbench-reduce_perf-1node-8xA100-old-format-root.txt": Expected(
        "reduce_perf", 34, avg_busbw=65.018, out_of_bounds=0, nranks=8, listed_ranks=8,
        hosts=("localhost",), size=4194304, oop=(81.47, 51.48, 51.48), ip=(80.30, 52.23, 52.23), root=0,
    ),
}  # fmt: skip


def test_every_capture_has_expectations() -> None:
    assert CAPTURES, "no nccl-tests captures found under tests/data/realdata"
    assert {p.name for p in CAPTURES} == set(EXPECTED)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_real_capture(path: Path) -> None:
    want = EXPECTED[path.name]
    result = read_nccl_tests(str(path), binary=want.binary)
    assert result.collective == want.binary
    assert result.ok is want.ok
    assert len(result.rows) == want.rows
    assert result.avg_busbw == want.avg_busbw
    assert result.out_of_bounds == want.out_of_bounds
    assert len(result.ranks) == want.listed_ranks
    if want.listed_ranks:
        assert result.comm_size == want.nranks
    assert result.nccl_version == want.nccl_version
    assert result.nccl_tests_version == want.tests_version
    assert tuple(sorted({r.host for r in result.ranks})) == tuple(sorted(want.hosts))
    assert len(result.failures) == want.failures
    assert len(result.warns) == want.warns
    assert len(result.notes) == want.launcher_lines
    if want.ok:
        assert result.error is None
    else:
        assert result.error is not None and "\n" not in result.error
        for text in want.error_has:
            assert text in result.error
    if want.size is not None:
        row = result.row(want.size)
        assert want.oop is not None and want.ip is not None
        assert (row.out_of_place.time_us, row.out_of_place.algbw, row.out_of_place.busbw) == want.oop
        assert (row.in_place.time_us, row.in_place.algbw, row.in_place.busbw) == want.ip
        assert (row.out_of_place.wrong, row.in_place.wrong) == want.wrong
        assert row.out_of_place.max_error == want.max_error
        assert (row.type, row.redop, row.root) == ("float", want.redop, want.root)
        assert row.count * 4 == row.size or want.binary == "alltoall_perf"


TABLES = [p for p in CAPTURES if p.name in EXPECTED and EXPECTED[p.name].rows]


def test_failure_captures_have_no_table() -> None:
    for path in CAPTURES:
        if path not in TABLES:
            result = read_nccl_tests(str(path))
            assert (result.rows, result.avg_busbw, result.ok) == ((), None, False)


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.name)
def test_busbw_recomputed_from_algbw(path: Path) -> None:
    """busbw = algbw x factor(n), within the rounding of two printed decimals."""
    want = EXPECTED[path.name]
    result = read_nccl_tests(str(path), binary=want.binary)
    assert want.nranks is not None
    factor = busbw_factor(want.binary, want.nranks)
    for row in result.rows:
        for timing in (row.out_of_place, row.in_place):
            recomputed = busbw_from_algbw(want.binary, timing.algbw, want.nranks)
            assert recomputed == pytest.approx(timing.busbw, abs=0.005 * (factor + 1) + 1e-9), row.size


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.name)
def test_avg_bus_bandwidth_is_the_mean_of_printed_busbw(path: Path) -> None:
    result = read_nccl_tests(str(path))
    assert result.avg_busbw is not None
    values = [t.busbw for r in result.rows for t in (r.out_of_place, r.in_place)]
    assert sum(values) / len(values) == pytest.approx(result.avg_busbw, abs=0.005)


def test_completion_error_fields_old_format() -> None:
    [path] = [p for p in CAPTURES if "issue928" in p.name]
    warns = read_nccl_tests(str(path)).warns
    assert [(w.host, w.pid, w.cuda_device, w.location) for w in warns] == [
        ("H100-2", 19989, 1, "transport/net_ib.cc:1295"),
        ("H100-1", 9821, 1, "transport/net_ib.cc:1295"),
    ]
    first = warns[0].completion
    assert first is not None
    assert (first.peer, first.peer_port, first.status, first.opcode, first.length) == (
        "fe80::966d:ae03:8b:df78%ib0", 53249, 4, 32564, 32564,
    )  # fmt: skip
    assert (first.vendor_err, first.direction, first.status_name, first.hca) == (
        81,
        "Send",
        "IBV_WC_LOC_PROT_ERR",
        None,
    )


def test_completion_error_fields_new_format() -> None:
    [path] = [p for p in CAPTURES if "issue1698" in p.name]
    result = read_nccl_tests(str(path))
    c = result.completion_errors
    assert len(c) == 2
    assert (c[0].peer, c[0].peer_port, c[0].status, c[0].opcode, c[0].length) == (
        "192.168.3.5",
        53908,
        12,
        129,
        1048576,
    )
    assert (c[0].vendor_err, c[0].direction, c[0].status_name) == (129, "Recv", "IBV_WC_RETRY_EXC_ERR")
    assert (c[0].local_gid, c[0].remote_gid, c[0].hca) == (
        "::ffff:192.168.6.3",
        "::ffff:192.168.6.5",
        "mlx5_10",
    )
    assert (c[1].peer_port, c[1].opcode, c[1].length) == (50188, 32552, 32549)


def test_cuda_busy_failures() -> None:
    [path] = [p for p in CAPTURES if "cuda-busy" in p.name]
    result = read_nccl_tests(str(path))
    cuda = [f for f in result.failures if f.kind == "CUDA"]
    per_rank = [f for f in result.failures if f.kind == "test"]
    assert len(cuda) == 6 and len(per_rank) == 6
    assert {f.pid for f in per_rank} == {3617715, 3230359, 3230361, 3230358, 3230360, 3617718}
    assert result.ranks[4].host == "gpu-1-7" and result.ranks[4].bus_id == "0009:01:00"
    assert result.ranks[4].gpu == "NVIDIA GH200 120GB"


def test_old_format_details() -> None:
    [path] = [p for p in CAPTURES if p.name.startswith("superbench-all_reduce")]
    result = read_nccl_tests(str(path))
    assert result.collective is None  # old nccl-tests does not name itself
    assert dict(result.params)["nGpus"] == "8" and dict(result.params)["validation"] == "0"
    assert [r.size for r in result.rows[:3]] == [0, 0, 4]  # zero-size rows are kept
    assert result.rows[0].out_of_place.max_error is None  # N/A
    assert {r.group for r in result.ranks} == {None}
    assert (result.ops, result.datatypes) == (("sum",), ("float",))


def test_rccl_version_and_missing_gpu_names() -> None:
    [path] = [p for p in CAPTURES if "rccl" in p.name]
    result = read_nccl_tests(str(path))
    assert result.rccl_tests_version == "develop:a52452e"
    assert [r.rank for r in result.ranks] == [0, 7, 8, 15]
    assert all(r.gpu == "" for r in result.ranks)


def test_per_rail_split_comm_size() -> None:
    text = "".join(
        f"#  Rank {r:2d} Group {r % 2:2d} Pid {100 + r:6d} on {'a' if r < 2 else 'b':>10s} device {r % 2:2d} "
        f"[0000:0f:00] NVIDIA H100\n"
        for r in range(4)
    )
    result = parse_nccl_tests(text, "split")
    assert (result.nranks, result.comm_size) == (4, 2)
    assert result.error is not None and "no results table" in result.error


def test_stray_info_line_inside_table_is_skipped_and_bad_row_raises() -> None:
    header = "#  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong\n"
    good = "  1048576  262144  float  sum  -1  62.20  16.86  31.61  0  61.96  16.92  31.73  0\n"
    info = "node1:3442:3442 [0] NCCL INFO Launch mode Parallel\n"
    result = parse_nccl_tests(header + info + good + "# Avg bus bandwidth    : 31.67\n", "table")
    assert [r.size for r in result.rows] == [1048576]
    assert result.ok and result.avg_busbw == 31.67
    with pytest.raises(ParseError) as err:
        parse_nccl_tests(header + "     1048576   262144  float  sum  -1  62.20\n" + good, "bad.txt")
    assert (err.value.source, err.value.lineno) == ("bad.txt", 2)
    wrong = parse_nccl_tests(header + good.replace("31.73  0", "31.73  7"), "wrong")  # no summary line
    assert (
        not wrong.ok
        and wrong.error == "data corruption: wrong values (1048576 B: #wrong 0 out-of-place, 7 in-place)"
    )
    cut = parse_nccl_tests(header + good + good[:40], "cut")  # a cut-off last line is only noted
    assert len(cut.rows) == 1 and "incomplete last row" in cut.notes[0]


def test_timestamp_column() -> None:
    header = "#  size count type redop root  time algbw busbw #wrong  time algbw busbw #wrong  timestamp\n"
    row = "  1024  256  float  sum  -1  20.10  0.05  0.10  0  19.90  0.05  0.10  0 2025-01-02 03:04:05\n"
    [parsed] = parse_nccl_tests(header + row, "ts").rows
    assert (parsed.size, parsed.in_place.time_us, parsed.in_place.wrong) == (1024, 19.90, 0)


@pytest.mark.parametrize("text", ["hello\nworld\n", "total 12\ndrwxr-xr-x 2 root root 4096 .\n"])
def test_other_text_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="not nccl-tests output") as err:
        parse_nccl_tests(text, "x.log")
    assert (err.value.source, err.value.lineno) == ("x.log", 1)


# --- bus bandwidth factors -------------------------------------------------------------------------


def test_busbw_factors() -> None:
    assert busbw_factor("all_reduce_perf", 16) == 1.875
    assert busbw_factor("AllReduce", 2) == 1.0
    assert busbw_factor("all_gather", 8) == 0.875
    assert busbw_factor("reduce_scatter_perf", 4) == 0.75
    assert busbw_factor("alltoall_perf", 8) == 0.875
    assert busbw_factor("broadcast_perf", 16) == busbw_factor("reduce_perf", 16) == 1.0
    assert busbw_factor("sendrecv_perf", 2) == 1.0
    assert busbw_from_algbw("all_reduce_perf", 100.55, 16) == pytest.approx(188.53, abs=0.01)
    with pytest.raises(UsageError):
        busbw_factor("magic_perf", 8)
    with pytest.raises(UsageError):
        busbw_factor("all_reduce_perf", 0)


# --- command lines ---------------------------------------------------------------------------------


def _rail0() -> NcclTestOptions:
    return NcclTestOptions(
        "all_reduce_perf", min_bytes="8", max_bytes="8G", step_factor=2, gpus_per_proc=1, iterations=20,
        warmup=5, check=1, op="sum", datatype="float", binary_dir="/opt/nccl-tests/build",
        env={"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_ALGO": "Ring", **rail_split_env(8)},
    )  # fmt: skip


TEST_ARGS = ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1", "-n", "20",
             "-w", "5", "-c", "1", "-o", "sum", "-d", "float"]  # fmt: skip


def test_mpirun_argv_exact() -> None:
    assert mpirun_argv(_rail0(), "/tmp/hosts", 16, procs_per_node=8) == [
        "mpirun", "-np", "16", "--hostfile", "/tmp/hosts", "--bind-to", "none", "--map-by", "ppr:8:node",
        "-x", "NCCL_ALGO=Ring", "-x", "NCCL_IB_HCA==mlx5_0:1", "-x", "NCCL_TESTS_SPLIT=MOD 8", *TEST_ARGS,
    ]  # fmt: skip


def test_mpirun_keeps_a_comma_value_in_one_argument() -> None:
    opts = NcclTestOptions(
        "all_gather_perf", env={"NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_TESTS_SPLIT": "AND 0x7"}
    )
    argv = mpirun_argv(opts, "hosts.txt", 2, allow_run_as_root=True)
    assert argv == [
        "mpirun", "-np", "2", "--hostfile", "hosts.txt", "--bind-to", "none", "--allow-run-as-root",
        "-x", "NCCL_IB_HCA=mlx5_0,mlx5_1", "-x", "NCCL_TESTS_SPLIT=AND 0x7",
        "all_gather_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1",
    ]  # fmt: skip


def test_srun_argv_exact() -> None:
    assert srun_argv(_rail0(), ["gpu-001", "gpu-002"], 8) == [
        "srun", "--nodes=2", "--nodelist=gpu-001,gpu-002", "--ntasks-per-node=8", "--mpi=pmix",
        "--export=ALL,NCCL_ALGO=Ring,NCCL_IB_HCA==mlx5_0:1,NCCL_TESTS_SPLIT=MOD 8", *TEST_ARGS,
    ]  # fmt: skip


def test_srun_refuses_a_comma_inside_a_value() -> None:
    opts = NcclTestOptions("all_reduce_perf", env={"NCCL_IB_HCA": "mlx5_0,mlx5_1"})
    with pytest.raises(UsageError, match="comma"):
        srun_argv(opts, ["gpu-001"], 8)


def test_hostfile_text() -> None:
    assert hostfile_text(["gpu-001", "10.0.0.2"], 8) == "gpu-001 slots=8\n10.0.0.2 slots=8\n"
    with pytest.raises(UsageError, match="not a host name"):
        hostfile_text(["a b"], 8)
    with pytest.raises(UsageError):
        hostfile_text([], 8)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"binary": "all_reduce_perf; rm -rf /"},
        {"binary": "all_reduce_perf", "env": {"NCCL_DEBUG": "INFO\nrm -rf /"}},
        {"binary": "all_reduce_perf", "env": {"NCCL_DEBUG": "INFO\x00"}},
        {"binary": "all_reduce_perf", "env": {"nccl debug": "INFO"}},
        {"binary": "all_reduce_perf", "env": {"A=B": "C"}},
        {"binary": "all_reduce_perf", "env": {"NCCL_TESTS_SPLIT": "MOD 8; id"}},
        {"binary": "all_reduce_perf", "min_bytes": "8; id"},
        {"binary": "all_reduce_perf", "max_bytes": "-h"},
        {"binary": "all_reduce_perf", "op": "sum -d all"},
        {"binary": "all_reduce_perf", "datatype": "float64 x"},
        {"binary": "all_reduce_perf", "binary_dir": "/opt/nccl tests"},
        {"binary": "all_reduce_perf", "binary_dir": "/opt/$(id)"},
        {"binary": "all_reduce_perf", "iterations": -1},
    ],
)
def test_bad_options_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        NcclTestOptions(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("node", ["a b", "-w", "node;id", "node\n", ""])
def test_bad_nodes_are_refused(node: str) -> None:
    with pytest.raises(UsageError, match="not a node name"):
        srun_argv(NcclTestOptions("all_reduce_perf"), [node], 1)


@pytest.mark.parametrize("hostfile", ["-x", "/tmp/a b", "/tmp/x;id"])
def test_bad_hostfile_path_is_refused(hostfile: str) -> None:
    with pytest.raises(UsageError, match="hostfile"):
        mpirun_argv(NcclTestOptions("all_reduce_perf"), hostfile, 2)


def test_options_env_is_read_only() -> None:
    opts = _rail0()
    with pytest.raises(TypeError):
        opts.env["NCCL_ALGO"] = "Tree"  # type: ignore[index]
    assert rail_split_env(4) == {"NCCL_TESTS_SPLIT": "MOD 4"}
