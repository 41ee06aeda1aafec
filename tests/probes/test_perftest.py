"""perftest command lines and output parser, against every real capture and the real binary."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from probes.perftest import (
    BandwidthRow,
    LatencyRow,
    PerftestOptions,
    client_argv,
    parse_perftest,
    ratio_to_line_rate,
    read_perftest,
    server_argv,
)
from probes.runner import run
from tests.conftest import realdata_files
from topology.errors import ParseError, UsageError

TOOLS = ("ib_write_bw", "ib_read_bw", "ib_write_lat", "ib_send_lat")
CAPTURES = [path for tool in TOOLS for path in realdata_files(tool)]


@dataclass(frozen=True)
class Expected:
    """Values read by eye from the capture."""

    rows: int
    ok: bool = True
    device: str | None = None
    link_type: str | None = None
    mtu: int | None = None
    error_has: tuple[str, ...] = ()
    size: int | None = None  # a row to check
    values: dict[str, float] = field(default_factory=dict)  # attribute -> value for that row
    warnings: int = 0
    local_lid: int | None = None
    remote_lid: int | None = None


EXPECTED: dict[str, Expected] = {
    "perftest-issue132-client-modify-qp-rts-error.txt": Expected(
        0, ok=False, error_has=("Failed to modify QP to RTS", "Unable to Connect the HCA's through the link")
    ),
    "perftest-issue132-server-rdmacm-read-keys-error.txt": Expected(
        0, ok=False, error_has=("Couldn't read remote address", "Unable to read to socket/rdma_cm")
    ),
    "perftest-pr228-couldnt-connect-socket-error.txt": Expected(
        0, ok=False, error_has=("Couldn't connect to 192.168.125.211:18515", "Unable to init the socket")
    ),
    "stmatengss-cx3-qdr-a-sweep-MBsec-docker.txt": Expected(
        23,
        device="mlx4_0",
        link_type="IB",
        mtu=2048,
        size=1048576,
        values={"bw_peak": 0.0, "bw_average": 3662.96, "msg_rate_mpps": 0.003663, "iterations": 50000},
        local_lid=0x03,
        remote_lid=0x0A,
    ),
    "superbench-loopback-8M-hdr-server-client-concat.txt": Expected(
        1,
        device="ib0",
        link_type="IB",
        mtu=4096,
        size=8388608,
        values={"bw_peak": 24056.74, "bw_average": 24056.72, "msg_rate_mpps": 0.003007, "iterations": 20000},
        local_lid=0xD06,
        remote_lid=0xD06,
    ),
    "superbench-loopback-all-sizes-interleaved.txt": Expected(
        23,
        device="ib0",
        link_type="IB",
        mtu=4096,
        size=8192,
        values={"bw_peak": 18620.51, "bw_average": 12782.56, "msg_rate_mpps": 1.636168, "iterations": 2000},
        local_lid=0xD06,
        remote_lid=0xD06,
    ),
    "stmatengss-cx3-qdr-a-sweep-outstand-reads.txt": Expected(
        23,
        device="mlx4_0",
        link_type="IB",
        mtu=2048,
        size=16384,
        values={"bw_peak": 0.0, "bw_average": 3690.47, "msg_rate_mpps": 0.236190},
        local_lid=0x03,
        remote_lid=0x0A,
    ),
    "stmatengss-cx3-qdr-a-sweep.txt": Expected(
        23,
        device="mlx4_0",
        link_type="IB",
        mtu=2048,
        size=4096,
        values={
            "t_min_us": 3.56,
            "t_max_us": 49.03,
            "t_typical_us": 3.74,
            "t_avg_us": 3.80,
            "t_stdev_us": 0.29,
            "p99_us": 4.16,
            "p999_us": 8.70,
        },
        local_lid=0x03,
        remote_lid=0x0A,
    ),
    "stmatengss-cx3-qdr-a-sweep-cpufreq-warnings.txt": Expected(
        23,
        device="mlx4_0",
        link_type="IB",
        mtu=2048,
        size=8388608,
        warnings=45,
        values={
            "t_min_us": 2239.42,
            "t_max_us": 4189.77,
            "t_typical_us": 2247.02,
            "t_avg_us": 2252.46,
            "t_stdev_us": 65.03,
            "p99_us": 2287.38,
            "p999_us": 3761.26,
        },
        local_lid=0x03,
        remote_lid=0x0A,
    ),
}


def test_every_capture_has_expectations() -> None:
    assert CAPTURES, "no perftest captures found under tests/data/realdata"
    assert {p.name for p in CAPTURES} == set(EXPECTED)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_capture(path: Path) -> None:
    tool = path.parent.name
    result = read_perftest(str(path), tool=tool)
    want = EXPECTED[path.name]
    assert result.tool == tool
    assert result.ok is want.ok
    assert len(result.rows) == want.rows
    assert len(result.warnings) == want.warnings
    if want.ok:
        assert result.error is None
        assert result.device == want.device
        assert result.link_type == want.link_type
        assert result.mtu == want.mtu
        assert result.qps == 1
        assert result.connection_type == "RC"
        assert result.transport == "IB"
        assert result.local_address is not None and result.local_address.lid == want.local_lid
        assert result.remote_address is not None and result.remote_address.lid == want.remote_lid
        sizes = [r.bytes for r in result.rows]
        assert len(sizes) == len(set(sizes)), "a size appears twice: the other side's copy was kept"
        assert sizes == sorted(sizes)
    else:
        assert result.error is not None and "\n" not in result.error
        for text in want.error_has:
            assert text in result.error
    if want.size is not None:
        row = result.row(want.size)
        for name, value in want.values.items():
            assert getattr(row, name) == pytest.approx(value), name
    kind = LatencyRow if tool.endswith("_lat") else BandwidthRow
    assert all(isinstance(r, kind) for r in result.rows)


def test_bandwidth_units_convert_to_gbps() -> None:
    [path] = [p for p in CAPTURES if p.name == "superbench-loopback-8M-hdr-server-client-concat.txt"]
    row = read_perftest(str(path)).bandwidth_rows[0]
    assert row.unit == "MB/sec"
    # perftest's MB is 2**20 bytes: 24056.72 MiB/s is 201.8 Gb/s on this HDR loopback
    assert row.bw_average_gbps == pytest.approx(24056.72 * 2**20 * 8 / 1e9)
    assert row.bw_average_gbps == pytest.approx(201.80, abs=0.01)
    gbit = parse_perftest(
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
        " 8388608    5000             392.71             392.63               0.005850\n",
        "gbits",
    ).bandwidth_rows[0]
    assert (gbit.unit, gbit.bw_average_gbps, gbit.bw_peak_gbps) == ("Gb/sec", 392.63, 392.71)


def test_interleaved_output_keeps_each_size_once() -> None:
    [path] = [p for p in CAPTURES if p.name == "superbench-loopback-all-sizes-interleaved.txt"]
    result = read_perftest(str(path))
    assert [r.bytes for r in result.rows] == [2**k for k in range(1, 24)]
    row = result.row(8388608)
    assert isinstance(row, BandwidthRow) and row.bw_average == pytest.approx(23240.68)
    assert result.field("ibv_wr* API") == "ON"
    assert result.notes == ()


def test_truncated_table_keeps_complete_rows() -> None:
    [path] = [p for p in CAPTURES if p.name == "stmatengss-cx3-qdr-a-sweep-MBsec-docker.txt"]
    text = path.read_text()
    assert not text.rstrip().endswith("-" * 20)  # the capture itself has no closing dashed line
    cut = text.rstrip()[:-20]  # cut the last row in the middle
    result = parse_perftest(cut, "cut")
    assert len(result.rows) == 22
    assert result.rows[-1].bytes == 4194304
    assert any("incomplete row" in n for n in result.notes)


def test_repeated_size_with_new_numbers_is_kept() -> None:
    text = (
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
        " 65536      1000             90.10              90.00                0.171\n"
        " 65536      1000             91.10              91.00                0.173\n"
        " 65536      1000             91.10              91.00                0.173\n"
    )
    rows = parse_perftest(text, "infinite").bandwidth_rows
    assert [r.bw_average for r in rows] == [90.0, 91.0]


@pytest.mark.parametrize("text", ["hello world\nthis is not perftest\n", "# Avg bus bandwidth : 1.0\n"])
def test_other_text_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_perftest(text, "notes.txt")
    assert info.value.source == "notes.txt"
    assert info.value.lineno == 1
    assert "notes.txt:1" in str(info.value)


def test_empty_output_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="empty output"):
        parse_perftest("", "empty")


def test_bidirectional_roce_output() -> None:
    text = (
        "                    RDMA_Write Bidirectional BW Test\n"
        " Dual-port       : OFF\t\tDevice         : mlx5_2\n"
        " Number of qps   : 4\t\tTransport type : IB\n"
        " Link type       : Ethernet\n"
        " GID index       : 3\n"
        "-" * 87 + "\n"
        " local address: LID 0000 QPN 0x0108 PSN 0x1b5ed4 RKey 0x178e00 VAddr 0x007f4a0c800000\n"
        " GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:168:01:02\n"
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
        " 65536      5000             180.12             179.85               0.343\n"
    )
    result = parse_perftest(text, "roce")
    assert (result.tool, result.qps, result.link_type, result.field("GID index")) == (
        "ib_write_bw", 4, "Ethernet", "3",
    )  # fmt: skip
    assert result.local_address is not None
    assert result.local_address.gid == "00:00:00:00:00:00:00:00:00:00:255:255:192:168:01:02"
    assert result.local_address.qpn == 0x0108
    assert result.bandwidth_rows[0].bw_average_gbps == 179.85


def test_header_only_is_not_ok() -> None:
    text = "                    RDMA_Write BW Test\n Dual-port       : OFF\t\tDevice         : mlx5_0\n"
    result = parse_perftest(text, "header-only")
    assert (result.ok, result.device, result.rows) == (False, "mlx5_0", ())
    assert result.error is not None and "no result rows" in result.error


# --- command lines -----------------------------------------------------------------------------


def test_client_and_server_argv_exact() -> None:
    opts = PerftestOptions(
        "ib_write_bw", device="mlx5_3", ib_port=1, gid_index=3, size=8388608, qps=4, iterations=5000,
        tcp_port=18600, bidirectional=True, use_cuda=2,
    )  # fmt: skip
    common = ["-d", "mlx5_3", "-i", "1", "-x", "3", "-s", "8388608", "-q", "4", "-n", "5000", "-p", "18600",
              "-b", "-F", "--report_gbits", "--use_cuda=2"]  # fmt: skip
    assert server_argv(opts) == ["ib_write_bw", *common]
    assert client_argv(opts, "gpu-node-17.cluster") == ["ib_write_bw", *common, "gpu-node-17.cluster"]
    assert client_argv(opts, "10.0.0.7")[-1] == "10.0.0.7"
    assert client_argv(opts, "fe80::1")[-1] == "fe80::1"


def test_latency_argv_has_no_bandwidth_flags() -> None:
    opts = PerftestOptions("ib_write_lat", device="mlx5_0", all_sizes=True, ignore_cpu_freq=False)
    assert server_argv(opts) == ["ib_write_lat", "-d", "mlx5_0", "-a"]


def test_duration_mode_argv() -> None:
    opts = PerftestOptions("ib_read_bw", device="ib0", duration=10, size=65536, report_gbits=False)
    assert client_argv(opts, "node1") == ["ib_read_bw", "-d", "ib0", "-D", "10", "-s", "65536", "-F", "node1"]


@pytest.mark.parametrize("device", ["mlx5_0; rm -rf /", "mlx5_0 -a", "-h", "", "mlx5_0\n", "$(reboot)"])
def test_bad_device_is_refused(device: str) -> None:
    with pytest.raises(UsageError, match="not an RDMA device name"):
        PerftestOptions("ib_write_bw", device=device)


@pytest.mark.parametrize("host", ["a b", "-p", "node;reboot", "node\n", "", "`id`", "a..b", "x" * 300])
def test_bad_host_is_refused(host: str) -> None:
    with pytest.raises(UsageError, match="not a host name"):
        client_argv(PerftestOptions("ib_write_bw"), host)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tool": "ib_write_bw; id"},
        {"tool": "ib_write_bw", "size": 64, "all_sizes": True},
        {"tool": "ib_write_bw", "duration": 5, "iterations": 100},
        {"tool": "ib_write_bw", "duration": 5, "all_sizes": True},
        {"tool": "ib_write_lat", "bidirectional": True},
        {"tool": "ib_write_bw", "iterations": 2},
        {"tool": "ib_write_bw", "mtu": 1500},
        {"tool": "ib_write_bw", "tcp_port": 70000},
    ],
)
def test_inconsistent_options_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        PerftestOptions(**kwargs)  # type: ignore[arg-type]


def test_ratio_to_line_rate() -> None:
    assert ratio_to_line_rate(372.0, 400.0) == pytest.approx(0.93)
    with pytest.raises(UsageError):
        ratio_to_line_rate(100.0, 0.0)


# --- the real binary on this machine (no RDMA devices) -------------------------------------------


@pytest.mark.skipif(shutil.which("ib_write_bw") is None, reason="perftest is not installed")
def test_real_ib_write_bw_without_devices() -> None:
    opts = PerftestOptions("ib_write_bw", device="mlx5_0", size=65536, iterations=100)
    done = run(server_argv(opts), check=False, timeout=30)
    assert done.exit_code == 1
    assert done.stdout == ""
    result = parse_perftest(done.stdout + done.stderr, "local ib_write_bw", tool="ib_write_bw")
    assert result.ok is False
    assert result.rows == ()
    assert result.error is not None and "\n" not in result.error
    assert "Did not detect devices" in result.error
    assert "Unable to find the Infiniband/RoCE device" in result.error
