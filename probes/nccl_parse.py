"""nccl-tests / rccl-tests output parser (``all_reduce_perf`` and friends).

Reads every table layout nccl-tests has printed (old ``error`` column with or without ``root``,
newer ``root`` + ``#wrong``, per-iteration and timestamp columns), the version and rank lines, the
summary lines, NCCL WARN completion errors, test failures and Open MPI launch failures. Pure: text
in, records out. Command lines live in :mod:`probes.nccl`, which re-exports this module's API.

NCCL's log (``NCCL_DEBUG=INFO``) may land anywhere, in the middle of a row too
(:mod:`probes.nccl_log`): it is kept apart from the rows, counted, its WARNs kept and what it says
about the network read (:mod:`probes.nccl_env`); a row cut by it is put back together. Launcher
line tags (Open MPI ``--tag-output``'s ``[1,0]<stdout>:``, ``srun --label``'s ``0: ``) are
dropped. Output where every process printed a table of its own (nccl-tests built without MPI,
started N times) is said to be so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from probes.nccl_env import EnvironmentReader, NcclEnvironment
from probes.nccl_log import NcclLogLine, split_log
from probes.nccl_rows import NcclRow, NcclTiming, RowAssembler, numeric_piece, table_row
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
_VERSION_RE = re.compile(
    r"^#\s*nccl-tests version (?P<v>\S+)(?: nccl-headers=(?P<headers>\d{1,9}))?(?: nccl-library=(?P<library>\d{1,9}))?"
)
_STARTING_RE = re.compile(r"^#\s*Collective test (?P<what>starting|concluded): (?P<name>\S+)")
_PARAMS_RE = re.compile(r"^#\s*nThread\s")
_NCCL_VERSION_RE = re.compile(r"^#?\s*NCCL version (?P<v>\S+)")
_RCCL_VERSION_RE = re.compile(r"^\s*rccl-tests: Version (?P<v>\S+)")
_RANK_RE = re.compile(
    r"^#\s+Rank\s+(?P<rank>\d{1,9})(?:\s+Group\s+(?P<group>\d{1,9}))?\s+Pid\s+(?P<pid>\d{1,9})\s+on\s+"
    r"(?P<host>\S+)\s+device\s+(?P<dev>\d{1,9})\s+\[(?P<bus>[^\]]*)\]\s*(?P<gpu>.*)$"
)
_OOB_RE = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d{1,18})\s*(?P<status>OK|FAILED)?")
_AVG_RE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<bw>\S+)\s*(?P<status>OK|FAILED)?")
# Launchers' line tags: Open MPI --tag-output '[1,0]<stdout>:' (or <stderr>), srun --label ' 12: '.
_TAG_RE = re.compile(r"^(?:\[\d{1,9},\d{1,9}\]<std(?:out|err)>: ?|\s{0,9}\d{1,9}: )")
_USING_DEVICES = "# Using devices"
NO_ENVIRONMENT = NcclEnvironment()  # outputs without NCCL's log
_COMPLETION_RE = re.compile(
    r"Got completion from peer (?P<peer>\S+?)(?:<(?P<port>\d{1,9})>)? with (?:error |status=)(?P<status>\d{1,9}),?"
    r" opcode[= ](?P<opcode>\d{1,12}),? len[= ](?P<len>\d{1,12}),? vendor err (?P<vendor>\d{1,12})(?: \((?P<dir>\w+)\))?"
    r"(?:.*?localGid (?P<lgid>\S+))?(?:.*?remoteGids?\s*(?P<rgid>\S+))?(?:.*?hca (?P<hca>\S+))?"
)
_CUDA_FAIL_RE = re.compile(r"^(?P<host>\S+): Test (?P<kind>CUDA|NCCL) failure (?P<loc>\S+) (?P<msg>.*)$")
_TIMEOUT_RE = re.compile(r"^(?P<host>\S+): Test timeout \((?P<secs>\d+)s\) (?P<loc>\S+)")
_TEST_FAIL_RE = re.compile(r"^\s*\.\.\s+(?P<host>\S+) pid (?P<pid>\d{1,9}): Test failure (?P<loc>\S+)")
_DASH_BANNER_RE = re.compile(r"^-{20,}\s*$")
_SLOTS_RE = re.compile(r"not enough slots available in the system to satisfy the (?P<n>\d+)\s+slots")
# Other launcher failures, reported as they are printed.
_LAUNCH_RE = re.compile(
    r"^(?:(?:mpirun|ORTE|PRTE) was unable to .*|srun: error: .*|.*mpirun: (?:command )?not found)"
)
# srun's word that a rank ended with an exit code: that it failed, not why (its own lines say why).
_TASK_EXIT_RE = re.compile(r"srun: error: \S+: tasks? [\d,-]+: Exited with exit code \d+$")
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
    environment: NcclEnvironment = NO_ENVIRONMENT
    nccl_headers: int | None = None  # NCCL_VERSION_CODE nccl-tests was built with (22809: 2.28.9)
    nccl_library: int | None = None  # the NCCL it ran with
    separate_runs: int = 1  # tables printed by processes that each ran alone
    form: str = "text"  # "text" or "json" (the -J report)

    @property
    def nranks(self) -> int | None:
        """Ranks in the job: highest listed rank + 1 (authors sometimes elide the middle of the list)."""
        return max(r.rank for r in self.ranks) + 1 if self.ranks else None

    @property
    def hosts(self) -> tuple[str, ...]:
        """The hosts of the listed ranks, in rank order."""
        return tuple(dict.fromkeys(r.host for r in sorted(self.ranks, key=lambda r: r.rank)))

    @property
    def ranks_per_host(self) -> int | None:
        """Ranks on each host when every host has the same number (the usual launch), else None."""
        counts = {sum(1 for r in self.ranks if r.host == h) for h in self.hosts}
        return counts.pop() if len(counts) == 1 and self.nranks == len(self.ranks) else None

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


def completion(message: str) -> CompletionError | None:
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


def error_line(
    launch_error: str | None,
    rows: list[NcclRow],
    oob: int | None,
    avg_failed: bool,
    warns: list[NcclWarn],
    failures: list[NcclFailure],
) -> str | None:
    """The one line an operator needs, most fundamental failure first."""
    if launch_error and not (failures and _TASK_EXIT_RE.match(launch_error)):
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


def _strip_tag(line: str) -> str:
    """The line without the launcher's tag (``[1,0]<stdout>:``, ``srun --label``'s ``12: ``)."""
    m = _TAG_RE.match(line)
    return line[m.end() :] if m else line


def _separate_runs_error(runs: int, ranks: Sequence[NcclRank]) -> str:
    return (
        f"{runs} separate nccl-tests runs in one output: each process ran alone as rank 0 of its own "
        f"({len(ranks)} device lines; nccl-tests built without MPI=1, or started {runs} times by the launcher)"
    )


def parse_nccl_tests(
    text: str | Iterable[str], source: str = "<nccl-tests>", binary: str | None = None
) -> NcclTestResult:
    """Parse nccl-tests / rccl-tests output, with the launcher's own lines around it.

    ``binary`` names the collective when the output does not (older versions print no
    'Collective test starting' line). NCCL's log lines are taken out of the table wherever they
    are (their WARNs kept, their INFO lines counted and read for the network). A row that does not
    fit the table header raises :class:`ParseError`, except a cut-off last row. A result is ``ok``
    when it has rows, no #wrong or out-of-bounds values and no failure.
    """
    lines = [ln.rstrip("\r\n").rstrip() for ln in (text.splitlines() if isinstance(text, str) else text)]
    collective, tests_version, nccl_version, rccl_version, launch_error = binary, None, None, None, None
    headers_code: int | None = None
    library_code: int | None = None
    params: dict[str, str] = {}
    ranks: list[NcclRank] = []
    rows: list[NcclRow] = []
    warns: list[NcclWarn] = []
    failures: list[NcclFailure] = []
    notes: list[str] = []
    env = EnvironmentReader()
    known: set[str] = set()  # host:pid of processes whose log lines start a line
    table = RowAssembler()
    bad_rows: list[ParseError] = []
    oob: int | None = None
    avg: float | None = None
    tables = 0
    avg_failed = recognised = in_banner = False
    first_other: tuple[int, str] | None = None

    def row_error(lineno: int, row: str, problem: str) -> None:
        bad_rows.append(
            ParseError("nccl-tests", source, lineno, row, f"row does not fit the header ({problem})")
        )

    def take_row(lineno: int) -> None:
        words = table.complete()
        if words is None:
            return
        try:
            rows.append(table_row(table.columns or [], words))
        except (ValueError, KeyError, StopIteration, OverflowError) as exc:
            row_error(table.lineno, " ".join(words), str(exc))

    def take_log(log: NcclLogLine, lineno: int) -> None:
        if log.level in ("WARN", "ABORT"):
            warns.append(
                NcclWarn(
                    log.host, log.pid, log.device or 0, log.location, log.message, completion(log.message)
                )
            )
        else:
            env.add(log, lineno)

    def add_piece(piece: str, lineno: int) -> None:
        if broken := table.add(piece, lineno):
            row_error(
                broken[0], broken[1], f"{len(broken[1].split())} columns where a row has {table.needed}"
            )

    for lineno, raw in enumerate(lines, 1):
        line = _strip_tag(raw)
        piece, log = split_log(line, known) if "NCCL " in line else (line, None)
        if log is not None:
            recognised = True
            take_log(log, lineno)
            if not piece.strip():
                known.add(log.process)
                continue
            if table.pieces or table.starts_row(piece):  # a row's text, then NCCL's log
                add_piece(piece, lineno)
                table.cut = True
                continue
            line = piece
        stripped = line.strip()
        if not stripped:
            continue
        if not line.startswith("#") and table.continues(line):
            add_piece(line, lineno)
            take_row(lineno)
            recognised = True
            continue
        if table.pieces:  # a row left incomplete by a line that is no row
            notes.append(f"line {table.lineno}: incomplete row dropped: {table.drop()}")
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
            headers_code = int(m["headers"]) if m["headers"] else headers_code
            library_code = int(m["library"]) if m["library"] else library_code
        elif m := _STARTING_RE.match(line):
            collective = m["name"].rsplit("/", 1)[-1]
        elif _PARAMS_RE.match(line):
            params.update(_PARAM_RE.findall(line.lstrip("# ")))
        elif m := _NCCL_VERSION_RE.match(line):
            nccl_version = m["v"]
        elif m := _RCCL_VERSION_RE.match(line):
            rccl_version = m["v"]
        elif line.startswith(_USING_DEVICES):
            tables += 1
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
            table.header(line)
        elif m := _OOB_RE.match(line):
            oob = int(m["n"]) + (oob or 0) if tables > 1 else int(m["n"])
        elif m := _AVG_RE.match(line):
            try:
                avg = float(m["bw"])
            except ValueError as exc:
                raise ParseError(
                    "nccl-tests", source, lineno, line, f"average bus bandwidth {m['bw']!r} is not a number"
                ) from exc
            avg_failed = m["status"] == "FAILED"
        elif line.startswith("# error: "):
            notes.append(f"NCCL's last error: {stripped[9:]}")
        elif line.startswith("#"):
            pass  # '#', the out-of-place/in-place and unit lines, '# Writing JSON output to ...'
        elif m := _CUDA_FAIL_RE.match(line):
            failures.append(NcclFailure(m["host"], m["kind"], m["loc"], m["msg"].rstrip()))
        elif m := _TIMEOUT_RE.match(line):
            failures.append(NcclFailure(m["host"], "timeout", m["loc"], f"after {m['secs']} s"))
        elif m := _TEST_FAIL_RE.match(line):
            failures.append(NcclFailure(m["host"], "test", m["loc"], "", int(m["pid"])))
        elif table.starts_row(line) or (table.columns is not None and stripped.split()[0].isdigit()):
            add_piece(line, lineno)
            take_row(lineno)
        else:
            notes.append(stripped)  # launcher lines: MACHINEFILE, ssh warnings, SLURM_* echoes
            first_other = first_other or (lineno, line)
            continue
        recognised = True

    if table.pieces:
        notes.append(f"line {table.lineno}: incomplete last row dropped: {table.drop()}")
    environment = env.result()
    nccl_version = nccl_version or environment.nccl_version
    separate = tables if tables > 1 and sum(1 for r in ranks if r.rank == 0) > 1 else 1
    if bad_rows and separate == 1:
        raise bad_rows[0]
    notes += [e.one_line() for e in bad_rows]
    if not recognised:
        lineno, line = first_other or (0, "")
        raise ParseError(
            "nccl-tests", source, lineno, line, "not nccl-tests output" if first_other else "empty output"
        )
    if separate > 1:
        error: str | None = _separate_runs_error(separate, ranks)
    else:
        error = error_line(launch_error, rows, oob, avg_failed, warns, failures)
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
        environment,
        headers_code,
        library_code,
        separate,
    )


def read_nccl_tests(path: str, binary: str | None = None) -> NcclTestResult:
    """Parse a saved nccl-tests output file (bounded, see :mod:`topology.textfile`)."""
    return parse_nccl_tests(read_input_text(path, "nccl-tests"), path, binary)


__all__ = [
    "WC_STATUS",
    "CompletionError",
    "NcclFailure",
    "NcclRank",
    "NcclRow",
    "NcclTestResult",
    "NcclTiming",
    "NcclWarn",
    "completion",
    "error_line",
    "numeric_piece",
    "parse_nccl_tests",
    "read_nccl_tests",
]
