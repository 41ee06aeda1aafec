"""perftest (``ib_write_bw``, ``ib_write_lat`` …): command lines and an output parser.

Pure: builds argv lists and reads text; running them is the transport's job.

>>> opts = PerftestOptions("ib_write_bw", device="mlx5_3", size=8388608, iterations=5000)
>>> client_argv(opts, "node-02")
['ib_write_bw', '-d', 'mlx5_3', '-s', '8388608', '-n', '5000', '-F', '--report_gbits', 'node-02']
>>> ratio_to_line_rate(386.5, 400.0)
0.96625
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from topology.errors import ParseError, UsageError
from topology.textfile import read_input_text

BANDWIDTH_TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw")
LATENCY_TOOLS = ("ib_write_lat", "ib_read_lat", "ib_send_lat")
TOOLS = BANDWIDTH_TOOLS + LATENCY_TOOLS

# An RDMA device (mlx5_3, ib0, rocep133s0f0) or a host: never a leading '-' (it would become an option)
# and nothing a shell could act on, should an argv ever be joined for ssh.
_DEVICE_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
_HOST_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*")

# perftest's "MB/sec" and "MiB/sec" are both 2**20 bytes per second (its --help says so).
_GBPS_PER_UNIT = {"MB/sec": 2**20 * 8 / 1e9, "MiB/sec": 2**20 * 8 / 1e9, "Gb/sec": 1.0}

# "<verb> [Bidirectional ][Post List ]BW|Latency Test" -> tool
_TITLE_RE = re.compile(
    r"^\s*(?P<verb>[A-Za-z_]+)(?: [A-Z_]+)?(?: Bidirectional)?(?: Post List)?"
    r" (?P<kind>BW|Latency)(?: forwarding)?(?: Multicast)? Test\s*$"
)
_VERB_TOOL = {
    "RDMA_Write": "write",
    "RDMA_Write_imm": "write",
    "RDMA_Read": "read",
    "Send": "send",
    "Send_imm": "send",
    "Atomic": "atomic",
}
_DASHES_RE = re.compile(r"^\s*-{20,}\s*$")
_STARS_RE = re.compile(r"^\s*\*.*\*\s*$")
_ADDRESS_RE = re.compile(r"^\s*(?P<side>local|remote) address:\s*(?P<rest>.*)$")
_GID_RE = re.compile(r"^\s*GID:\s*(?P<gid>\S+)\s*$")
# Header fields "Key : value" (several per line): see key_values. The characters a key is made of:
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.*/ -")
_COMMAND_RE = re.compile(r"^\s*[#$]\s*(?P<tool>ib_\w+)(?:\s|$)")
_CPUFREQ_RE = re.compile(r"Conflicting CPU frequency values detected|CPU Frequency is not max|cpufreq")
_WARNING_RE = re.compile(r"^\s*WARNING:\s*(?P<msg>.*)$")
# perftest writes its failures to stderr, almost all starting with one of these words, sometimes after
# "function_name: " (ethernet_read_keys: Couldn't read remote address).
_ERROR_RE = re.compile(
    r"^\s*(?:\w+: )?(?:Couldn't|Could not|Unable|Failed|failed|Did not detect|If device exists|Error|"
    r"Invalid|Problems? |Completion with error|Can't|Cannot|Bad |No such|Port \d+ is not|IB device)"
)
_COLUMN_RE = re.compile(
    r"#bytes|#sl|#iterations|BW peak\[[^\]]+\]|BW average\[[^\]]+\]|MsgRate\[Mpps\]|"
    r"BW Port\d\[[^\]]+\]|MsgRate Port\d\[Mpps\]|t_min\[usec\]|t_max\[usec\]|t_typical\[usec\]|"
    r"t_avg\[usec\]|t_stdev\[usec\]|99% percentile\[usec\]|99\.9% percentile\[usec\]|tps average|"
    r"CPU_Util\[%\]"
)
_NUMBER_RE = re.compile(r"^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")


def _check_device(name: str) -> str:
    if not _DEVICE_RE.fullmatch(name):
        raise UsageError(f"not an RDMA device name: {name!r} (expected something like mlx5_3)")
    return name


def check_host(name: str) -> str:
    """Return ``name`` if it is a plain host name or IP address; raise :class:`UsageError` otherwise."""
    try:
        ipaddress.ip_address(name)
        return name
    except ValueError:
        pass
    if len(name) > 253 or not _HOST_RE.fullmatch(name):
        raise UsageError(f"not a host name or IP address: {name!r}")
    return name


@dataclass(frozen=True, slots=True)
class PerftestOptions:
    """One perftest run, the same on both sides (perftest wants matching flags on server and client)."""

    tool: str
    device: str | None = None  # -d
    ib_port: int | None = None  # -i
    gid_index: int | None = None  # -x (RoCE)
    duration: int | None = None  # -D seconds
    size: int | None = None  # -s bytes
    all_sizes: bool = False  # -a (2 B .. 8 MiB)
    qps: int | None = None  # -q
    iterations: int | None = None  # -n
    tcp_port: int | None = None  # -p, the out-of-band exchange port (default 18515)
    report_gbits: bool = True  # --report_gbits; bandwidth tools only
    ignore_cpu_freq: bool = True  # -F: do not fail on an ondemand cpufreq governor
    bidirectional: bool = False  # -b; bandwidth tools only
    use_cuda: int | None = None  # --use_cuda=<gpu index> (GPUDirect)
    service_level: int | None = None  # -S
    mtu: int | None = None  # -m
    rdma_cm: bool = False  # -R

    def __post_init__(self) -> None:
        if self.tool not in TOOLS:
            raise UsageError(f"unknown perftest tool {self.tool!r}; expected one of {', '.join(TOOLS)}")
        if self.device is not None:
            _check_device(self.device)
        ranges = {
            "ib_port": (self.ib_port, 1, 255),
            "gid_index": (self.gid_index, 0, 255),
            "duration": (self.duration, 1, 86400),
            "size": (self.size, 1, 2**31),
            "qps": (self.qps, 1, 16384),
            "iterations": (self.iterations, 5, 10**9),
            "tcp_port": (self.tcp_port, 1, 65535),
            "use_cuda": (self.use_cuda, 0, 1023),
            "service_level": (self.service_level, 0, 15),
        }
        for name, (value, low, high) in ranges.items():
            if value is not None and not low <= value <= high:
                raise UsageError(f"perftest {name} must be in {low}..{high}, not {value}")
        if self.mtu is not None and self.mtu not in (256, 512, 1024, 2048, 4096):
            raise UsageError(f"perftest mtu must be 256, 512, 1024, 2048 or 4096, not {self.mtu}")
        if self.all_sizes and self.size is not None:
            raise UsageError("perftest: give either a size (-s) or all sizes (-a), not both")
        if self.duration is not None and (self.all_sizes or self.iterations is not None):
            raise UsageError("perftest: duration mode (-D) runs one size for a time, not -a or -n")
        if self.bidirectional and not self.is_bandwidth:
            raise UsageError(f"{self.tool} has no bidirectional mode (-b is for bandwidth tests)")

    @property
    def is_bandwidth(self) -> bool:
        return self.tool in BANDWIDTH_TOOLS


def _common_args(opts: PerftestOptions) -> list[str]:
    args: list[str] = []
    pairs = (
        ("-d", opts.device),
        ("-i", opts.ib_port),
        ("-x", opts.gid_index),
        ("-D", opts.duration),
        ("-s", opts.size),
        ("-q", opts.qps),
        ("-n", opts.iterations),
        ("-p", opts.tcp_port),
        ("-S", opts.service_level),
        ("-m", opts.mtu),
    )
    for flag, value in pairs:
        if value is not None:
            args += [flag, str(value)]
    if opts.all_sizes:
        args.append("-a")
    if opts.bidirectional:
        args.append("-b")
    if opts.rdma_cm:
        args.append("-R")
    if opts.ignore_cpu_freq:
        args.append("-F")
    if opts.report_gbits and opts.is_bandwidth:
        args.append("--report_gbits")
    if opts.use_cuda is not None:
        args.append(f"--use_cuda={opts.use_cuda}")
    return args


def server_argv(opts: PerftestOptions) -> list[str]:
    """argv for the listening side (start it first)."""
    return [opts.tool, *_common_args(opts)]


def client_argv(opts: PerftestOptions, server_host: str) -> list[str]:
    """argv for the connecting side; ``server_host`` is checked to be a plain host name or address."""
    return [opts.tool, *_common_args(opts), check_host(server_host)]


def ratio_to_line_rate(gbps: float, line_rate_gbps: float) -> float:
    """Measured bandwidth as a fraction of the link's data rate (0.93 is ClusterKit's 'bad' bar)."""
    if line_rate_gbps <= 0:
        raise UsageError(f"line rate must be positive, not {line_rate_gbps}")
    return gbps / line_rate_gbps


@dataclass(frozen=True, slots=True)
class BandwidthRow:
    bytes: int
    iterations: int
    bw_peak: float  # in ``unit``; perftest prints 0.00 when the peak was not measured
    bw_average: float
    unit: str  # as printed: "MB/sec", "MiB/sec" or "Gb/sec"
    msg_rate_mpps: float
    bw_peak_gbps: float
    bw_average_gbps: float
    service_level: int | None = None


@dataclass(frozen=True, slots=True)
class LatencyRow:
    bytes: int
    iterations: int
    t_min_us: float | None = None
    t_max_us: float | None = None
    t_typical_us: float | None = None
    t_avg_us: float | None = None
    t_stdev_us: float | None = None
    p99_us: float | None = None
    p999_us: float | None = None
    tps_average: float | None = None  # duration mode only


PerftestRow = BandwidthRow | LatencyRow


@dataclass(frozen=True, slots=True)
class QpAddress:
    """One ``local address:`` / ``remote address:`` line (the GID line of RoCE folded in)."""

    side: str
    lid: int | None
    qpn: int | None
    psn: int | None
    gid: str | None = None


@dataclass(frozen=True, slots=True)
class PerftestResult:
    source: str
    tool: str | None
    title: str | None
    header: tuple[tuple[str, str], ...]
    addresses: tuple[QpAddress, ...]
    rows: tuple[PerftestRow, ...]
    warnings: tuple[str, ...]
    errors: tuple[str, ...]
    notes: tuple[str, ...]  # lines kept for the operator but not understood (e.g. "Changing to active mtu")
    ok: bool
    error: str | None

    def field(self, key: str) -> str | None:
        return next((v for k, v in self.header if k == key), None)

    @property
    def device(self) -> str | None:
        return self.field("Device")

    @property
    def link_type(self) -> str | None:
        return self.field("Link type")

    @property
    def transport(self) -> str | None:
        return self.field("Transport type")

    @property
    def connection_type(self) -> str | None:
        return self.field("Connection type")

    @property
    def mtu(self) -> int | None:
        value = self.field("Mtu")
        head = value.split("[")[0] if value else ""
        return int(head) if head.isdigit() and len(head) <= 9 else None

    @property
    def qps(self) -> int | None:
        value = self.field("Number of qps")
        return int(value) if value and value.isdigit() and len(value) <= 9 else None

    @property
    def local_address(self) -> QpAddress | None:
        return next((a for a in self.addresses if a.side == "local"), None)

    @property
    def remote_address(self) -> QpAddress | None:
        return next((a for a in self.addresses if a.side == "remote"), None)

    @property
    def bandwidth_rows(self) -> tuple[BandwidthRow, ...]:
        return tuple(r for r in self.rows if isinstance(r, BandwidthRow))

    @property
    def latency_rows(self) -> tuple[LatencyRow, ...]:
        return tuple(r for r in self.rows if isinstance(r, LatencyRow))

    def row(self, size: int) -> PerftestRow:
        """The first row for message size ``size`` (KeyError if absent)."""
        for r in self.rows:
            if r.bytes == size:
                return r
        raise KeyError(size)


def _tool_from_title(verb: str, kind: str) -> str | None:
    short = _VERB_TOOL.get(verb)
    if short is None:
        return None
    return f"ib_{short}_{'bw' if kind == 'BW' else 'lat'}"


def _address(side: str, rest: str) -> QpAddress:
    tokens = rest.split()
    values = dict(zip(tokens[::2], tokens[1::2], strict=False))

    def num(key: str) -> int | None:
        try:
            return int(values[key], 16)
        except (KeyError, ValueError):
            return None

    return QpAddress(side, num("LID"), num("QPN"), num("PSN"))


def _row(columns: list[str], tokens: list[str]) -> PerftestRow:
    values = dict(zip(columns, tokens, strict=True))
    if any(c.startswith("BW average") for c in columns):
        average_col = next(c for c in columns if c.startswith("BW average"))
        peak_col = next((c for c in columns if c.startswith("BW peak")), average_col)
        unit = average_col[average_col.index("[") + 1 : -1]
        factor = _GBPS_PER_UNIT.get(unit)
        if factor is None:
            raise ValueError(f"unknown bandwidth unit {unit!r}")
        peak, average = float(values[peak_col]), float(values[average_col])
        if not (math.isfinite(peak) and math.isfinite(average)):
            raise ValueError("a bandwidth that is no finite number")
        return BandwidthRow(
            bytes=int(values["#bytes"]),
            iterations=int(float(values["#iterations"])),
            bw_peak=peak,
            bw_average=average,
            unit=unit,
            msg_rate_mpps=float(values.get("MsgRate[Mpps]", "nan")),
            bw_peak_gbps=peak * factor,
            bw_average_gbps=average * factor,
            service_level=int(values["#sl"]) if "#sl" in values else None,
        )

    def lat(key: str) -> float | None:
        return float(values[key]) if key in values else None

    return LatencyRow(
        bytes=int(values["#bytes"]),
        iterations=int(float(values["#iterations"])),
        t_min_us=lat("t_min[usec]"),
        t_max_us=lat("t_max[usec]"),
        t_typical_us=lat("t_typical[usec]"),
        t_avg_us=lat("t_avg[usec]"),
        t_stdev_us=lat("t_stdev[usec]"),
        p99_us=lat("99% percentile[usec]"),
        p999_us=lat("99.9% percentile[usec]"),
        tps_average=lat("tps average"),
    )


def key_values(line: str) -> list[tuple[str, str]]:
    """The ``Key : value`` pairs of a header line, in one pass over it.

    >>> key_values(" Number of qps   : 1\t\tTransport type : IB")
    [('Number of qps', '1'), ('Transport type', 'IB')]

    What ``re.findall(r"([A-Za-z][A-Za-z0-9_.*/ -]*?)\\s*:\\s*(\\S+)", line)`` finds (keys
    stripped), without its cost: that pattern retries its lazy key from every letter of a long run
    of key characters (2.8 s on a 16 KB line). Here each colon is looked at once: its key runs back
    over whitespace and key characters (never past the previous colon, which is not one) and starts
    at the first letter; its value is the word after it.
    """
    out: list[tuple[str, str]] = []
    end = len(line)
    pos = 0  # a key starts here or later: the end of the previous pair
    while (colon := line.find(":", pos)) >= 0:
        k = colon
        while k > pos and line[k - 1].isspace():
            k -= 1
        start = k
        while start > pos and line[start - 1] in _KEY_CHARS:
            start -= 1
        first = start
        while first < k and not (line[first].isascii() and line[first].isalpha()):
            first += 1
        if first == k:
            pos = colon + 1  # no key before this colon: the next pair starts after it
            continue
        v = colon + 1
        while v < end and line[v].isspace():
            v += 1
        w = v
        while w < end and not line[w].isspace():
            w += 1
        if w == v:
            break  # nothing but whitespace after the colon: no value, and no later colon
        out.append((line[first:k].strip(), line[v:w]))
        pos = w
    return out


def parse_perftest(
    text: str | Iterable[str], source: str = "<perftest>", tool: str | None = None
) -> PerftestResult:
    """Parse what a perftest tool printed (stdout, stderr, or both, in any mix).

    Server and client print the same report: the server's copy of a bandwidth row carries the
    numbers the client sent it. When both outputs end up in one text (concatenated, or interleaved
    line by line on a loopback run), a row whose every value equals a row already read is that copy
    and is dropped. Rows that repeat a size with other numbers (``--run_infinitely`` prints one per
    interval) are kept. The first value of a duplicated header field wins. A table that stops
    without its closing dashed line still yields every complete row; a partial last row goes to
    ``notes``. ``tool`` names the tool when the text has no title line (error-only output).
    """
    lines = text.splitlines() if isinstance(text, str) else [ln.rstrip("\n") for ln in text]
    title: str | None = None
    header: dict[str, str] = {}
    addresses: list[QpAddress] = []
    rows: list[PerftestRow] = []
    seen_rows: set[tuple[str, ...]] = set()
    warnings: list[str] = []
    errors: list[str] = []
    notes: list[str] = []
    columns: list[str] | None = None
    in_header = False
    recognised = False
    first_other: tuple[int, str] | None = None

    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\r")
        stripped = line.strip()
        if not stripped:
            continue
        if _DASHES_RE.match(line):
            in_header = False
            continue
        if _STARS_RE.match(line):  # "* Waiting for client to connect... *" banner
            recognised = True
            continue
        if m := _TITLE_RE.match(line):
            title = stripped
            tool = _tool_from_title(m["verb"], m["kind"]) or tool
            in_header = recognised = True
            continue
        if m := _COMMAND_RE.match(line):  # a pasted prompt line: "# ib_write_bw -d dev host"
            tool = tool or m["tool"]
            continue
        if m := _ADDRESS_RE.match(line):
            addresses.append(_address(m["side"], m["rest"]))
            recognised = True
            continue
        if (m := _GID_RE.match(line)) and addresses:
            last = addresses[-1]
            addresses[-1] = QpAddress(last.side, last.lid, last.qpn, last.psn, m["gid"])
            continue
        if "#bytes" in line:
            columns = _COLUMN_RE.findall(line)
            recognised = True
            continue
        if _CPUFREQ_RE.search(line):
            warnings.append(stripped)
            continue
        if m := _WARNING_RE.match(line):
            warnings.append(m["msg"].strip())
            continue
        if _ERROR_RE.match(line):
            if stripped not in errors:
                errors.append(stripped)
            continue
        tokens = stripped.split()
        if columns and all(_NUMBER_RE.match(t) for t in tokens):
            if len(tokens) != len(columns):
                notes.append(f"line {lineno}: incomplete row dropped: {stripped}")
                continue
            key = tuple(tokens)
            if key in seen_rows:
                continue
            seen_rows.add(key)
            try:
                rows.append(_row(columns, tokens))
            except (ValueError, OverflowError) as exc:
                raise ParseError(tool or "perftest", source, lineno, line, f"bad result row ({exc})") from exc
            continue
        # Header fields sit between the title and the table; with two interleaved outputs one side's
        # header can continue after the other side's dashed line, so any field before the table counts.
        if (in_header or columns is None) and (pairs := key_values(line)):
            for name, value in pairs:
                header.setdefault(name, value)
            if not in_header and first_other is None:
                first_other = (lineno, line)
            continue
        notes.append(stripped)
        if first_other is None:
            first_other = (lineno, line)

    if not (recognised or errors):
        lineno, line = first_other or (0, "")
        problem = "not perftest output" if first_other else "empty output"
        raise ParseError(tool or "perftest", source, lineno, line, problem)

    error: str | None = None
    if errors:
        error = "; ".join(errors)
    elif not rows:
        error = "no result rows (the run stopped before its results table)"
    return PerftestResult(
        source=source,
        tool=tool,
        title=title,
        header=tuple(header.items()),
        addresses=tuple(addresses),
        rows=tuple(rows),
        warnings=tuple(warnings),
        errors=tuple(errors),
        notes=tuple(notes),
        ok=error is None,
        error=error,
    )


def read_perftest(path: str, tool: str | None = None) -> PerftestResult:
    """Parse a saved perftest output file (bounded, see :mod:`topology.textfile`)."""
    return parse_perftest(read_input_text(path, tool or "perftest"), path, tool)
