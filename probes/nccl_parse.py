"""nccl-tests / rccl-tests output parser (``all_reduce_perf`` and friends).

Reads every table layout nccl-tests has printed (old ``error`` column with or without ``root``,
newer ``root`` + ``#wrong``, per-iteration and timestamp columns), the version and rank lines, the
summary lines, NCCL WARN completion errors, test failures and Open MPI launch failures. Pure: text
in, records out. Command lines live in :mod:`probes.nccl`, which re-exports this module's API.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from topology.errors import ParseError
from topology.textfile import read_input_text

# libibverbs enum ibv_wc_status, for NET/IB completion errors.
WC_STATUS = (
    "SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR", "WR_FLUSH_ERR",
    "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR", "REM_ACCESS_ERR", "REM_OP_ERR",
    "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR",
    "INV_EECN_ERR", "INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR",
)  # fmt: skip

# Linear patterns only: a free-text tail is taken whole and stripped in code ("(.*?)\s*$" retries
# its lazy group at every space of a long run: 4 s on a 32 KB line), and unanchored searches start
# only where a match can (at a word's start, at the one literal that opens it).
_VERSION_RE = re.compile(r"^#\s*nccl-tests version (?P<v>\S+)")
_STARTING_RE = re.compile(r"^#\s*Collective test (?P<what>starting|concluded): (?P<name>\S+)")
_PARAMS_RE = re.compile(r"^#\s*nThread\s")
_NCCL_VERSION_RE = re.compile(r"^#?\s*NCCL version (?P<v>\S+)")
_RCCL_VERSION_RE = re.compile(r"^\s*rccl-tests: Version (?P<v>\S+)")
_RANK_RE = re.compile(
    r"^#\s+Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+"
    r"(?P<host>\S+)\s+device\s+(?P<dev>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<gpu>.*)$"
)
_OOB_RE = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d+)\s*(?P<status>OK|FAILED)?")
_AVG_RE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<bw>\S+)\s*(?P<status>OK|FAILED)?")
_LOG_RE = re.compile(
    r"^(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] (?:(?P<loc>\S+) )?"
    r"NCCL (?P<level>WARN|INFO|TRACE|ABORT) ?(?P<msg>.*)$"
)
_COMPLETION_RE = re.compile(
    r"Got completion from peer (?P<peer>\S+?)(?:<(?P<port>\d+)>)? with (?:error |status=)(?P<status>\d+),?"
    r" opcode[= ](?P<opcode>\d+),? len[= ](?P<len>\d+),? vendor err (?P<vendor>\d+)(?: \((?P<dir>\w+)\))?"
    r"(?:.*?localGid (?P<lgid>\S+))?(?:.*?remoteGids?\s*(?P<rgid>\S+))?(?:.*?hca (?P<hca>\S+))?"
)
_CUDA_FAIL_RE = re.compile(r"^(?P<host>\S+): Test (?P<kind>CUDA|NCCL) failure (?P<loc>\S+) (?P<msg>.*)$")
_TIMEOUT_RE = re.compile(r"^(?P<host>\S+): Test timeout \((?P<secs>\d+)s\) (?P<loc>\S+)")
_TEST_FAIL_RE = re.compile(r"^\s*\.\.\s+(?P<host>\S+) pid (?P<pid>\d+): Test failure (?P<loc>\S+)")
_DASH_BANNER_RE = re.compile(r"^-{20,}\s*$")
_SLOTS_RE = re.compile(r"not enough slots available in the system to satisfy the (?P<n>\d+)\s+slots")
# Other launcher failures, reported as they are printed.
_LAUNCH_RE = re.compile(
    r"^(?:(?:mpirun|ORTE|PRTE) was unable to .*|srun: error: .*|.*mpirun: (?:command )?not found)"
)
_NOTICED = "mpirun noticed that process rank "
_NOTICED_RE = re.compile(r"mpirun noticed that process rank \d++ .* exited on signal .*")
_PARAM_RE = re.compile(r"\b(\w++(?: iters)?+):?\s++(\d++(?:\(\w++\))?+)")
_SIZE_WORD = re.compile(r"\bsize\b")
_COUNT_WORD = re.compile(r"\bcount\b")
_TIME_WORD = re.compile(r"\b(?:cpu)?time\b")


@dataclass(frozen=True, slots=True)
class NcclRank:
    rank: int
    group: int | None  # the NCCL_TESTS_SPLIT colour; absent in old outputs
    pid: int
    host: str
    device: int
    bus_id: str
    gpu: str  # empty in rccl-tests


@dataclass(frozen=True, slots=True)
class NcclTiming:
    time_us: float
    algbw: float  # GB/s
    busbw: float  # GB/s
    wrong: int | None = None  # '#wrong' column (None when printed N/A)
    max_error: float | None = None  # old 'error' column (None when printed N/A)


@dataclass(frozen=True, slots=True)
class NcclRow:
    size: int  # bytes
    count: int  # elements
    type: str
    redop: str  # '' where the column is blank (old alltoall)
    root: int | None  # -1 for unrooted collectives in the newer layout; None when no column
    out_of_place: NcclTiming
    in_place: NcclTiming


@dataclass(frozen=True, slots=True)
class CompletionError:
    """A ``NET/IB: Got completion from peer ... with error/status`` warning: the link to blame."""

    peer: str
    peer_port: int | None
    status: int
    opcode: int
    length: int
    vendor_err: int
    direction: str | None
    local_gid: str | None = None
    remote_gid: str | None = None
    hca: str | None = None

    @property
    def status_name(self) -> str:
        return f"IBV_WC_{WC_STATUS[self.status]}" if 0 <= self.status < len(WC_STATUS) else str(self.status)


@dataclass(frozen=True, slots=True)
class NcclWarn:
    host: str
    pid: int
    cuda_device: int
    location: str | None
    message: str
    completion: CompletionError | None


@dataclass(frozen=True, slots=True)
class NcclFailure:
    host: str
    kind: str  # "CUDA", "NCCL", "timeout" or "test" (the per-rank ' .. host pid N: Test failure')
    location: str
    message: str = ""
    pid: int | None = None


@dataclass(frozen=True, slots=True)
class NcclTestResult:
    source: str
    collective: str | None
    nccl_tests_version: str | None
    nccl_version: str | None
    rccl_tests_version: str | None
    params: tuple[tuple[str, str], ...]  # from '# nThread 1 nGpus 1 minBytes ...'
    ranks: tuple[NcclRank, ...]
    rows: tuple[NcclRow, ...]
    avg_busbw: float | None
    out_of_bounds: int | None
    warns: tuple[NcclWarn, ...]
    failures: tuple[NcclFailure, ...]
    launch_error: str | None
    notes: tuple[str, ...]
    ok: bool
    error: str | None

    @property
    def nranks(self) -> int | None:
        """Ranks in the job: highest listed rank + 1 (authors sometimes elide the middle of the list)."""
        return max(r.rank for r in self.ranks) + 1 if self.ranks else None

    @property
    def comm_size(self) -> int | None:
        """Ranks per communicator, the n of the busbw factor (smaller than nranks under NCCL_TESTS_SPLIT)."""
        groups = {r.group for r in self.ranks}
        if len(groups) > 1:
            return sum(1 for r in self.ranks if r.group == min(g or 0 for g in groups))
        return self.nranks

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.redop for r in self.rows if r.redop))

    @property
    def datatypes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.type for r in self.rows))

    @property
    def completion_errors(self) -> tuple[CompletionError, ...]:
        return tuple(w.completion for w in self.warns if w.completion is not None)

    def row(self, size: int) -> NcclRow:
        for r in self.rows:
            if r.size == size:
                return r
        raise KeyError(size)


def _number(text: str) -> float | None:
    return None if text == "N/A" else float(text)


def _timing(names: Sequence[str], values: Sequence[str]) -> NcclTiming:
    got = dict(zip(names, values, strict=True))
    wrong = _number(got["#wrong"]) if "#wrong" in got else None
    return NcclTiming(
        float(got.get("time", got.get("cputime", "nan"))),
        float(got["algbw"]),
        float(got["busbw"]),
        None if wrong is None else int(wrong),
        _number(got["error"]) if "error" in got else None,
    )


def _table_row(columns: Sequence[str], tokens: list[str]) -> NcclRow:
    """Split a row by the header. The timing columns on the right are always all there, so count
    them from the right; on the left a blank redop (old alltoall) is the one column that may be missing."""
    names = [c for c in columns if c != "timestamp"]
    if "timestamp" in columns:  # '%Y-%m-%d %H:%M:%S' is two tokens
        tokens = tokens[:-2]
    first_time = next(i for i, c in enumerate(names) if c in ("time", "cputime"))
    left, right = names[:first_time], names[first_time:]
    lt, rt = tokens[: -len(right)], tokens[-len(right) :]
    extra = left[3:]
    if len(lt) == len(left) - 1 and "redop" in extra:
        extra = [c for c in extra if c != "redop"]
    if len(rt) != len(right) or len(lt) != 3 + len(extra):
        raise ValueError(f"{len(tokens)} columns where the header has {len(names)}")
    got = dict(zip(extra, lt[3:], strict=True))
    half = len(right) // 2
    return NcclRow(
        int(lt[0]),
        int(lt[1]),
        lt[2],
        got.get("redop", ""),
        int(got["root"]) if "root" in got else None,
        _timing(right[:half], rt[:half]),
        _timing(right[half:], rt[half:]),
    )


def _completion(message: str) -> CompletionError | None:
    if (m := _COMPLETION_RE.search(message)) is None:
        return None
    return CompletionError(
        m["peer"],
        int(m["port"]) if m["port"] else None,
        int(m["status"]),
        int(m["opcode"]),
        int(m["len"]),
        int(m["vendor"]),
        m["dir"],
        m["lgid"],
        m["rgid"],
        m["hca"],
    )


def _error_line(
    launch_error: str | None,
    rows: list[NcclRow],
    oob: int | None,
    avg_failed: bool,
    warns: list[NcclWarn],
    failures: list[NcclFailure],
) -> str | None:
    """The one line an operator needs, most fundamental failure first."""
    if launch_error:
        return launch_error
    if hard := [f for f in failures if f.kind != "test"]:
        hosts = ", ".join(sorted({f.host for f in hard}))
        what = "Test timeout" if hard[0].kind == "timeout" else f"Test {hard[0].kind} failure"
        return (
            f"{hard[0].host}: {what} {hard[0].location} {hard[0].message} ({len(hard)} reports from {hosts})"
        )
    bad = [r for r in rows if (r.out_of_place.wrong or 0) > 0 or (r.in_place.wrong or 0) > 0]
    if (oob or 0) > 0 or bad:
        where = ", ".join(
            f"{r.size} B: #wrong {r.out_of_place.wrong} out-of-place, {r.in_place.wrong} in-place"
            for r in bad[:3]
        )
        found = f"{oob} out-of-bounds values" if oob else "wrong values"
        return f"data corruption: {found}" + (f" ({where})" if where else "")
    if completions := [(w, w.completion) for w in warns if w.completion is not None]:
        w, c = completions[0]
        hca = f" hca {c.hca}" if c.hca else ""
        return (
            f"{w.host}: NET/IB completion error from peer {c.peer}: {c.status_name} (status {c.status}), "
            f"vendor err {c.vendor_err}{hca} ({len(completions)} such warnings)"
        )
    if avg_failed:
        return "average bus bandwidth below the -G check value (FAILED)"
    if failures:
        return f"{failures[0].host}: Test failure {failures[0].location} ({len(failures)} ranks failed)"
    return None if rows else "no results table (the test stopped before printing results)"


def _launch_failure(line: str) -> str | None:
    """The launcher's failure said on ``line`` (the part of it to report), if it says one."""
    if m := _LAUNCH_RE.match(line):
        return m.group(0)
    at = line.find(_NOTICED)
    if at >= 0 and (m := _NOTICED_RE.match(line, at)):
        return m.group(0)  # from the first mention: a later one could match no more than it
    return None


