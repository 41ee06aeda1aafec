"""Whether a job step failed because one of its nodes was lost (its slurmd stopped answering,
Slurm set it down), and which node: pure functions of srun's words and of the nodes' states.

What Slurm 22.05 says, captured on a real cluster whose node3 slurmd was killed mid-job:

* before slurmctld notices: ``srun: error: Task launch for StepId=1.1 failed on node node3:
  Communication connection failure`` (srun names the node; its state reads
  ``ALLOCATED+NOT_RESPONDING`` right after);
* once slurmctld has set it down (``DOWN+NOT_RESPONDING``, ``Reason=Not responding``): ``srun:
  error: Unable to create step for job 1: Requested node configuration is not available``: no node
  is named; only the node's state tells which.

>>> named_lost("srun: error: Task launch for StepId=1.1 failed on node node3: Communication connection failure")
[('node3', 'srun: error: Task launch for StepId=1.1 failed on node node3: Communication connection failure')]
"""

from __future__ import annotations

import re

from probes.slurm_parse import SlurmNode

# srun's lines that name a node the step could not reach, or lost while it ran
_NAMED = re.compile(
    r"^srun: error: (?:Task launch for \S+ failed on node (?P<a>[^\s:]+): .*|Node failure on (?P<b>[^\s:]+).*)$",
    re.M,
)
# srun's lines that say the step never started, naming no node
_NOT_STARTED = re.compile(
    r"^srun: error: (?:Unable to create step for job \d+: .*|Application launch failed: .*"
    r"|Unable to confirm allocation for job \d+: .*)$",
    re.M,
)
# A node Slurm itself has found not answering (scontrol: DOWN, +NOT_RESPONDING, +FAIL).
LOST_STATES = frozenset({"DOWN"})
LOST_FLAGS = frozenset({"NOT_RESPONDING", "FAIL", "FAILING"})


def named_lost(stderr: str) -> list[tuple[str, str]]:
    """(node, srun's line) for each node srun says it could not launch on or lost, in order."""
    out: list[tuple[str, str]] = []
    for m in _NAMED.finditer(stderr):
        node = m.group("a") or m.group("b")
        if node and node not in {n for n, _ in out}:
            out.append((node, m.group(0).strip()))
    return out


def not_started(stderr: str) -> str | None:
    """srun's first line saying the step never started (naming no node), or None."""
    m = _NOT_STARTED.search(stderr)
    return m.group(0).strip() if m else None


def is_lost(node: SlurmNode) -> bool:
    """Slurm shows the node down or not responding (not merely drained: a drain is an operator's)."""
    return node.state in LOST_STATES or bool(node.flags & LOST_FLAGS)


__all__ = ["LOST_FLAGS", "LOST_STATES", "is_lost", "named_lost", "not_started"]
