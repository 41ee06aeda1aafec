"""Slurm's answers as records: pure functions of the text ``scontrol``, ``sinfo``, ``squeue``,
``salloc`` and ``srun`` print (checked against Slurm 22.05; tests read captures of a real cluster).

The command lines that produce each text are in :mod:`probes.slurm`; the formats asked of
``sinfo``/``squeue`` are fixed there (:data:`SINFO_REASONS`, :data:`SQUEUE_JOB`, :data:`SQUEUE_STEPS`)
with ``|`` between fields and any free text (a drain reason) last, so it may hold anything.

Slurm 22.05 has ``sinfo --json`` but not ``scontrol show node --json``; the one-line
``scontrol -o show node`` text is read here, as every Slurm since 2.x prints it.

>>> n = parse_nodes("NodeName=node2 Arch=x86_64 NodeAddr=127.0.0.12 State=IDLE+DRAIN "
...                 "Partitions=ibfab  Reason=ibfab: BER x=y [root@2026-11-25T08:21:57]")[0]
>>> (n.name, n.state, sorted(n.flags), n.reason, n.reason_user, n.drained)
('node2', 'IDLE', ['DRAIN'], 'ibfab: BER x=y', 'root', True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from probes.transport import FailureKind
from topology.errors import ParseError

SINFO_REASONS = "%N|%T|%u|%H|%E"
SQUEUE_JOB = "%i|%j|%T|%N|%r"
SQUEUE_STEPS = "%i|%j|%N"
SQUEUE_COMMENT = "%i|%k"
SQUEUE_RUNNING = "%i|%u|%D|%N|%j"  # job, user, node count, nodes, name (free text last)

# A key of scontrol's one-line records: a capitalised word (``CPUAlloc``, ``MCS_label``, ``Socks/Node``)
# then ``=``, at the start or after a space. Values may hold spaces (``OS=Linux 6.1 #1 SMP``).
_KEY = re.compile(r"(?:^|(?<=\s))([A-Z][A-Za-z0-9_/:]*)=")
# The reason is free text the operator wrote, followed by who set it and when: see _reason.

# Node states that mean "will not run a new job"; flags are the ``+WORD`` parts.
UNUSABLE_STATES = frozenset({"DOWN", "FUTURE", "UNKNOWN", "ERROR"})
UNUSABLE_FLAGS = frozenset(
    {"DRAIN", "DRAINING", "DRAINED", "NOT_RESPONDING", "MAINT", "RESERVED", "POWERED_DOWN", "POWER_DOWN",
     "POWERING_DOWN", "POWERING_UP", "FAIL", "REBOOT_REQUESTED", "REBOOT_ISSUED", "INVALID_REG"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class SlurmNode:
    """One node as ``scontrol show node`` reports it: ``state`` is the base (``IDLE``, ``ALLOCATED``,
    ``MIXED``, ``DOWN``...), ``flags`` the rest (``DRAIN``, ``NOT_RESPONDING``, ``MAINT``...)."""

    name: str
    state: str
    flags: frozenset[str]
    address: str
    partitions: tuple[str, ...]
    reason: str | None = None
    reason_user: str | None = None
    reason_time: str | None = None

    @property
    def drained(self) -> bool:
        return bool(self.flags & {"DRAIN", "DRAINING", "DRAINED"})

    @property
    def idle(self) -> bool:
        """Free for an exclusive allocation now: idle, not drained, answering, not reserved."""
        return self.state == "IDLE" and not (self.flags & UNUSABLE_FLAGS)

    @property
    def usable(self) -> bool:
        """Slurm could give it to a job (now or when its current job ends)."""
        return self.state not in UNUSABLE_STATES and not (self.flags & UNUSABLE_FLAGS)

    @property
    def state_text(self) -> str:
        return "+".join([self.state, *sorted(self.flags)]).lower()


@dataclass(frozen=True, slots=True)
class Drain:
    """A line of ``sinfo -R``: a node out of service, why, who said so and when."""

    node: str
    state: str
    user: str
    when: str
    reason: str


@dataclass(frozen=True, slots=True)
class Reservation:
    name: str
    nodes: str  # a Slurm host list, e.g. ``node[3-4]``
    start: str
    end: str
    state: str
    flags: frozenset[str]
    users: str
    partition: str | None


@dataclass(frozen=True, slots=True)
class JobInfo:
    job_id: str
    name: str
    state: str
    nodes: str  # a Slurm host list; empty while pending
    reason: str


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A running job as ``squeue -t RUNNING -o`` :data:`SQUEUE_RUNNING` shows it."""

    job_id: str
    user: str
    node_count: int
    nodes: str  # a Slurm host list
    name: str


