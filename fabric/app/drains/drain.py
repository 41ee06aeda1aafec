"""Drain nodes in Slurm and resume them, each change in the audit log like an isolation.

``plan_drains`` turns requests (``recommend``'s ``drain_node`` actions, or hosts named by the
operator with a reason) into the exact ``scontrol update NodeName=... State=DRAIN
Reason="ibfab: <finding>"`` commands, after reading each node's state from Slurm; it changes
nothing. ``apply_drains`` runs them and writes one audit entry per node (who, when, the command,
the result) whose id ``ibfab drain undo ID`` takes. A drain lets the node's running jobs finish and
gives it no new ones.

Resuming is allowed only after a clean re-test window, as returning an isolated port is: the
drain must be at least the window old (default 126 min, :data:`fabric.app.isolation.isolate.RETEST_WINDOW_SECONDS`)
and no sweep stored since the drain may have a failed pair on the host. ``force`` overrides both,
and is audited like the rest. The node must still be drained by ibfab: a node someone else has
resumed or drained again for another reason is left alone.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fabric.advise.actions import Action, ActionKind
from fabric.app.audit import open_changes
from fabric.app.isolation.isolate import RETEST_WINDOW_SECONDS, current_user
from fabric.app.slurm import NodeMap
from fabric.store import AuditEntry, Store
from probes.inventory import expand_hosts
from probes.slurm import DRAIN_PREFIX, Slurm, drain_argv, resume_argv
from probes.slurm_parse import SlurmNode
from topology.errors import IbfabError, SafetyError, UsageError
from topology.nameformats import SLURM_NODE, unfit

DRAIN, RESUME = "drain", "resume"


@dataclass(frozen=True, slots=True)
class DrainRequest:
    """Drain ``host`` (a fabric host) because of ``finding``; ``evidence`` is what supports it."""

    host: str
    finding: str
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PlannedDrain:
    host: str
    node: str  # the Slurm node
    finding: str
    evidence: tuple[str, ...]
    argv: tuple[str, ...]
    state: str  # Slurm's state now (idle, allocated, idle+drain, ...), or "" when not a Slurm node
    skip: str | None  # why this one will not be drained, or None

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    @property
    def undo(self) -> str:
        """What resumes the node (``ibfab drain undo ID`` runs it after a clean re-test window)."""
        return shlex.join(resume_argv(self.node))


@dataclass(frozen=True, slots=True)
class DrainPlan:
    drains: tuple[PlannedDrain, ...]

    @property
    def to_apply(self) -> tuple[PlannedDrain, ...]:
        return tuple(d for d in self.drains if d.skip is None)

    def to_dict(self) -> dict[str, object]:
        return {
            "drains": [
                {
                    "host": d.host,
                    "node": d.node,
                    "finding": d.finding,
                    "evidence": list(d.evidence),
                    "command": d.command,
                    "state": d.state,
                    "skip": d.skip,
                }
                for d in self.drains
            ]
        }


@dataclass(frozen=True, slots=True)
class AppliedDrain:
    audit_id: int
    node: str
    command: str
    result: str


def requests_from_actions(actions: Iterable[Action]) -> list[DrainRequest]:
    """The ``drain_node`` actions of a recommendation, as drain requests (one per host)."""
    out: dict[str, DrainRequest] = {}
    for a in actions:
        if a.kind is ActionKind.DRAIN_NODE and a.target not in out:
            out[a.target] = DrainRequest(a.target, a.reason, a.evidence)
    return list(out.values())


def requests_for_hosts(hosts: Iterable[str], reason: str) -> list[DrainRequest]:
    """One drain request per host named in ``hosts`` (names or host ranges), in order, for ``reason``."""
    names = [h for spec in hosts for h in expand_hosts(spec, "HOST")]
    return [DrainRequest(h, reason) for h in dict.fromkeys(names)]


def plan_drains(requests: Sequence[DrainRequest], slurm: Slurm, node_map: NodeMap | None = None) -> DrainPlan:
    """The commands for ``requests``, each with the node's state in Slurm now; changes nothing."""
    node_map = node_map or NodeMap()
    wanted = [node_map.node(r.host) for r in requests]
    known = {n.name: n for n in slurm.nodes()}
    planned = []
    for r, node in zip(requests, wanted, strict=True):
        bad = unfit(node, SLURM_NODE)
        if bad is not None:  # said in the plan, never put on a command line
            planned.append(PlannedDrain(r.host, node, r.finding, r.evidence, (), "", str(bad)))
            continue
        argv = tuple(drain_argv(node, r.finding))
        current = known.get(node)
        planned.append(
            PlannedDrain(
                r.host,
                node,
                r.finding,
                r.evidence,
                argv,
                current.state_text if current else "",
                _skip(current, node),
            )
        )
    return DrainPlan(tuple(planned))


