"""Run nccl-tests through a launcher on a head host: plan the runs, write the hostfile, launch, parse.

The head host is reached through a function ``run(argv, timeout) -> CommandResult`` (over SSH in
``fabric.app.sweeps.nccl``), so this module never connects itself. With ``mpirun`` the hostfile is written
to the head host first (a fresh ``/tmp/ibfab-nccl-*.hosts``, refused if it exists) and removed
afterwards; with ``srun`` the node list goes on the command line.

Three ways to run:

* all GPUs of every node at once (``gpus_per_node`` ranks per node): busbw per NIC is the
  reported busbw over the NICs per node (one NIC per GPU, rail-optimized);
* ``split``: the same ranks with ``NCCL_TESTS_SPLIT="MOD g"`` (:func:`probes.nccl.rail_split_env`):
  one communicator per GPU index, so every communicator's traffic crosses the network on its own
  rail, all rails at once; the reported busbw is one communicator's, i.e. one NIC's;
* ``per_rail``: one run per rail ``r``, one rank per node on GPU ``r`` (``CUDA_VISIBLE_DEVICES``)
  with ``NCCL_IB_HCA==<rail r's HCA>`` (exact name), so a slow rail shows up by itself.

A run that fails is a record with the one line that says why (the launcher's, NCCL's, or the
exit code); nothing is reported as measured unless nccl-tests printed a clean results table.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from probes.nccl import (
    NcclTestOptions,
    NcclTestResult,
    hostfile_text,
    mpirun_argv,
    parse_nccl_tests,
    rail_split_env,
    srun_argv,
)
from probes.transport import CommandResult
from topology.errors import ParseError, UsageError

RunOnHead = Callable[[Sequence[str], float], CommandResult]
LAUNCHERS = ("mpirun", "srun")
# NVIDIA (nccl-tests#290): NDR 400 Gb/s reaches 46-48 GB/s busbw per NIC, i.e. 92-96 % of line rate.
EXPECTED_FRACTION = (0.92, 0.96)
BELOW_EXPECTATION_FRACTION = 0.90
_DASHES = re.compile(r"^-{20,}\s*$")


@dataclass(frozen=True, slots=True)
class NcclJob:
    """One launch: ``label`` is ``all``, ``split`` or ``rail R (HCA)``."""

    label: str
    rail: int | None
    hca: str | None
    argv: tuple[str, ...]
    nics_per_node: int  # how many NICs the reported busbw is spread over


@dataclass(frozen=True, slots=True)
class NcclPlan:
    launcher: str
    hosts: tuple[str, ...]
    binary: str
    jobs: tuple[NcclJob, ...]
    hostfile_path: str | None  # mpirun: where the hostfile goes on the head host
    hostfile: str | None  # its text


@dataclass(frozen=True, slots=True)
class NcclRun:
    """What one launch did. ``result`` is None when the output was not nccl-tests output."""

    job: NcclJob
    exit_code: int | None
    output: str  # stdout, then stderr after a marker line: what the store keeps
    result: NcclTestResult | None
    error: str | None
    started: float
    seconds: float

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def busbw_per_nic(self) -> float | None:
        """Average busbw (GB/s) per NIC, when the run succeeded."""
        if not self.ok or self.result is None or self.result.avg_busbw is None:
            return None
        return self.result.avg_busbw / self.job.nics_per_node


def default_rail_hcas(gpus_per_node: int) -> tuple[str, ...]:
    """``mlx5_0 .. mlx5_{g-1}``: rail r on HCA r (give the real list for a DGX H100's mlx5_0,3,4,...)."""
    return tuple(f"mlx5_{r}" for r in range(gpus_per_node))


def plan_nccl(
    hosts: Sequence[str],
    opts: NcclTestOptions,
    *,
    launcher: str = "mpirun",
    gpus_per_node: int = 8,
    per_rail: bool = False,
    split: bool = False,
    rail_hcas: Sequence[str] | None = None,
    mpirun: str = "mpirun",
    allow_run_as_root: bool = False,
    hostfile_path: str | None = None,
    mpi: str | None = "pmix",
    request_gpus: bool = True,
) -> NcclPlan:
    """The launches for one request (see the module docstring)."""
    if launcher not in LAUNCHERS:
        raise UsageError(f"launcher must be one of {', '.join(LAUNCHERS)}, not {launcher!r}")
    if not hosts:
        raise UsageError("nccl-tests needs at least one host")
    if per_rail and split:
        raise UsageError("choose one of --per-rail and --split")
    rail_split_env(gpus_per_node)  # checks the range
    hcas = tuple(rail_hcas) if rail_hcas else default_rail_hcas(gpus_per_node)
    if per_rail and len(hcas) != gpus_per_node:
        raise UsageError(f"--rail-hcas names {len(hcas)} HCAs for {gpus_per_node} GPUs per node")
    path = None
    text = None
    if launcher == "mpirun":
        path = hostfile_path or f"/tmp/ibfab-nccl-{secrets.token_hex(6)}.hosts"
        text = hostfile_text(hosts, 1 if per_rail else gpus_per_node)

    def argv(o: NcclTestOptions, per_node: int) -> tuple[str, ...]:
        if launcher == "srun":
            # GPUs are a generic resource in Slurm; a cluster without GPU GRES refuses the request.
            gpus = gpus_per_node if request_gpus else None
            return tuple(srun_argv(o, hosts, per_node, mpi=mpi, gpus_per_node=gpus))
        assert path is not None
        return tuple(
            mpirun_argv(
                o,
                path,
                per_node * len(hosts),
                procs_per_node=per_node,
                mpirun=mpirun,
                allow_run_as_root=allow_run_as_root,
            )
        )

    jobs: list[NcclJob] = []
    if per_rail:
        for r, hca in enumerate(hcas):
            env = {**opts.env, "NCCL_IB_HCA": f"={hca}", "CUDA_VISIBLE_DEVICES": str(r)}
            jobs.append(NcclJob(f"rail {r} ({hca})", r, hca, argv(replace(opts, env=env), 1), 1))
    elif split:
        env = {**opts.env, **rail_split_env(gpus_per_node)}
        jobs.append(NcclJob("split", None, None, argv(replace(opts, env=env), gpus_per_node), 1))
    else:
        jobs.append(NcclJob("all", None, None, argv(opts, gpus_per_node), gpus_per_node))
    return NcclPlan(launcher, tuple(hosts), opts.binary, tuple(jobs), path, text)


def _combined(r: CommandResult) -> str:
    if not r.stderr:
        return r.stdout
    return f"{r.stdout}\n# --- stderr (exit {r.exit_code})\n{r.stderr}"


UNPARSABLE = "output not understood"
_SHOWN = 200  # characters of a line quoted in an error (a 10 MB line is not repeated)


def _cut(line: str) -> str:
    return line if len(line) <= _SHOWN else f"{line[:_SHOWN]}... ({len(line)} characters)"


def _last_line(text: str) -> str:
    return _cut(next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), ""))


