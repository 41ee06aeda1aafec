"""``ibfab probe read FILE...``: saved nccl-tests (text or its -J JSON report) and ib_write_bw
outputs judged as a live run is: *healthy* (exit 0), *failed* (exit 4: nccl-tests or perftest
said it failed, the network was wrong, or the bandwidth is low against the fabric) or
*unreadable* (exit 3: not the output of either tool).

Which tool wrote a file is read from the file: a JSON object is an nccl-tests report; a perftest
title (``RDMA_Write BW Test``) or its ``#bytes`` header is perftest; otherwise it is read as
nccl-tests, and, if it is not that, as perftest (whose error-only outputs have no title). Each
file is judged alone; one unreadable file does not stop the others.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from probes.expect import SLOW_RATIO
from probes.labtraffic import PERFTEST_EFFICIENCY
from probes.nccl_json import parse_nccl_json
from probes.nccl_judge import NcclJudgement, judge_run
from probes.nccl_model import FabricFacts
from probes.nccl_parse import parse_nccl_tests
from probes.perftest import PerftestResult, parse_perftest
from topology.errors import IbfabError, ParseError
from topology.textfile import read_input_text

# A perftest title ('RDMA_Write BW Test'), its table header, or its command line pasted as a prompt.
_PERFTEST_MARK = re.compile(
    r"^\s*\S+(?: \S+)* (?:BW|Latency) Test\s*$|#bytes|^\s*[#$]\s*ib_[a-z_]+(?:\s|$)", re.M
)
HEALTHY, FAILED, UNREADABLE = "healthy", "failed", "unreadable"


class ProbeRunFailed(IbfabError):
    """A saved run judged failed (exit 4, as a live probe that failed)."""

    exit_code = 4


class ProbeUnreadable(IbfabError):
    """A saved file that is no probe output ibfab reads (exit 3, as any input that does not parse)."""

    exit_code = 3


@dataclass(frozen=True)
class PerftestJudgement:
    """A perftest run: its own verdict, and its best bandwidth against the line rate when known."""

    result: PerftestResult
    line_rate_gbps: float | None
    best_gbps: float | None  # the best average bandwidth over its sizes
    bar_gbps: float | None  # slow under this: 93 % (ClusterKit) of what ib_write_bw reaches (97 %)

    @property
    def slow(self) -> bool:
        return self.best_gbps is not None and self.bar_gbps is not None and self.best_gbps < self.bar_gbps

    @property
    def failed(self) -> bool:
        return not self.result.ok or self.slow


@dataclass(frozen=True)
class ProbeReading:
    path: str
    tool: str | None  # 'nccl-tests', 'nccl-tests JSON', perftest's tool ('ib_write_bw'); None unread
    nccl: NcclJudgement | None = None
    perftest: PerftestJudgement | None = None
    error: str | None = None  # why it could not be read

    @property
    def state(self) -> str:
        if self.nccl is None and self.perftest is None:
            return UNREADABLE
        failed = (
            self.nccl.failed if self.nccl is not None else self.perftest is not None and self.perftest.failed
        )
        return FAILED if failed else HEALTHY


@dataclass(frozen=True)
class ReadReport:
    readings: tuple[ProbeReading, ...]
    facts: FabricFacts | None

    @property
    def outcome(self) -> IbfabError | None:
        """The error the command ends with: unreadable files first (exit 3), then failed runs (exit 4)."""
        bad = [r for r in self.readings if r.state == UNREADABLE]
        if bad:
            return ProbeUnreadable(f"{len(bad)} of {len(self.readings)} file(s) unreadable: {bad[0].error}")
        failed = [r for r in self.readings if r.state == FAILED]
        if failed:
            names = ", ".join(r.path for r in failed[:3]) + (" ..." if len(failed) > 3 else "")
            return ProbeRunFailed(f"{len(failed)} of {len(self.readings)} run(s) failed: {names}")
        return None


def _perftest(result: PerftestResult, line_rate_gbps: float | None) -> PerftestJudgement:
    rows = result.bandwidth_rows
    best = max((r.bw_average_gbps for r in rows), default=None)
    bar = line_rate_gbps * PERFTEST_EFFICIENCY * SLOW_RATIO if line_rate_gbps else None
    return PerftestJudgement(result, line_rate_gbps, best, bar)


def read_probe(
    path: str,
    facts: FabricFacts | None = None,
    *,
    expect_ib: bool | None = None,
    collective: str | None = None,
    hosts: Sequence[str] | None = None,
    nranks: int | None = None,
    line_rate_gbps: float | None = None,
) -> ProbeReading:
    """Read and judge one saved output (see the module docstring); never raises for its content."""
    try:
        text = read_input_text(path, "probe output")
    except ParseError as exc:
        return ProbeReading(path, None, error=exc.one_line())
    name = collective or _binary_in(path)
    try:
        if text.lstrip().startswith("{"):
            result = parse_nccl_json(text, path, name)
        elif _PERFTEST_MARK.search(text):
            pt = parse_perftest(text, path)
            return ProbeReading(path, pt.tool or "perftest", perftest=_perftest(pt, line_rate_gbps))
        else:
            try:
                result = parse_nccl_tests(text, path, name)
            except ParseError as nccl_error:
                try:
                    pt = parse_perftest(text, path)
                except ParseError:
                    raise nccl_error from None
                return ProbeReading(path, pt.tool or "perftest", perftest=_perftest(pt, line_rate_gbps))
    except ParseError as exc:
        return ProbeReading(path, None, error=exc.one_line())
    judgement = judge_run(result, facts, expect_ib=expect_ib, collective=name, hosts=hosts, nranks=nranks)
    return ProbeReading(path, "nccl-tests JSON" if result.form == "json" else "nccl-tests", nccl=judgement)


def _binary_in(path: str) -> str | None:
    """The nccl-tests binary a file's name mentions (``all_reduce_perf-2nodes.log``), for outputs
    that do not name their collective (older nccl-tests)."""
    from probes.nccl import BINARIES

    base = path.rsplit("/", 1)[-1]
    return next((b for b in BINARIES if b in base), None)


def read_probes(
    paths: Sequence[str],
    facts: FabricFacts | None = None,
    *,
    expect_ib: bool | None = None,
    collective: str | None = None,
    hosts: Sequence[str] | None = None,
    nranks: int | None = None,
    line_rate_gbps: float | None = None,
) -> ReadReport:
    """Every file read and judged (see :func:`read_probe`)."""
    readings = tuple(
        read_probe(
            p, facts, expect_ib=expect_ib, collective=collective, hosts=hosts, nranks=nranks,
            line_rate_gbps=line_rate_gbps,
        )
        for p in paths
    )  # fmt: skip
    return ReadReport(readings, facts)


__all__ = [
    "FAILED",
    "HEALTHY",
    "UNREADABLE",
    "PerftestJudgement",
    "ProbeReading",
    "ProbeRunFailed",
    "ProbeUnreadable",
    "ReadReport",
    "read_probe",
    "read_probes",
]