@dataclass(frozen=True, slots=True)
class StepInfo:
    step_id: str  # ``JOB.STEP``
    name: str
    nodes: str


def _fields(line: str) -> dict[str, str]:
    keys = list(_KEY.finditer(line))
    out: dict[str, str] = {}
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(line)
        out[m.group(1)] = line[m.end() : end].strip()
    return out


def _reason(line: str) -> tuple[int, str, str | None, str | None] | None:
    """(where `` Reason=`` starts, the reason, who set it, when) of a one-line node record.

    What ``\\sReason=(.*?)(?:\\s\\[([^\\]@]*)@([^\\]]*)\\])?\\s*$`` finds, in one pass: that
    pattern retries its lazy reason at every character, each time scanning the whitespace or the
    bracket after it (quadratic in a long reason). The ``[user@time]`` suffix is the earliest
    `` [`` after the last ``]`` but one whose bracket holds an ``@`` and closes the line.
    """
    at = -1
    while (at := line.find("Reason=", at + 1)) >= 0:
        if at > 0 and line[at - 1].isspace():
            break
    else:
        return None
    rest = line[at + len("Reason=") :]
    text = rest.rstrip()
    if text.endswith("]"):
        inner_from = text.rfind("]", 0, len(text) - 1) + 1
        p = inner_from
        while (p := text.find("[", p)) >= 0 and p < len(text) - 1:
            if p > 0 and text[p - 1].isspace():
                user, marker, when = text[p + 1 : -1].partition("@")
                if marker:
                    return at - 1, rest[: p - 1].strip(), user, when
                break  # a later '[' holds less: no '@' there either
            p += 1
    return at - 1, text.strip(), None, None


def _null(value: str | None) -> str | None:
    return None if value in (None, "", "(null)", "N/A", "None") else value


def parse_nodes(text: str, source: str = "scontrol show node") -> list[SlurmNode]:
    """Every node of ``scontrol -o show node`` (one line per node)."""
    nodes = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if not line.startswith("NodeName="):
            if line.lower().startswith("node ") and "not found" in line.lower():
                continue
            raise ParseError(
                "scontrol", source, lineno, line, "expected NodeName=... (scontrol -o show node)"
            )
        reason = reason_user = reason_time = None
        found = _reason(line)
        if found:
            start, reason, reason_user, reason_time = found
            line = line[:start]
        f = _fields(line)
        if "State" not in f:
            raise ParseError("scontrol", source, lineno, line, "node without State=")
        base, *flags = f["State"].split("+")
        nodes.append(
            SlurmNode(
                f["NodeName"],
                base.rstrip("*~#!%$@^-").upper(),
                frozenset(x.upper() for x in flags if x),
                f.get("NodeAddr") or f["NodeName"],
                tuple(p for p in (f.get("Partitions") or "").split(",") if _null(p)),
                _null(reason),
                reason_user,
                reason_time,
            )
        )
    return nodes


def _five_fields(text: str, tool: str, source: str, fmt: str) -> list[list[str]]:
    """The ``|``-separated five fields of each non-blank line (the last may hold ``|`` itself)."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("|", 4)
        if len(parts) != 5:
            raise ParseError(tool, source, lineno, line, f"expected {fmt}")
        out.append([p.strip() for p in parts])
    return out


def parse_reasons(text: str, source: str = "sinfo -R") -> list[Drain]:
    """``sinfo -R -h -N -o`` :data:`SINFO_REASONS`: one drained/down node per line."""
    return [Drain(*row) for row in _five_fields(text, "sinfo", source, SINFO_REASONS)]


def parse_reservations(text: str, source: str = "scontrol show reservation") -> list[Reservation]:
    """Every reservation of ``scontrol -o show reservation`` (none: ``No reservations in the system``)."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("No reservations"):
            continue
        if not line.startswith("ReservationName="):
            raise ParseError("scontrol", source, lineno, line, "expected ReservationName=...")
        f = _fields(line)
        out.append(
            Reservation(
                f["ReservationName"],
                _null(f.get("Nodes")) or "",
                f.get("StartTime", ""),
                f.get("EndTime", ""),
                f.get("State", ""),
                frozenset(x for x in (f.get("Flags") or "").split(",") if x),
                f.get("Users", ""),
                _null(f.get("PartitionName")),
            )
        )
    return out


def parse_jobs(text: str, source: str = "squeue") -> list[JobInfo]:
    """``squeue -h -o`` :data:`SQUEUE_JOB`."""
    return [JobInfo(*row) for row in _five_fields(text, "squeue", source, SQUEUE_JOB)]