_STEPD_ERROR = re.compile(r"^slurmstepd(?:-\S+)?: error: .+$", re.M)
_SRUN_TASK_EXIT = re.compile(r"srun: error: \S+: tasks? [\d,-]+: Exited with exit code \d+")


def _explain(r: CommandResult) -> str:
    """Why a launch printed no results: the first line of an Open MPI banner (it says what it
    refused or could not do), else what slurmstepd said on a node (srun's own last line is only
    "task N: Exited with exit code 2"), else the last line on stderr or stdout, else the exit code."""
    lines = f"{r.stdout}\n{r.stderr}".splitlines()
    for i, line in enumerate(lines):
        if _DASHES.match(line):
            first = next((ln.strip() for ln in lines[i + 1 :] if ln.strip()), "")
            if first and not _DASHES.match(first):
                return _cut(first)
    stepd = _STEPD_ERROR.search(r.stderr)
    if stepd:
        return _cut(stepd.group(0).strip())
    return _last_line(r.stderr) or _last_line(r.stdout) or f"exit {r.exit_code} with no output"


def _whole_sentence(line: str, text: str) -> str:
    """Open MPI wraps one sentence over several lines; the parser keeps the first."""
    lines = [ln.strip() for ln in text.splitlines()]
    if line not in lines or not line.startswith(("mpirun", "ORTE", "PRTE")):
        return line
    i = lines.index(line)
    parts = [line]
    while not parts[-1].endswith(".") and i + 1 < len(lines) and lines[i + 1] and len(parts) < 4:
        i += 1
        if _DASHES.match(lines[i]):
            break
        parts.append(lines[i])
    joined = " ".join(parts)
    end = joined.find(". ")
    return joined if end < 0 else joined[: end + 1]


