"""nccl-tests (``all_reduce_perf`` …): mpirun / srun command lines, bus-bandwidth factors, and
(re-exported from :mod:`probes.nccl_parse`) the output parser.

Pure: builds argv lists; running them is the transport's job.

>>> busbw_factor("all_reduce_perf", 16)
1.875
>>> opts = NcclTestOptions("all_reduce_perf", min_bytes="8", max_bytes="8G", env={"NCCL_ALGO": "Ring"})
>>> mpirun_argv(opts, "/tmp/hosts", 16, procs_per_node=8)[:8]
['mpirun', '-np', '16', '--hostfile', '/tmp/hosts', '--bind-to', 'none', '--map-by']
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from probes.nccl_parse import (
    WC_STATUS,
    CompletionError,
    NcclFailure,
    NcclRank,
    NcclRow,
    NcclTestResult,
    NcclTiming,
    NcclWarn,
    parse_nccl_tests,
    read_nccl_tests,
)
from probes.perftest import check_host
from topology.errors import UsageError

__all__ = [
    "BINARIES",
    "WC_STATUS",
    "CompletionError",
    "NcclFailure",
    "NcclRank",
    "NcclRow",
    "NcclTestOptions",
    "NcclTestResult",
    "NcclTiming",
    "NcclWarn",
    "busbw_factor",
    "busbw_from_algbw",
    "hostfile_text",
    "mpirun_argv",
    "parse_nccl_tests",
    "rail_split_env",
    "read_nccl_tests",
    "srun_argv",
]

BINARIES = ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf", "broadcast_perf",
            "reduce_perf", "sendrecv_perf")  # fmt: skip
OPS = ("sum", "prod", "min", "max", "avg", "mulsum", "all")
DATATYPES = (
    "int8", "char", "uint8", "int32", "int", "uint32", "int64", "uint64", "half", "float16",
    "float", "float32", "double", "float64", "bfloat16", "fp8_e4m3", "fp8_e5m2", "all",
)  # fmt: skip

_SIZE_RE = re.compile(r"\d+[KMGkmg]?")
_ENV_NAME_RE = re.compile(r"[A-Z_][A-Z0-9_]{0,127}")
_ENV_VALUE_BAD_RE = re.compile(r"[\x00-\x1f\x7f]")
_PATH_RE = re.compile(r"/?[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)*/?")
_SPLIT_RE = re.compile(r"(?:AND|OR|MOD|DIV|[&|%/])\s*(?:0x[0-9A-Fa-f]+|0b[01]+|\d+)")
_NODELIST_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*(?:\[[0-9,-]+\])?[A-Za-z0-9.-]*")

# busBw = algBw x factor(n), from nccl-tests doc/PERFORMANCE.md and each test's GetBw():
# m x (n-1)/n for these, 1 for the rest (broadcast, reduce, sendrecv, hypercube).
_RING_STEPS = {"allreduce": 2, "allgather": 1, "reducescatter": 1, "alltoall": 1, "alltoallv": 1, "gather": 1,
               "scatter": 1, "broadcast": 0, "reduce": 0, "sendrecv": 0, "hypercube": 0}  # fmt: skip


def busbw_factor(collective: str, nranks: int) -> float:
    """The factor nccl-tests applies to algbw to get busbw for ``collective`` over ``nranks`` ranks.

    ``collective`` may be the binary (``all_reduce_perf``) or the name (``all_reduce``, ``AllReduce``).
    """
    key = collective.lower().removesuffix("_perf").replace("_", "")
    if key not in _RING_STEPS:
        raise UsageError(f"no bus-bandwidth factor known for collective {collective!r}")
    if nranks < 1:
        raise UsageError(f"rank count must be at least 1, not {nranks}")
    steps = _RING_STEPS[key]
    return steps * (nranks - 1) / nranks if steps else 1.0


def busbw_from_algbw(collective: str, algbw: float, nranks: int) -> float:
    """Recompute busbw (GB/s) from algbw (GB/s) as nccl-tests does."""
    return algbw * busbw_factor(collective, nranks)


def _check_env(env: Mapping[str, str]) -> None:
    for name, value in env.items():
        if not _ENV_NAME_RE.fullmatch(name):
            raise UsageError(f"not an environment variable name: {name!r}")
        if not isinstance(value, str) or _ENV_VALUE_BAD_RE.search(value):
            raise UsageError(f"environment value of {name} has a control character or newline: {value!r}")
        if name == "NCCL_TESTS_SPLIT" and not _SPLIT_RE.fullmatch(value.strip()):
            raise UsageError(f"NCCL_TESTS_SPLIT must look like 'AND 0x7' or 'MOD 8', not {value!r}")


def _check_path(path: str, what: str) -> str:
    if not _PATH_RE.fullmatch(path) or path.startswith("-"):
        raise UsageError(f"{what} is not a plain path: {path!r}")
    return path


@dataclass(frozen=True, slots=True)
class NcclTestOptions:
    """One nccl-tests run. ``None`` leaves a flag out (nccl-tests' own default applies)."""

    binary: str
    min_bytes: str = "8"  # -b, e.g. "8", "128M", "1G"
    max_bytes: str = "8G"  # -e
    step_factor: int | None = 2  # -f
    gpus_per_proc: int | None = 1  # -g
    iterations: int | None = None  # -n (nccl-tests default 20)
    warmup: int | None = None  # -w (default 1)
    check: int | None = None  # -c (default 1: verify results, fills #wrong)
    op: str | None = None  # -o
    datatype: str | None = None  # -d
    binary_dir: str = ""  # where the binaries live, e.g. /opt/nccl-tests/build
    env: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if self.binary not in BINARIES:
            raise UsageError(
                f"unknown nccl-tests binary {self.binary!r}; expected one of {', '.join(BINARIES)}"
            )
        for name, value in (("min_bytes", self.min_bytes), ("max_bytes", self.max_bytes)):
            if not _SIZE_RE.fullmatch(value):
                raise UsageError(f"nccl-tests {name} must be a size like 8, 128M or 8G, not {value!r}")
        numbers = (
            ("step_factor", self.step_factor),
            ("gpus_per_proc", self.gpus_per_proc),
            ("iterations", self.iterations),
            ("warmup", self.warmup),
            ("check", self.check),
        )
        for name, number in numbers:
            if number is not None and not 0 <= number <= 10**7:
                raise UsageError(f"nccl-tests {name} out of range: {number}")
        if self.op is not None and self.op not in OPS:
            raise UsageError(f"nccl-tests op must be one of {', '.join(OPS)}, not {self.op!r}")
        if self.datatype is not None and self.datatype not in DATATYPES:
            raise UsageError(
                f"nccl-tests datatype must be one of {', '.join(DATATYPES)}, not {self.datatype!r}"
            )
        if self.binary_dir:
            _check_path(self.binary_dir, "nccl-tests binary directory")
        _check_env(self.env)
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))

    @property
    def executable(self) -> str:
        return f"{self.binary_dir.rstrip('/')}/{self.binary}" if self.binary_dir else self.binary

    def test_args(self) -> list[str]:
        args = ["-b", self.min_bytes, "-e", self.max_bytes]
        flags = (
            ("-f", self.step_factor),
            ("-g", self.gpus_per_proc),
            ("-n", self.iterations),
            ("-w", self.warmup),
            ("-c", self.check),
            ("-o", self.op),
            ("-d", self.datatype),
        )
        for flag, value in flags:
            if value is not None:
                args += [flag, str(value)]
        return [self.executable, *args]


