"""Apply and undo port isolations, with the safety check first and every change in the audit log.

``plan_isolation`` resolves the ports, runs the safety rules and builds the exact commands; it
changes nothing. ``apply_plan`` runs ``ibportstate <lid> <port> disable`` for each accepted port
through the session's fabric driver (this machine, or a lab) and writes one audit entry per port (who, when, what, command, result) whose id is what
``ibfab isolate --undo ID`` takes.

Undo runs ``ibportstate ... enable``. On a real fabric that is all: the port trains again and
the subnet manager hears the trap and sweeps. **ibsim does not retrain** a port after
``enable`` (it stays Disabled/Polling, see ibsim.md §6.6), so in a lab undo also unplugs and
replugs the cable through the simulator console (the driver's ``relink_commands``: ``Unlink`` +
``ReLink``). Likewise ibsim sends no trap on ``disable``, so after isolating the driver is asked to
resweep (a lab's OpenSM gets SIGHUP); a real switch sends the link-state trap itself.

Returning a port to service is advised only after a clean re-test window (default 126 min, as in
NVIDIA's PDR isolator); an undo inside the window needs ``force``.
"""

from __future__ import annotations

import getpass
import os
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fabric.advise.actions import Action, ibportstate_argv, isolate_port, ufm_curl
from fabric.advise.candidates import Candidate, LinkFinding, link_at, node_label, resolve_port
from fabric.advise.safety import DesignedUplinks, SafetyPolicy, SafetyReport, check_isolations
from fabric.app.audit import open_changes
from fabric.app.discovery.discover import Discovery
from fabric.app.session import Session
from fabric.store import AuditEntry, Store
from probes.driver import FabricDriver
from topology.classify import Classification
from topology.errors import CommandFailed, IbfabError, SafetyError, UsageError
from topology.model import Fabric, Guid, NodeKind, PortRef
from topology.routes import dr_path

RETEST_WINDOW_SECONDS = 126 * 60
ISOLATE, DEISOLATE = "isolate", "deisolate"


@dataclass(frozen=True, slots=True)
class PlannedIsolation:
    port: PortRef
    name: str  # leaf-su01-r0:5
    far: str  # spine-01:1
    argv: tuple[str, ...]
    action: Action


