"""Builds tests/data/nccl-forms/: nccl-tests outputs in the forms current nccl-tests and NCCL print,
made from their printf formats (no GPU machine was at hand to capture them; the README there says
which source version each file follows). ``python -m tests.ncclforms`` writes the files;
tests/probes/test_nccl_forms.py checks the committed files are exactly what this builds.

Formats (facts read from the sources, re-typed here):

* nccl-tests v2.19.6 ``src/util.cu``: the header (``# nccl-tests version %s nccl-headers=%d
  nccl-library=%d``, ``# Collective test starting: %s``, the ``# nThread ...`` line, ``# Using
  devices``, ``#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s``), the result
  header (``# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s``), a row in three
  writes (``%12li  %12li  %8s  %6s  %6s``, then twice ``  %7s  %6s  %6s  %6g`` with values cut to
  their width by getFloatStr, then the newline), the footer (``# %-20s : %d %s``, ``# %-20s : %g
  %s``, ``#``, ``# Collective test concluded: %s``, ``#``, then ``# error: %s`` or an empty line) and
  the JSON report (JSON_FILE_VERSION 3; version 1 of v2.17.6 with its ``bandwidith`` spelling):
  no spaces, doubles as ``%lf``, booleans as the strings ``"true"``/``"false"``, ``/`` escaped.
* NCCL v2.28.9-1 ``src/debug.cc``: ``host:pid:tid [dev] NCCL INFO msg``; a WARN is
  ``\\n[%F %T] host:pid:tid [dev] file:line NCCL WARN msg``; the message texts of ``init.cc``,
  ``bootstrap.cc``, ``transport/net_ib.cc``, ``transport/net_socket.cc``, ``transport/net.cc``,
  ``plugin/plugin_open.cc``, ``enqueue.cc`` (``AllGather: opCount %lx sendbuff %p ...``).
"""

# ruff: noqa: UP031  (C printf formats are the point: they are reproduced with % as nccl-tests writes them)
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

FORMS = Path(__file__).resolve().parent / "data" / "nccl-forms"
TESTS_VERSION = "2.19.6"
NCCL_CODE = 22809
NCCL_VERSION = "NCCL version 2.28.9+cuda13.0"
BUS_IDS = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)
GPU = "NVIDIA H100 80GB HBM3"


def float_str(value: float, width: int) -> str:
    """nccl-tests' getFloatStr: two decimals, then fewer, then an exponent, to fit ``width``."""
    for fmt in (f"%{width}.2f", f"%{width}.1f", f"%{width}.0f"):
        text = fmt % value
        if len(text) <= width:
            return text
    return (f"%{width}.1e" if width >= 7 else f"%{width}.0e") % value


def g(value: float) -> str:
    """C's %g."""
    return "%g" % value


@dataclass(frozen=True)
class Rank:
    rank: int
    host: str
    pid: int
    device: int


@dataclass(frozen=True)
class Measured:
    size: int
    count: int
    oop: tuple[float, float, float]  # time us, algbw, busbw
    ip: tuple[float, float, float]


def ranks_of(hosts: Sequence[str], per_host: int, pids: Sequence[int]) -> list[Rank]:
    return [
        Rank(h * per_host + d, host, pids[h] + d, d) for h, host in enumerate(hosts) for d in range(per_host)
    ]


