"""A node lost mid-triage, told apart from a slow or failed fabric.

A test whose node stopped answering (its step could not start there, ssh could not reach it,
Slurm set it down) says nothing about the fabric: it is *not judged*, never slow. The node it
lost is a finding of its own (drain it, check it) with what the launcher or Slurm said, and the
bisection goes on without it. A test that did not start for a reason naming no node, where
Slurm shows none of its nodes down either, is not judged and blames nothing: the reason is not
known.

Each backend tells which of its tests were lost this way: the lab's by its planted lost nodes,
Slurm's by :func:`slurm_step`, SSH's by :func:`mpirun_launch`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from probes.slurm_lost import is_lost, named_lost, not_started
from probes.slurm_parse import SlurmNode
from probes.transport import CommandResult, FailureKind
from topology.errors import IbfabError
from topology.model import Guid

if TYPE_CHECKING:
    from probes.pairs import PairResult, Probe
    from probes.slurm_sweep import SlurmSweepBackend
    from probes.sweep import SshPerftestBackend


@dataclass(frozen=True)
class NodeLost:
    """A node that stopped answering during a test: ``said`` is the launcher's or Slurm's words,
    ``state`` the node's Slurm state when it was read after the failure (``down+not_responding:
    Not responding``), None where there is no Slurm or it could not be read."""

    host: str  # the fabric's name
    said: str
    state: str | None = None


@dataclass(frozen=True)
class Unjudged:
    """Why a test says nothing about the fabric: the nodes it lost, or (none) a failure to start
    whose reason is not known."""

    lost: tuple[NodeLost, ...]
    said: str

    @property
    def reason(self) -> str:
        return "node_lost" if self.lost else "unknown"


@dataclass(frozen=True)
class LostNode:
    """A node finding of the triage: lost in ``round`` during ``test``; drain and check it."""

    host: str
    round: int
    test: str
    said: str
    state: str | None = None


def _state_text(node: SlurmNode) -> str:
    return node.state_text + (f": {node.reason}" if node.reason else "")


def slurm_step(
    hosts: Sequence[str],
    result: CommandResult,
    node_of: Mapping[str, str],
    states: Callable[[Sequence[str]], Sequence[SlurmNode]],
) -> Unjudged | None:
    """Whether a failed step over ``hosts`` (fabric names) lost a node, by srun's words and then by
    the nodes' states read now (``states``: ``scontrol show node``); None when the step ran (its
    failure, if any, is the tool's and is judged as such)."""
    if result.exit_code == 0 and result.failure is None:
        return None
    host_of = {node_of.get(h, h): h for h in hosts}
    text = f"{result.stderr}\n{result.message or ''}"
    named = [(host_of[n], line) for n, line in named_lost(text) if n in host_of]
    started = not_started(text)
    try:
        read = {n.name: n for n in states(list(host_of))}
    except IbfabError:  # a state we cannot read is evidence we do not have, not a failure
        read = {}
    lost = [NodeLost(h, line, _state_text(read[node_of.get(h, h)]) if node_of.get(h, h) in read else None)
            for h, line in named]  # fmt: skip
    said = started or (named[0][1] if named else (result.message or _last(result.stderr)))
    for node, info in read.items():
        h = host_of.get(node)
        if h is not None and is_lost(info) and h not in {x.host for x in lost}:
            lost.append(NodeLost(h, said, _state_text(info)))
    if lost:
        return Unjudged(tuple(sorted(lost, key=lambda x: hosts.index(x.host))), said)
    if started is not None:
        return Unjudged((), f"{started} (no node named; Slurm shows none of {', '.join(host_of)} down)")
    return None