def parse_running_jobs(text: str, source: str = "squeue") -> list[RunningJob]:
    """``squeue -h -t RUNNING -o`` :data:`SQUEUE_RUNNING`.

    >>> parse_running_jobs("17|alice|2|node[1,3]|train|v2")
    [RunningJob(job_id='17', user='alice', node_count=2, nodes='node[1,3]', name='train|v2')]
    """
    out = []
    for (job, user, count, nodes, name), lineno in zip(
        _five_fields(text, "squeue", source, SQUEUE_RUNNING), _numbered(text), strict=True
    ):
        if not count.isdigit():
            raise ParseError(
                "squeue", source, lineno, text.splitlines()[lineno - 1], "node count is not a number"
            )
        out.append(RunningJob(job, user, int(count), nodes, name))
    return out


def _numbered(text: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines(), 1) if line.strip()]


def parse_steps(text: str, source: str = "squeue -s") -> list[StepInfo]:
    """``squeue -h -s -o`` :data:`SQUEUE_STEPS`."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != 3 or "." not in parts[0]:
            raise ParseError("squeue", source, lineno, line, f"expected {SQUEUE_STEPS}")
        out.append(StepInfo(*(p.strip() for p in parts)))
    return out


def parse_comments(text: str, source: str = "squeue") -> dict[str, str]:
    """``squeue -h -o`` :data:`SQUEUE_COMMENT`: job id -> its comment (the rest of the line)."""
    out = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        job, sep, comment = line.partition("|")
        if not sep or not job.strip().isdigit():
            raise ParseError("squeue", source, lineno, line, f"expected {SQUEUE_COMMENT}")
        out[job.strip()] = comment.strip()
    return out


_GRANTED = re.compile(r"Granted job allocation (\d+)")
_SALLOC_ERROR = re.compile(r"^salloc: error: (.*)$", re.M)
_SALLOC_NOTE = re.compile(r"^salloc: (?!error:|Pending|job \d+ queued|Granted)(.*)$", re.M)


def parse_granted(stderr: str) -> str | None:
    """The job id of ``salloc: Granted job allocation N``, or None when salloc got nothing."""
    m = _GRANTED.search(stderr)
    return m.group(1) if m else None


def salloc_refusal(stderr: str) -> str:
    """Why salloc got nothing, in its own words: the scheduler's note, then the error.

    ``Required node not available (down, drained or reserved); Unable to allocate resources:
    Connection timed out`` (what ``--immediate`` ends with when nodes are not free).
    """
    notes = [m.group(1).strip() for m in _SALLOC_NOTE.finditer(stderr)]
    errors = [m.group(1).strip() for m in _SALLOC_ERROR.finditer(stderr)]
    said = [*notes, *errors]
    return "; ".join(said) if said else (stderr.strip().splitlines() or ["salloc gave no reason"])[-1]


# srun's own words when a step never started on its node (not the task's failure).
_LAUNCH_FAILED = re.compile(
    r"^srun: error: (?:Task launch for \S+ failed on node \S+: .*|Application launch failed: .*"
    r"|Unable to create step for job \d+: .*|Unable to confirm allocation for job \d+: .*"
    r"|.*Job step creation temporarily disabled.*|Slurm job \d+ has expired.*)$",
    re.M,
)
_TIME_LIMIT = re.compile(r"\*\*\* STEP \S+ ON \S+ CANCELLED AT \S+ DUE TO TIME LIMIT \*\*\*")
_CANCELLED = re.compile(r"\*\*\* STEP \S+ ON \S+ CANCELLED AT \S+ \*\*\*")
_TASK_EXIT = re.compile(r"^srun: error: \S+: task \d+: .*$", re.M)


def step_failure(stderr: str) -> tuple[FailureKind, str] | None:
    """Whether srun says the step did not run to completion on its node, and why (None: it ran).

    A task that ran and exited non-zero is not a step failure: its exit code and output are the
    tool's answer and are read by the tool's parser.
    """
    if _TIME_LIMIT.search(stderr):
        return FailureKind.COMMAND_TIMEOUT, "step cancelled by Slurm at its time limit"
    launch = [m.group(0).removeprefix("srun: error: ") for m in _LAUNCH_FAILED.finditer(stderr)]
    if launch:
        return FailureKind.UNREACHABLE, launch[0]
    if _CANCELLED.search(stderr) and not _TASK_EXIT.search(stderr):
        return FailureKind.ERROR, "step cancelled"
    return None


def task_output(stderr: str) -> str:
    """The task's own stderr, without srun's lines about it (``srun: error: node4: task 0: Exited...``)."""
    keep = [ln for ln in stderr.splitlines(keepends=True) if not ln.startswith(("srun: ", "slurmstepd"))]
    return "".join(keep)