def _skip(node: SlurmNode | None, name: str) -> str | None:
    if node is None:
        return f"{name} is not a Slurm node (a node map names it: --node-map)"
    if node.drained:
        return f"already drained ({node.reason or 'no reason'})"
    return None


def _target(d: PlannedDrain) -> str:
    return d.node if d.node == d.host else f"{d.node} (fabric host {d.host})"


def _audit(
    store: Store,
    who: str,
    action: str,
    target: str,
    command: str,
    result: str,
    argv: Sequence[str],
    node: str,
    host: str,
    undo_of: int | None = None,
) -> int:
    """One audit entry: the text, and typed the command line, the Slurm node and its fabric host."""
    return store.audit(who, action, target, command, result, undo_of, argv=argv, nodes=(node,), hosts=(host,))


def apply_drains(
    plan: DrainPlan, store: Store, slurm: Slurm, *, user: str | None = None
) -> list[AppliedDrain]:
    """Drain every planned node, auditing each; stops at the first failure (audited, then raised)."""
    who = user or current_user()
    done = []
    for d in plan.to_apply:
        try:
            slurm.command(d.argv)
        except IbfabError as exc:
            _audit(
                store, who, DRAIN, _target(d), d.command, f"failed: {exc.one_line()}", d.argv, d.node, d.host
            )
            raise
        audit_id = _audit(store, who, DRAIN, _target(d), d.command, "ok", d.argv, d.node, d.host)
        done.append(AppliedDrain(audit_id, d.node, d.command, "ok"))
    return done


def open_drains(store: Store) -> list[AuditEntry]:
    """Successful drains that no later entry has resumed."""
    return open_changes(store, DRAIN)


@dataclass(frozen=True, slots=True)
class Retest:
    """A sweep stored after the drain that measured the host: its pairs, and the failed ones."""

    sweep_id: int
    pairs: int
    failed: tuple[str, ...]  # "cn0001/mlx5_0 -> cn0003/mlx5_0: error"


@dataclass(frozen=True, slots=True)
class ResumePlan:
    entry: AuditEntry
    node: str
    host: str
    argv: tuple[str, ...]
    age_seconds: float
    window_seconds: float
    state: str  # Slurm's state now
    slurm_reason: str | None
    retests: tuple[Retest, ...]

    @property
    def window_passed(self) -> bool:
        return self.age_seconds >= self.window_seconds

    @property
    def retests_clean(self) -> bool:
        return not any(r.failed for r in self.retests)

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def to_dict(self) -> dict[str, object]:
        return {
            "audit_id": self.entry.id,
            "node": self.node,
            "host": self.host,
            "command": self.command,
            "state": self.state,
            "slurm_reason": self.slurm_reason,
            "drained_seconds_ago": round(self.age_seconds, 1),
            "retest_window_seconds": self.window_seconds,
            "window_passed": self.window_passed,
            "retests": [
                {"sweep_id": r.sweep_id, "pairs": r.pairs, "failed": list(r.failed)} for r in self.retests
            ],
            "retests_clean": self.retests_clean,
        }