def judge(job: NcclJob, r: CommandResult, binary: str, started: float) -> NcclRun:
    """Parse one launch's output into a run record (never raises for bad output)."""
    result: NcclTestResult | None = None
    error: str | None
    try:
        result = parse_nccl_tests(f"{r.stdout}\n{r.stderr}", f"{job.label} on {r.host}", binary)
    except ParseError as exc:
        # exit 0 with text that is not nccl-tests': say so, rather than blame the launcher
        error = _explain(r) if r.exit_code != 0 else f"{UNPARSABLE}: {exc.one_line()}"
    else:
        error = result.error
        quiet = not (result.rows or result.warns or result.failures or result.launch_error)
        if quiet and r.exit_code != 0:  # the parser can only say 'no results table'
            error = _explain(r)
        elif error is None and r.exit_code != 0:
            error = f"exit {r.exit_code} after the results table: {_last_line(r.stderr) or 'no message'}"
    if error is not None and result is not None and error == result.launch_error:
        error = _whole_sentence(error, f"{r.stdout}\n{r.stderr}")
        stepd = _STEPD_ERROR.search(r.stderr)
        if stepd and _SRUN_TASK_EXIT.match(error):  # srun says only that a task ended; slurmstepd says why
            error = stepd.group(0).strip()
    if error is not None:
        # mpirun's own line hides the reason ssh gave for not reaching a node
        hint = next((ln.strip() for ln in r.stderr.splitlines() if ln.startswith("ssh: ")), None)
        if hint and hint not in error:
            error = f"{error} ({hint})"
    if r.failure is not None:
        error = f"{r.failure.value}: {r.message}"
    return NcclRun(job, r.exit_code, _combined(r), result, error, started, r.duration)


def run_nccl(run: RunOnHead, plan: NcclPlan, timeout: float = 1800.0) -> list[NcclRun]:
    """Write the hostfile (mpirun), run every job on the head host, remove the hostfile."""
    runs: list[NcclRun] = []
    if plan.hostfile_path is not None:
        assert plan.hostfile is not None
        # noclobber: never overwrite a file someone else put there
        write = ["sh", "-c", 'set -C; printf "%s" "$1" > "$2"', "sh", plan.hostfile, plan.hostfile_path]
        res = run(write, 30.0)
        if res.exit_code != 0:
            raise UsageError(
                f"cannot write the hostfile {plan.hostfile_path} on {res.host}: {_last_line(res.stderr) or res.message}"
            )
    try:
        for job in plan.jobs:
            start = time.time()
            runs.append(judge(job, run(job.argv, timeout), plan.binary, start))
    finally:
        if plan.hostfile_path is not None:
            run(["rm", "-f", plan.hostfile_path], 30.0)
    return runs


def expectation(line_rate_gbps: float) -> tuple[float, float, float]:
    """(low, high, floor) busbw in GB/s per NIC for a link of ``line_rate_gbps``: the range NVIDIA
    quotes (46-48 GB/s at NDR 400 Gb/s) and the 90 % floor under which a run is below expectation.

    >>> expectation(400.0)
    (46.0, 48.0, 45.0)
    """
    line = line_rate_gbps / 8.0
    low, high = EXPECTED_FRACTION
    return round(line * low, 2), round(line * high, 2), round(line * BELOW_EXPECTATION_FRACTION, 2)


__all__ = [
    "LAUNCHERS",
    "NcclJob",
    "NcclPlan",
    "NcclRun",
    "RunOnHead",
    "default_rail_hcas",
    "expectation",
    "judge",
    "plan_nccl",
    "run_nccl",
]