def slurm_pair(
    nodes: Sequence[str],
    said: Mapping[str, str],
    host_of: Mapping[str, str],
    states: Callable[[Sequence[str]], Sequence[SlurmNode]],
    why: str,
) -> Unjudged:
    """A pair Slurm did not run (``why``, its words): the nodes of its steps that srun could not
    reach (``said``: node -> srun's words) are lost when srun names them or Slurm shows them down;
    else the reason is not known."""
    try:
        read = {n.name: n for n in states(list(nodes))}
    except IbfabError:
        read = {}
    lost = []
    for node in nodes:
        words = said.get(node)
        info = read.get(node)
        named = words is not None and any(n == node for n, _ in named_lost(f"srun: error: {words}"))
        if named or (info is not None and is_lost(info)):
            lost.append(
                NodeLost(
                    host_of.get(node, node),
                    f"{node}: {words or why}",
                    None if info is None else _state_text(info),
                )
            )
    return Unjudged(tuple(lost), why)


PairsLost = Callable[[Sequence["Probe"], Sequence["PairResult"]], dict[tuple[Guid, Guid], Unjudged]]


def slurm_pairs_lost(
    backend: SlurmSweepBackend,
    node_of: Mapping[str, str],
    states: Callable[[Sequence[str]], Sequence[SlurmNode]],
) -> PairsLost:
    """For a round of pairs run as steps of ``backend``: why each pair it did not run was not (its
    last word on the pair, :class:`probes.slurm_sweep.Unmeasured`), the nodes it lost named."""
    host_of = {n: h for h, n in node_of.items()}

    def lost(probes: Sequence[Probe], results: Sequence[PairResult]) -> dict[tuple[Guid, Guid], Unjudged]:
        ran = {(r.client.guid, r.server.guid) for r in results}
        why = {(u.probe.client.guid, u.probe.server.guid): u.why for u in backend.unmeasured}
        out = {}
        for p in probes:
            key = (p.client.guid, p.server.guid)
            if key not in ran:
                nodes = [node_of.get(p.client.host, p.client.host), node_of.get(p.server.host, p.server.host)]
                out[key] = slurm_pair(
                    nodes, backend.lost, host_of, states, why.get(key, "not run: no result came back")
                )
        return out

    return lost


def ssh_pairs_lost(backend: SshPerftestBackend) -> PairsLost:
    """For a round of pairs over SSH: a failed pair whose client or server host ssh could not reach
    (unreachable, refused, the connection timed out) lost that host."""

    def lost(probes: Sequence[Probe], results: Sequence[PairResult]) -> dict[tuple[Guid, Guid], Unjudged]:
        out = {}
        for r in results:
            run = None if r.ok else backend.outputs.get((r.client.guid, r.server.guid, r.attempt))
            if run is None:
                continue
            gone = [
                NodeLost(host, f"ssh {host}: {res.message}")
                for host, res in ((r.server.host, run.server), (r.client.host, run.client))
                if res.failure in _UNANSWERED
            ]
            if gone:
                out[(r.client.guid, r.server.guid)] = Unjudged(tuple(gone), gone[0].said)
        return out

    return lost


_UNANSWERED = (FailureKind.UNREACHABLE, FailureKind.TIMEOUT, FailureKind.REFUSED)
_SSH_LOST = re.compile(
    r"^ssh: (?:connect to host (?P<a>\S+) port \d+: .*|Could not resolve hostname (?P<b>[^\s:]+).*)$", re.M
)


def mpirun_launch(hosts: Sequence[str], result: CommandResult, head: str) -> Unjudged | None:
    """Whether a launch over SSH lost a node: the head itself unreachable (its ssh failed), or
    ssh's own words, on mpirun's stderr, naming one of ``hosts`` it could not reach."""
    if result.failure in _UNANSWERED:
        return Unjudged((NodeLost(head, f"ssh {head}: {result.message}"),), result.message or "")
    lost: list[NodeLost] = []
    for m in _SSH_LOST.finditer(result.stderr):
        name = m.group("a") or m.group("b")
        if name in hosts and name not in {x.host for x in lost}:
            lost.append(NodeLost(name, m.group(0).strip()))
    return Unjudged(tuple(lost), lost[0].said) if lost else None


def _last(text: str) -> str:
    return next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "no message")


__all__ = [
    "LostNode",
    "NodeLost",
    "PairsLost",
    "Unjudged",
    "mpirun_launch",
    "slurm_pair",
    "slurm_pairs_lost",
    "slurm_step",
    "ssh_pairs_lost",
]