def measure(
    sizes: Sequence[int], factor: float, peak_busbw: float, latency_us: float, word: int = 4
) -> list[Measured]:
    """Rows of a run whose busbw approaches ``peak_busbw`` (time = latency + size / algbw peak)."""
    out = []
    for i, size in enumerate(sizes):
        alg_peak = peak_busbw / factor if factor else peak_busbw
        t_oop = latency_us + size / (alg_peak * 1e3)
        t_ip = t_oop * (1.0 + 0.003 * math.sin(i + 1))
        rows = []
        for t in (t_oop, t_ip):
            alg = size / t / 1e3
            rows.append((t, alg, alg * factor))
        out.append(Measured(size, size // word, rows[0], rows[1]))
    return out


def header(
    binary: str, ranks: Sequence[Rank], min_b: int, max_b: int, iters: int, json_path: str | None
) -> str:
    text = f"# Writing JSON output to {json_path}\n" if json_path else ""
    text += f"# nccl-tests version {TESTS_VERSION} nccl-headers={NCCL_CODE} nccl-library={NCCL_CODE}\n"
    text += f"# Collective test starting: {binary}\n"
    text += (
        f"# nThread 1 nGpus 1 minBytes {min_b} maxBytes {max_b} step: 2(factor) warmup iters: 1 "
        f"iters: {iters} agg iters: 1 validation: 1 graph: 0 unalign: 0\n"
    )
    text += "#\n# Using devices\n"
    for r in ranks:
        text += "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s\n" % (
            r.rank, 0, r.pid, r.host, r.device, 0, BUS_IDS[r.device % 8], 0, GPU,
        )  # fmt: skip
    return text


def result_header() -> str:
    blank = ("", "", "", "", "")
    text = "#\n"
    text += (
        "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n"
        % blank
    )
    fmt = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %s\n"
    text += fmt % (
        "size",
        "count",
        "type",
        "redop",
        "root",
        "time",
        "algbw",
        "busbw",
        "#wrong",
        "time",
        "algbw",
        "busbw",
        "#wrong",
        "",
    )
    text += fmt % (
        "(B)",
        "(elements)",
        "",
        "",
        "",
        "(us)",
        "(GB/s)",
        "(GB/s)",
        "",
        "(us)",
        "(GB/s)",
        "(GB/s)",
        "",
        "",
    )
    return text


def preamble(m: Measured, type_name: str, op: str, root: int) -> str:
    return "%12li  %12li  %8s  %6s  %6s" % (m.size, m.count, type_name, op, "%6i" % root)


def body(t: tuple[float, float, float], wrong: int = 0) -> str:
    return "  %7s  %6s  %6s  %6s" % (float_str(t[0], 7), float_str(t[1], 6), float_str(t[2], 6), g(wrong))


def footer(binary: str, avg: float, error: str = "") -> str:
    text = "# %-20s : %d %s\n" % ("Out of bounds values", 0, "OK")
    text += "# %-20s : %s %s\n" % ("Avg bus bandwidth", g(avg), "")
    text += f"#\n# Collective test concluded: {binary}\n#\n"
    return text + (f"# error: {error}\n" if error else "\n")


def avg_busbw(rows: Sequence[Measured]) -> float:
    return sum(m.oop[2] + m.ip[2] for m in rows) / (2 * len(rows))


def info(r: Rank, tid: int, msg: str) -> str:
    return f"{r.host}:{r.pid}:{tid} [{r.device}] NCCL INFO {msg}\n"


def init_lines(ranks: Sequence[Rank], nodes: int, net: Callable[[Rank], list[str]]) -> str:
    """Each process's NCCL_DEBUG=INFO start-up lines (default subsystems INIT, BOOTSTRAP, ENV),
    process by process as mpirun forwards them."""
    text = ""
    per_node = len(ranks) // nodes
    for r in ranks:
        node = r.rank // per_node
        lines = [
            f"Bootstrap: Using ib0:10.10.0.{node + 1}<0>",
            "cudaDriverVersion 13000",
            NCCL_VERSION,
            "NET/Plugin: Could not find: libnccl-net.so",
            *net(r),
            f"comm 0x55d1c3a{r.rank:02x}2b0 rank {r.rank} nRanks {len(ranks)} nNodes {nodes} localRanks {per_node} "
            f"localRank {r.device} MNNVL 0",
            f"ncclCommInitRankConfig comm 0x55d1c3a{r.rank:02x}2b0 rank {r.rank} nranks {len(ranks)} cudaDev {r.device} "
            f"nvmlDev {r.device} busId {BUS_IDS[r.device]:x}000 commId 0x6b1f0e2c3d4a5b69 - Init COMPLETE",
        ]
        text += "".join(info(r, r.pid, m) for m in lines)
    return text


def ib_net(hcas: Sequence[str]) -> Callable[[Rank], list[str]]:
    def lines(r: Rank) -> list[str]:
        listed = "".join(f" [{i}]{h}:1/IB" for i, h in enumerate(hcas))
        node = r.host[-1]
        return [f"NET/IB : Using{listed} [RO]; OOB ib0:10.10.0.{node}<0>", "Using network IB"]

    return lines


def channel_lines(ranks: Sequence[Rank], transport: str, gdr: bool, hcas: int) -> str:
    """The network connections of each process (transport/net.cc), rank r to its peer on the other node."""
    text = ""
    n = len(ranks)
    half = n // 2
    for r in ranks:
        peer = (r.rank + half) % n
        dev = r.device % hcas
        suffix = "/GDRDMA" if gdr else ""
        for ch in (r.device, r.device + half):
            text += info(
                r,
                r.pid + 97,
                f"Channel {ch:02d}/0 : {peer}[{r.device}] -> {r.rank}[{r.device}] [receive] via NET/{transport}/{dev}{suffix}",
            )
            text += info(
                r,
                r.pid + 97,
                f"Channel {ch:02d}/0 : {r.rank}[{r.device}] -> {peer}[{r.device}] [send] via NET/{transport}/{dev}{suffix}",
            )
    return text


SIZES_1M_8G = [1 << k for k in range(20, 34)]
HOSTS = ("dgx-0001", "dgx-0002")
PIDS = (41822, 52110)
HCAS8 = tuple(f"mlx5_{i}" for i in range(8))


def _allreduce_run() -> tuple[list[Rank], list[Measured]]:
    ranks = ranks_of(HOSTS, 8, PIDS)
    return ranks, measure(SIZES_1M_8G, 2 * 15 / 16, 376.4, 58.0)


def ib_text() -> str:
    """2 nodes x 8 H100, 8 NDR HCAs each, NCCL_DEBUG=INFO, -J: healthy, over IB with GPUDirect RDMA."""
    ranks, rows = _allreduce_run()
    text = header(
        "all_reduce_perf", ranks, SIZES_1M_8G[0], SIZES_1M_8G[-1], 20, "/scratch/ibfab/ar-2nodes.json"
    )
    text += init_lines(ranks, 2, ib_net(HCAS8))
    text += channel_lines(ranks, "IB", True, 8)
    text += result_header()
    for m in rows:
        text += preamble(m, "float", "sum", -1) + body(m.oop) + body(m.ip) + "\n"
    return text + footer("all_reduce_perf", avg_busbw(rows))


def json_escape(text: str) -> str:
    out = ""
    for c in text:
        out += {'"': '\\"', "\\": "\\\\", "/": "\\/", "\t": "\\t", "\n": "\\n"}.get(c, c)
    return f'"{out}"'


def json_double(value: float) -> str:
    return '"nan"' if value != value else "%f" % value


def json_report(
    *,
    version: int,
    args: Sequence[str],
    env: Sequence[str],
    code: int,
    ranks: Sequence[Rank],
    rows: Sequence[Measured],
    min_b: int,
    max_b: int,
    iters: int,
    op: str,
    avg_key: tuple[str, str] = ("average_bus_bandwidth", "bandwidth"),
) -> str:
    s = "{" + f'"version":{version},"start_time":"2026-01-21 09:12:44"'
    s += ',"args":[' + ",".join(json_escape(a) for a in args) + "]"
    s += ',"env":[' + ",".join(json_escape(e) for e in env) + "]"
    s += f',"nccl_version":{code}'
    s += f',"config":{{"nthreads":1,"ngpus":1,"minimum_bytes":{min_b},"maximum_bytes":{max_b},"step_factor":2'
    s += f',"warmup_iters":1,"iterations":{iters},"aggregated_iterations":1,"validation":1,"graph":0'
    s += ',"blocking_collectives":"false"'
    if version >= 2:
        s += ',"per_iter_timing":"false"'
    if version >= 3:
        s += ',"per_iter_skip":0'
    s += ',"parallel_init":"false","devices":['
    s += ",".join(
        '{"rank":%d,"group":0,"pid":%d,"hostname":%s,"device":%d,"device_hex":"%04x:%02x:%02x","device_info":%s}'
        % (r.rank, r.pid, json_escape(r.host), r.device, 0, BUS_IDS[r.device % 8], 0, json_escape(GPU))
        for r in ranks
    )
    s += ']},"results":['
    parts = []
    for m in rows:
        halves = []
        for key, t in (("out_of_place", m.oop), ("in_place", m.ip)):
            halves.append(
                f'"{key}":{{"time":{json_double(t[0])},"alg_bw":{json_double(t[1])},"bus_bw":{json_double(t[2])},'
                f'"nwrong":{json_double(0.0)}}}'
            )
        parts.append(
            f'{{"size":{m.size},"count":{m.count},"type":"float","redop":{json_escape(op)},"root":"    -1",'
            + ",".join(halves)
            + ',"actual_iterations":%d,"experiment_name":""}' % iters
        )
    s += ",".join(parts) + "]"
    s += ',"out_of_bounds":{"count":0,"okay":"true"}'
    s += f',"{avg_key[0]}":{{"{avg_key[1]}":{json_double(avg_busbw(rows))},"okay":"unchecked"}}'
    s += ',"errors":[""],"end_time":"2026-01-21 09:13:58"}'
    return s


def ib_json() -> str:
    """The -J report of the run of :func:`ib_text`."""
    ranks, rows = _allreduce_run()
    return json_report(
        version=3,
        args=["/opt/nccl-tests/build/all_reduce_perf", "-b", "1M", "-e", "8G", "-f", "2", "-g", "1", "-J", "/scratch/ibfab/ar-2nodes.json"],
        env=["HOME=/root", "PATH=/usr/local/cuda/bin:/usr/bin:/bin", "NCCL_DEBUG=INFO", "OMPI_COMM_WORLD_RANK=0",
             "NCCL_SOCKET_IFNAME=ib0", "CUDA_HOME=/usr/local/cuda"],
        code=NCCL_CODE, ranks=ranks, rows=rows, min_b=SIZES_1M_8G[0], max_b=SIZES_1M_8G[-1], iters=20, op="sum",
    )  # fmt: skip


def socket_text() -> str:
    """The same job where NCCL found no IB device (a container without /dev/infiniband): it falls
    back to sockets over eth0 and still prints a full table, at socket speed."""
    ranks = ranks_of(HOSTS, 8, (40011, 50233))
    rows = measure(SIZES_1M_8G, 2 * 15 / 16, 2.91, 410.0)

    def net(r: Rank) -> list[str]:
        node = r.host[-1]
        return [
            "NET/IB : No device found.",
            f"NET/IB : Using ; OOB eth0:10.1.0.1{node}<0>",
            f"NET/Socket : Using [0]eth0:10.1.0.1{node}<0>",
            "Using network Socket",
        ]

    text = header("all_reduce_perf", ranks, SIZES_1M_8G[0], SIZES_1M_8G[-1], 20, None)
    text += init_lines(ranks, 2, net)
    text += channel_lines(ranks, "Socket", False, 1)
    text += result_header()
    for m in rows:
        text += preamble(m, "float", "sum", -1) + body(m.oop) + body(m.ip) + "\n"
    return text + footer("all_reduce_perf", avg_busbw(rows))


def four_hcas_text() -> str:
    """NCCL_IB_HCA left at four HCAs of eight: NCCL opens mlx5_0..3 only and the run reaches half
    the nodes' bandwidth. Rank 0's own async thread logs a WARN (a port error on mlx5_3) between a
    row's first columns and its timings, as NCCL writes it: a newline, a timestamp, then the line."""
    ranks = ranks_of(HOSTS, 8, (39120, 48807))
    rows = measure(SIZES_1M_8G, 2 * 15 / 16, 188.6, 58.0)
    hcas = HCAS8[:4]
    base = ib_net(hcas)

    def net(r: Rank) -> list[str]:
        return [f"NCCL_IB_HCA set to {','.join(hcas)}", *base(r)]

    text = header("all_reduce_perf", ranks, SIZES_1M_8G[0], SIZES_1M_8G[-1], 20, None)
    text += init_lines(ranks, 2, net)
    text += channel_lines(ranks, "IB", True, 4)
    text += result_header()
    r0 = ranks[0]
    warn = (
        f"\n[2026-01-21 09:14:03] {r0.host}:{r0.pid}:{r0.pid + 12} [0] transport/net_ib.cc:253 NCCL WARN "
        "NET/IB : mlx5_3:1 Got non-fatal async event: port error(10)\n"
    )
    for i, m in enumerate(rows):
        text += preamble(m, "float", "sum", -1) + (warn if i == 9 else "") + body(m.oop) + body(m.ip) + "\n"
    return text + footer(
        "all_reduce_perf", avg_busbw(rows), "NET/IB : mlx5_3:1 Got non-fatal async event: port error(10)"
    )


def coll_mid_row_text() -> str:
    """One GPU on host 'vm', NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL, -n 2: every collective call
    logs a line, and they land inside the rows: after a row's first columns and after its
    out-of-place timings (one process: one stdout buffer, so in exactly that order)."""
    r = Rank(0, "vm", 1299, 0)
    sizes = [1 << k for k in range(0, 7)]  # -b 1 -e 64: 1 and 2 bytes are 0 floats
    rows = []
    for i, size in enumerate(sizes):
        count = size // 4
        t = 4.21 - 0.03 * i
        rows.append(
            Measured(
                count * 4, count, (t, count * 4 / t / 1e3, 0.0), (t - 0.16, count * 4 / (t - 0.16) / 1e3, 0.0)
            )
        )
    op_count = [0]

    def coll(count: int) -> str:
        line = info(
            r,
            r.pid,
            f"AllGather: opCount {op_count[0]:x} sendbuff 0x7f3e9a000000 recvbuff 0x7f3e9a200000 count {count} datatype 7 op 0 root 0 comm 0x55f0a1c4e2b0 [nranks=1] stream 0x55f0a1b31f20",
        )
        op_count[0] += 1
        return line

    text = header("all_gather_perf", [r], 1, 64, 2, None)
    text += info(r, r.pid, "Bootstrap: Using eth0:192.168.122.15<0>")
    text += info(r, r.pid, NCCL_VERSION)
    text += info(r, r.pid, "NET/Plugin: Could not find: libnccl-net.so")
    text += info(r, r.pid, "NET/IB : No device found.")
    text += info(r, r.pid, "NET/IB : Using ; OOB eth0:192.168.122.15<0>")
    text += info(r, r.pid, "NET/Socket : Using [0]eth0:192.168.122.15<0>")
    text += info(r, r.pid, "Using network Socket")
    text += info(r, r.pid, "comm 0x55f0a1c4e2b0 rank 0 nRanks 1 nNodes 1 localRanks 1 localRank 0 MNNVL 0")
    text += result_header()
    for size in sizes:  # warm-up: one call per power of two
        text += coll(size // 4)
    for m in rows:
        text += preamble(m, "float", "none", -1) + coll(m.count) + coll(m.count) + coll(m.count)
        text += body(m.oop) + coll(m.count) + coll(m.count) + coll(m.count) + body(m.ip) + "\n"
    return text + footer("all_gather_perf", 0.0)


def no_mpi_text() -> str:
    """nccl-tests built without MPI=1, started by mpirun -np 2 on two nodes: each process runs alone
    as rank 0 of one and prints a table of its own (all_reduce of one rank: busbw 0)."""
    text = ""
    sizes = [1 << k for k in range(20, 25)]
    for host, pid in zip(HOSTS, (61001, 61877), strict=True):
        r = Rank(0, host, pid, 0)
        rows = measure(sizes, 0.0, 812.0, 6.0)
        rows = [Measured(m.size, m.count, (m.oop[0], m.oop[1], 0.0), (m.ip[0], m.ip[1], 0.0)) for m in rows]
        text += header("all_reduce_perf", [r], sizes[0], sizes[-1], 20, None)
        text += result_header()
        for m in rows:
            text += preamble(m, "float", "sum", -1) + body(m.oop) + body(m.ip) + "\n"
        text += footer("all_reduce_perf", 0.0)
    return text


def tagged_text() -> str:
    """:func:`ib_text`'s run under ``mpirun --tag-output``: every line tagged ``[1,R]<stdout>:``
    by the rank that wrote it (rank 0 the table, each rank its own NCCL lines)."""
    out = []
    for line in ib_text().splitlines(keepends=True):
        rank = 0
        if " NCCL INFO " in line:
            host, pid = line.split(":", 2)[:2]
            base = PIDS[HOSTS.index(host)]
            rank = HOSTS.index(host) * 8 + (int(pid) - base)
        out.append(f"[1,{rank}]<stdout>:{line}")
    return "".join(out)


def v1_json() -> str:
    """A JSON report of nccl-tests 2.17.6 (JSON_FILE_VERSION 1, the 'bandwidith' spelling): a
    per-rail reduce_scatter, one rank per node on mlx5_0 (NCCL_IB_HCA from ibfab's --per-rail)."""
    ranks = [Rank(0, HOSTS[0], 30412, 0), Rank(1, HOSTS[1], 30977, 0)]
    sizes = [1 << k for k in range(26, 31)]
    rows = measure(sizes, 0.5, 46.9, 24.0)
    return json_report(
        version=1,
        args=["/opt/nccl-tests/build/reduce_scatter_perf", "-b", "64M", "-e", "1G", "-f", "2", "-J", "rs.json"],
        env=["NCCL_IB_HCA==mlx5_0", "CUDA_VISIBLE_DEVICES=0", "SLURM_JOB_ID=81734", "API_TOKEN=not-kept"],
        code=22807, ranks=ranks, rows=rows, min_b=sizes[0], max_b=sizes[-1], iters=20, op="sum",
        avg_key=("average_bus_bandwidith", "bandwidith"),
    )  # fmt: skip


BUILDERS: dict[str, Callable[[], str]] = {
    "all_reduce_perf-2nodes-16xH100-ib-info.txt": ib_text,
    "all_reduce_perf-2nodes-16xH100-ib-info.json": ib_json,
    "all_reduce_perf-2nodes-16xH100-ib-info-tag-output.txt": tagged_text,
    "all_reduce_perf-2nodes-16xH100-socket-fallback.txt": socket_text,
    "all_reduce_perf-2nodes-16xH100-4-of-8-hcas-warn-mid-row.txt": four_hcas_text,
    "all_gather_perf-1gpu-vm-coll-info-mid-row.txt": coll_mid_row_text,
    "all_reduce_perf-no-mpi-2-processes-each-alone.txt": no_mpi_text,
    "reduce_scatter_perf-2nodes-per-rail-v1.json": v1_json,
}


def main() -> None:
    FORMS.mkdir(parents=True, exist_ok=True)
    for name, build in BUILDERS.items():
        (FORMS / name).write_text(build(), encoding="utf-8")
        print(FORMS / name)


if __name__ == "__main__":
    main()