def retests_since(store: Store, host: str, since: float) -> list[Retest]:
    """Every stored sweep started after ``since`` that measured ``host``, with its failed pairs."""
    out = []
    for sweep in store.list_sweeps():
        if sweep.started < since:
            continue
        rows = [r for r in store.load_sweep(sweep.id).results if host in (r.client_host, r.server_host)]
        if rows:
            failed = tuple(
                f"{r.client_host}/{r.client_device} -> {r.server_host}/{r.server_device}: {r.error or 'below line rate'}"
                for r in rows
                if not r.ok
            )
            out.append(Retest(sweep.id, len(rows), failed))
    return out


def plan_resume(
    store: Store, audit_id: int, slurm: Slurm, *, window_seconds: float = RETEST_WINDOW_SECONDS
) -> ResumePlan:
    entry = next((e for e in store.audit_log() if e.id == audit_id), None)
    if entry is None:
        raise UsageError(f"no audit entry {audit_id}")
    if entry.action != DRAIN or not entry.result.startswith("ok"):
        raise UsageError(f"audit entry {audit_id} is not a successful drain ({entry.action}: {entry.result})")
    if entry.id not in {e.id for e in open_drains(store)}:
        raise UsageError(f"audit entry {audit_id} was already resumed")
    if len(entry.nodes) != 1 or len(entry.hosts) != 1:
        raise UsageError(f"audit entry {audit_id} names no Slurm node ({entry.target!r})")
    node, host = entry.nodes[0], entry.hosts[0]
    current = {n.name: n for n in slurm.nodes([node])}.get(node)
    if current is None:
        raise UsageError(f"{node} is not a Slurm node any more")
    if not current.drained:
        raise UsageError(f"{node} is not drained now ({current.state_text}); nothing to resume")
    if not (current.reason or "").startswith(DRAIN_PREFIX):
        raise UsageError(
            f"{node} is drained for another reason now ({current.reason or 'none given'}); leaving it to whoever did"
        )
    return ResumePlan(
        entry,
        node,
        host,
        tuple(resume_argv(node)),
        time.time() - entry.time,
        window_seconds,
        current.state_text,
        current.reason,
        tuple(retests_since(store, host, entry.time)),
    )


def check_resume(plan: ResumePlan) -> None:
    """SafetyError unless the re-test window has passed and every re-test since the drain is clean."""
    if not plan.window_passed:
        raise SafetyError(
            f"{plan.node} drained {plan.age_seconds / 60:.0f} min ago; re-test it clean for "
            f"{plan.window_seconds / 60:.0f} min before resuming it (or force it with --force)"
        )
    if not plan.retests_clean:
        bad = next(r for r in plan.retests if r.failed)
        more = f" and {len(bad.failed) - 1} more" if len(bad.failed) > 1 else ""
        raise SafetyError(
            f"{plan.host} failed a re-test since the drain (sweep {bad.sweep_id}: {bad.failed[0]}{more}); "
            "not resuming it (or force it with --force)"
        )


def apply_resume(
    plan: ResumePlan, store: Store, slurm: Slurm, *, user: str | None = None, force: bool = False
) -> AppliedDrain:
    """Resume the node after a clean re-test window (or ``force``); audited as undoing the drain."""
    if not force:
        check_resume(plan)
    who = user or current_user()
    command = plan.command + (
        " [forced]" if force and not (plan.window_passed and plan.retests_clean) else ""
    )
    entry = plan.entry
    try:
        slurm.command(plan.argv)
    except IbfabError as exc:
        failed = f"failed: {exc.one_line()}"
        _audit(store, who, RESUME, entry.target, command, failed, plan.argv, plan.node, plan.host, entry.id)
        raise
    audit_id = _audit(
        store, who, RESUME, entry.target, command, "ok", plan.argv, plan.node, plan.host, entry.id
    )
    return AppliedDrain(audit_id, plan.node, command, "ok")


__all__ = [
    "DRAIN",
    "RESUME",
    "AppliedDrain",
    "DrainPlan",
    "DrainRequest",
    "PlannedDrain",
    "ResumePlan",
    "Retest",
    "apply_drains",
    "apply_resume",
    "check_resume",
    "open_drains",
    "plan_drains",
    "plan_resume",
    "requests_from_actions",
    "retests_since",
]