@dataclass(frozen=True, slots=True)
class IsolationPlan:
    steps: tuple[PlannedIsolation, ...]  # the accepted ones, in order
    safety: SafetyReport

    @property
    def safe(self) -> bool:
        return not self.safety.rejected

    def to_dict(self) -> dict[str, object]:
        return {
            "steps": [
                {
                    "port": {"guid": s.port.guid, "port": s.port.port},
                    "name": s.name,
                    "far": s.far,
                    "command": shlex.join(s.argv),
                    "action": s.action.to_dict(),
                }
                for s in self.steps
            ],
            "safety": self.safety.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class AppliedChange:
    audit_id: int
    port: PortRef
    command: str
    result: str


def current_user() -> str:
    return os.environ.get("SUDO_USER") or getpass.getuser()


def resolve_ports(d: Discovery, ports: Sequence[str]) -> list[PortRef]:
    """``NODE:PORT`` texts as ports of the discovered fabric; UsageError naming the first bad one."""
    return [resolve_port(d.fabric, d.classification, p) for p in ports]


def plan_isolation(
    fabric: Fabric,
    cls: Classification,
    ports: Sequence[PortRef],
    policy: SafetyPolicy | None = None,
    reason: str = "requested by the operator",
    already_isolated: int = 0,
    *,
    designed: Mapping[Guid, DesignedUplinks] | None = None,
) -> IsolationPlan:
    """The safety verdict and the commands for isolating ``ports`` (in the order given);
    ``already_isolated`` and ``designed`` as :func:`fabric.advise.safety.check_isolations` takes them
    (:mod:`fabric.app.isolation.limits` reads them from the fabric and the store)."""
    if not ports:
        raise UsageError("give at least one port to isolate (NODE:PORT)")
    cands = []
    for ref in ports:
        lk = link_at(fabric, ref)
        if lk is None:
            raise UsageError(f"{node_label(fabric, cls, ref.guid)}:{ref.port} has no cable (down or unused)")
        if fabric.nodes[ref.guid].kind is not NodeKind.SWITCH:
            raise UsageError(
                f"{node_label(fabric, cls, ref.guid)}:{ref.port} is an HCA port; isolate the switch end "
                "of its cable, or drain the node"
            )
        far = lk.other(ref.guid)
        host = fabric.nodes[far.guid].kind is not NodeKind.SWITCH
        finding = LinkFinding(lk.a, lk.b, "critical", (reason,))
        cands.append(Candidate(lk, ref, finding, host))
    report = check_isolations(fabric, cls, cands, policy, already_isolated, designed)
    steps = []
    for v in report.accepted:
        ref = v.candidate.port
        far = v.candidate.far
        name = f"{node_label(fabric, cls, ref.guid)}:{ref.port}"
        far_name = f"{node_label(fabric, cls, far.guid)}:{far.port}"
        impact = "; ".join(c.describe() for c in v.costs)
        # Reach the switch by a directed route that avoids the cable being disabled: a LID-routed
        # Set may enter through that very port and its reply would never come back.
        lid = fabric.nodes[ref.guid].lid
        dr = (
            dr_path(fabric, fabric.origin, ref.guid, frozenset({v.candidate.link.key}))
            if fabric.origin
            else None
        )
        act = isolate_port(ref, lid, f"{name} <-> {far_name}", reason, (), impact, dr)
        steps.append(
            PlannedIsolation(ref, name, far_name, tuple(ibportstate_argv(ref, lid, "disable", dr)), act)
        )
    return IsolationPlan(tuple(steps), report)


def _run(argv: Sequence[str], driver: FabricDriver) -> str:
    """Run a port change on the driver's fabric."""
    res = driver.change_port(argv, timeout=30)
    return f"ok (exit {res.exit_code})"


def _target(ref: PortRef, name: str, far: str) -> str:
    return f"{ref} {name} <-> {far}"


def unsafe_summary(plan: IsolationPlan) -> str:
    """One line for a plan with STOP verdicts: how many ports, which rules."""
    rejected = plan.safety.rejected
    rules = ", ".join(sorted({v.rule.value for v in rejected if v.rule}))
    return f"{len(rejected)} of {len(plan.safety.verdicts)} port(s) break safety rules ({rules})"


def _audit(
    store: Store,
    session: Session,
    who: str,
    action: str,
    target: str,
    command: str,
    result: str,
    argv: Sequence[str],
    port: PortRef,
    undo_of: int | None = None,
) -> int:
    """One audit entry: the text, and typed what ran, on which port and where (the session's source)."""
    src = session.source
    return store.audit(
        who,
        action,
        target,
        command,
        result,
        undo_of,
        argv=argv,
        ports=(port,),
        source=(src.kind.value, src.target),
    )


def _where(session: Session) -> str:
    """The note a change's command text carries when it ran on a simulation (`` [lab NAME]``)."""
    return f" [{session.source.label}]" if session.driver.simulated else ""


def apply_plan(
    plan: IsolationPlan, store: Store, session: Session, *, user: str | None = None
) -> list[AppliedChange]:
    """Disable every planned port through the session's driver, auditing each (its command line,
    its port and the session's source, typed, beside the text); stops at the first failure
    (audited, then raised)."""
    if not plan.safe:
        raise SafetyError(f"{unsafe_summary(plan)}; nothing was changed")
    driver = session.driver
    who = user or current_user()
    done = []
    for step in plan.steps:
        command = shlex.join(step.argv) + _where(session)
        target = _target(step.port, step.name, step.far)
        try:
            result = _run(step.argv, driver)
        except IbfabError as exc:
            _audit(
                store,
                session,
                who,
                ISOLATE,
                target,
                command,
                f"failed: {exc.one_line()}",
                step.argv,
                step.port,
            )
            raise
        audit_id = _audit(store, session, who, ISOLATE, target, command, result, step.argv, step.port)
        done.append(AppliedChange(audit_id, step.port, command, result))
    if done:
        driver.resweep()  # ibsim sends no trap on disable; a real switch does
    return done


def open_isolations(store: Store) -> list[AuditEntry]:
    """Successful isolations that no later entry has undone."""
    return open_changes(store, ISOLATE)


@dataclass(frozen=True, slots=True)
class UndoPlan:
    entry: AuditEntry
    port: PortRef
    argv: tuple[str, ...]
    lab_console: tuple[str, ...]  # console lines (lab only)
    age_seconds: float
    window_seconds: float
    ufm: str

    @property
    def window_passed(self) -> bool:
        return self.age_seconds >= self.window_seconds

    def to_dict(self) -> dict[str, object]:
        return {
            "audit_id": self.entry.id,
            "port": {"guid": self.port.guid, "port": self.port.port},
            "target": self.entry.target,
            "command": shlex.join(self.argv),
            "lab_console": list(self.lab_console),
            "ufm": self.ufm,
            "isolated_seconds_ago": round(self.age_seconds, 1),
            "retest_window_seconds": self.window_seconds,
            "window_passed": self.window_passed,
        }


def plan_undo(
    store: Store, audit_id: int, driver: FabricDriver, *, window_seconds: float = RETEST_WINDOW_SECONDS
) -> UndoPlan:
    entry = next((e for e in store.audit_log() if e.id == audit_id), None)
    if entry is None:
        raise UsageError(f"no audit entry {audit_id}")
    if entry.action != ISOLATE or not entry.result.startswith("ok"):
        raise UsageError(
            f"audit entry {audit_id} is not a successful isolation ({entry.action}: {entry.result})"
        )
    if entry.id not in {e.id for e in open_isolations(store)}:
        raise UsageError(f"audit entry {audit_id} was already undone")
    if len(entry.ports) != 1:
        raise UsageError(f"audit entry {audit_id} names no port ({entry.target!r})")
    ref = entry.ports[0]
    argv = list(entry.argv)
    if not argv or argv[0] != "ibportstate" or argv[-1] != "disable":
        raise UsageError(f"audit entry {audit_id}: cannot undo command {entry.command!r}")
    argv[-1] = "enable"
    console = driver.relink_commands(ref.guid, ref.port)
    return UndoPlan(
        entry, ref, tuple(argv), console, time.time() - entry.time, window_seconds, ufm_curl([ref], True)
    )


def check_undo(plan: UndoPlan) -> None:
    """SafetyError unless the port's re-test window has passed: the one rule every front end asks
    (the CLI before it asks to confirm, the TUI to block its confirmation, :func:`apply_undo`)."""
    if not plan.window_passed:
        raise SafetyError(
            f"port isolated {plan.age_seconds / 60:.0f} min ago: the re-test window of "
            f"{plan.window_seconds / 60:g} min has not passed; re-test it clean before returning it to "
            "service (or force it with --force)"
        )


def apply_undo(
    plan: UndoPlan, store: Store, session: Session, *, user: str | None = None, force: bool = False
) -> AppliedChange:
    if not force:
        check_undo(plan)
    driver = session.driver
    who = user or current_user()
    command = shlex.join(plan.argv)
    if plan.lab_console:
        command += f"{_where(session)} + console: " + "; ".join(plan.lab_console)
    entry = plan.entry
    try:
        result = _run(plan.argv, driver)
        for line in plan.lab_console:
            driver.console(line)
    except (IbfabError, CommandFailed) as exc:
        failed = f"failed: {exc.one_line()}"
        _audit(store, session, who, DEISOLATE, entry.target, command, failed, plan.argv, plan.port, entry.id)
        raise
    audit_id = _audit(
        store, session, who, DEISOLATE, entry.target, command, result, plan.argv, plan.port, entry.id
    )
    return AppliedChange(audit_id, plan.port, command, result)