def _table_header(line: str) -> bool:
    """The results header: the words size, count and (cpu)time in that order."""
    size = _SIZE_WORD.search(line)
    count = _COUNT_WORD.search(line, size.end()) if size else None
    return count is not None and _TIME_WORD.search(line, count.end()) is not None


def parse_nccl_tests(
    text: str | Iterable[str], source: str = "<nccl-tests>", binary: str | None = None
) -> NcclTestResult:
    """Parse nccl-tests / rccl-tests output, with the launcher's own lines around it.

    ``binary`` names the collective when the output does not (older versions print no
    'Collective test starting' line). Stray ``NCCL INFO`` lines inside the table are skipped. A row
    that does not fit the table header raises :class:`ParseError`, except a cut-off last line.
    A result is ``ok`` when it has rows, no #wrong or out-of-bounds values and no failure.
    """
    lines = [ln.rstrip("\r\n").rstrip() for ln in (text.splitlines() if isinstance(text, str) else text)]
    last_lineno = max((i for i, ln in enumerate(lines, 1) if ln.strip()), default=0)
    collective, tests_version, nccl_version, rccl_version, launch_error = binary, None, None, None, None
    params: dict[str, str] = {}
    ranks: list[NcclRank] = []
    rows: list[NcclRow] = []
    warns: list[NcclWarn] = []
    failures: list[NcclFailure] = []
    notes: list[str] = []
    columns: list[str] | None = None
    oob: int | None = None
    avg: float | None = None
    avg_failed = recognised = in_banner = False
    first_other: tuple[int, str] | None = None

    for lineno, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        if _DASH_BANNER_RE.match(line):  # Open MPI wraps its messages in dashed banners
            in_banner, recognised = not in_banner, True
            continue
        if m := _SLOTS_RE.search(" ".join(lines[lineno - 1 : lineno + 1])):
            launch_error = f"Open MPI: not enough slots for {m['n']} processes (check the hostfile's slots)"
        elif launched := _launch_failure(stripped):
            launch_error = launch_error or launched
        elif in_banner:
            continue
        elif m := _VERSION_RE.match(line):
            tests_version = m["v"]
        elif m := _STARTING_RE.match(line):
            collective = m["name"].rsplit("/", 1)[-1]
        elif _PARAMS_RE.match(line):
            params.update(_PARAM_RE.findall(line.lstrip("# ")))
        elif m := _NCCL_VERSION_RE.match(line):
            nccl_version = m["v"]
        elif m := _RCCL_VERSION_RE.match(line):
            rccl_version = m["v"]
        elif m := _RANK_RE.match(line):
            group = int(m["group"]) if m["group"] else None
            ranks.append(
                NcclRank(
                    int(m["rank"]),
                    group,
                    int(m["pid"]),
                    m["host"],
                    int(m["dev"]),
                    m["bus"],
                    m["gpu"].rstrip(),
                )
            )
        elif line.startswith("#") and _table_header(line):
            columns = line.lstrip("#").split()
        elif m := _OOB_RE.match(line):
            oob = int(m["n"])
        elif m := _AVG_RE.match(line):
            try:
                avg = float(m["bw"])
            except ValueError as exc:
                raise ParseError(
                    "nccl-tests", source, lineno, line, f"average bus bandwidth {m['bw']!r} is not a number"
                ) from exc
            avg_failed = m["status"] == "FAILED"
        elif line.startswith("#"):
            pass  # '# Using devices', '#', the out-of-place/in-place and unit lines
        elif m := _LOG_RE.match(line):
            if m["level"] in ("WARN", "ABORT"):
                msg = m["msg"].rstrip()
                warn = NcclWarn(m["host"], int(m["pid"]), int(m["dev"]), m["loc"], msg, _completion(msg))
                warns.append(warn)
        elif m := _CUDA_FAIL_RE.match(line):
            failures.append(NcclFailure(m["host"], m["kind"], m["loc"], m["msg"].rstrip()))
        elif m := _TIMEOUT_RE.match(line):
            failures.append(NcclFailure(m["host"], "timeout", m["loc"], f"after {m['secs']} s"))
        elif m := _TEST_FAIL_RE.match(line):
            failures.append(NcclFailure(m["host"], "test", m["loc"], "", int(m["pid"])))
        elif columns is not None and stripped.split()[0].isdigit():
            try:
                rows.append(_table_row(columns, stripped.split()))
            except (ValueError, KeyError, StopIteration) as exc:
                if lineno != last_lineno:
                    raise ParseError(
                        "nccl-tests", source, lineno, line, f"row does not fit the header ({exc})"
                    ) from exc
                notes.append(f"line {lineno}: incomplete last row dropped: {stripped}")
        else:
            notes.append(stripped)  # launcher lines: MACHINEFILE, ssh warnings, SLURM_* echoes
            first_other = first_other or (lineno, line)
            continue
        recognised = True

    if not recognised:
        lineno, line = first_other or (0, "")
        raise ParseError(
            "nccl-tests", source, lineno, line, "not nccl-tests output" if first_other else "empty output"
        )
    error = _error_line(launch_error, rows, oob, avg_failed, warns, failures)
    return NcclTestResult(
        source,
        collective,
        tests_version,
        nccl_version,
        rccl_version,
        tuple(params.items()),
        tuple(ranks),
        tuple(rows),
        avg,
        oob,
        tuple(warns),
        tuple(failures),
        launch_error,
        tuple(notes),
        error is None,
        error,
    )


def read_nccl_tests(path: str, binary: str | None = None) -> NcclTestResult:
    """Parse a saved nccl-tests output file (bounded, see :mod:`topology.textfile`)."""
    return parse_nccl_tests(read_input_text(path, "nccl-tests"), path, binary)
