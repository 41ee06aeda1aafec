"""The isolation changes a session makes (``ibfab isolate --apply`` and ``--undo``, and the TUI's):
each opens the session's store to audit in and changes the fabric through the session's driver."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fabric.app.discovery.discover import Discovery, discover
from fabric.app.isolation.isolate import (
    RETEST_WINDOW_SECONDS,
    AppliedChange,
    IsolationPlan,
    UndoPlan,
    apply_undo,
    plan_undo,
)
from fabric.app.isolation.limits import IsolationRun, isolate_ports
from fabric.app.session import Session
from topology.errors import SafetyError
from topology.model import PortRef


def apply_isolation(
    session: Session,
    plan: IsolationPlan,
    *,
    gate: Callable[[Discovery, Sequence[PortRef]], object] | None = None,
) -> list[AppliedChange]:
    """What ``ibfab isolate --apply --yes`` does after its plan: under the fabric's change lock,
    the same ports planned again on the session's fabric as it is now, then changed (every port
    audited in the session's store). ``gate`` is asked first, with the fabric and the ports the
    plan takes out, and refuses by raising (the twin's routing check:
    :func:`fabric.app.twin.apply_isolation_checked`)."""
    if not plan.safe:
        raise SafetyError("the plan breaks safety rules; nothing was changed")
    ports = [s.port for s in plan.steps]
    reason = plan.steps[0].action.reason if plan.steps else "requested by the operator"
    d = discover(session)

    def check(r: IsolationRun) -> None:
        if gate is not None:
            gate(d, [s.port for s in r.plan.steps])

    with session.store.write() as store:
        run = isolate_ports(
            store,
            d,
            ports,
            plan.safety.policy,
            reason,
            session,
            rediscover=lambda: discover(session),
            apply=True,
            before_apply=check,
        )
    return list(run.changes)


def undo_plan(session: Session, audit_id: int, window_seconds: float = RETEST_WINDOW_SECONDS) -> UndoPlan:
    """What ``ibfab isolate --undo ID`` shows (it refuses an entry already undone)."""
    with session.store.write() as store:
        return plan_undo(store, audit_id, session.driver, window_seconds=window_seconds)


def undo(session: Session, plan: UndoPlan, *, force: bool = False) -> AppliedChange:
    """What ``ibfab isolate --undo ID --apply`` does: refused inside the re-test window unless
    ``force``, audited either way."""
    with session.store.write() as store:
        return apply_undo(plan, store, session, force=force)


__all__ = ["apply_isolation", "undo", "undo_plan"]