def rail_split_env(gpus_per_node: int) -> dict[str, str]:
    """``NCCL_TESTS_SPLIT`` that runs one operation per GPU index: each uses one GPU per node, so
    every byte crosses the network on that GPU's rail (nccl-tests README: "MOD 8" on 8-GPU nodes)."""
    if not 1 <= gpus_per_node <= 64:
        raise UsageError(f"GPUs per node must be in 1..64, not {gpus_per_node}")
    return {"NCCL_TESTS_SPLIT": f"MOD {gpus_per_node}"}


def hostfile_text(hosts: Sequence[str], slots: int) -> str:
    """An Open MPI hostfile: one ``host slots=N`` line per host."""
    if slots < 1:
        raise UsageError(f"slots must be at least 1, not {slots}")
    if not hosts:
        raise UsageError("a hostfile needs at least one host")
    return "".join(f"{check_host(h)} slots={slots}\n" for h in hosts)


def mpirun_argv(
    opts: NcclTestOptions,
    hostfile: str,
    nprocs: int,
    *,
    procs_per_node: int | None = None,
    mpirun: str = "mpirun",
    allow_run_as_root: bool = False,
) -> list[str]:
    """Open MPI command line: ``-np``, ``--hostfile``, ``--bind-to none``, ``--map-by ppr:N:node``,
    and ``-x VAR=value`` for every variable of ``opts.env``."""
    if nprocs < 1:
        raise UsageError(f"process count must be at least 1, not {nprocs}")
    argv = [
        _check_path(mpirun, "mpirun"),
        "-np",
        str(nprocs),
        "--hostfile",
        _check_path(hostfile, "hostfile"),
    ]
    argv += ["--bind-to", "none"]
    if procs_per_node is not None:
        if procs_per_node < 1:
            raise UsageError(f"processes per node must be at least 1, not {procs_per_node}")
        argv += ["--map-by", f"ppr:{procs_per_node}:node"]
    if allow_run_as_root:
        argv.append("--allow-run-as-root")
    for name, value in sorted(opts.env.items()):
        argv += ["-x", f"{name}={value}"]
    return argv + opts.test_args()


def srun_argv(
    opts: NcclTestOptions,
    nodes: Sequence[str],
    ntasks_per_node: int,
    *,
    mpi: str | None = "pmix",
    gpus_per_node: int | None = None,
) -> list[str]:
    """Slurm command line: ``--nodes``, ``--nodelist``, ``--ntasks-per-node`` and
    ``--export=ALL,VAR=value,...``. Slurm splits ``--export`` at commas, so a value with a comma
    (``NCCL_IB_HCA=mlx5_0,mlx5_1``) is refused here: put it in the job's environment instead."""
    if not nodes:
        raise UsageError("srun needs at least one node")
    for node in nodes:
        if not _NODELIST_RE.fullmatch(node):
            raise UsageError(f"not a node name: {node!r}")
    if ntasks_per_node < 1:
        raise UsageError(f"tasks per node must be at least 1, not {ntasks_per_node}")
    argv = [
        "srun",
        f"--nodes={len(nodes)}",
        f"--nodelist={','.join(nodes)}",
        f"--ntasks-per-node={ntasks_per_node}",
    ]
    if gpus_per_node is not None:
        argv.append(f"--gpus-per-node={gpus_per_node}")
    if mpi is not None:
        if not re.fullmatch(r"[a-z0-9_]+", mpi):
            raise UsageError(f"not a Slurm MPI plugin name: {mpi!r}")
        argv.append(f"--mpi={mpi}")
    exports = ["ALL"]
    for name, value in sorted(opts.env.items()):
        if "," in value:
            raise UsageError(
                f"srun --export cannot carry a comma inside {name}={value!r}; set it in the job environment"
            )
        exports.append(f"{name}={value}")
    argv.append("--export=" + ",".join(exports))
    return argv + opts.test_args()
