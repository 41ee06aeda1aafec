"""Safety limits that hold across time, processes and stores.

* **Designed uplinks**: each switch's uplink floor is measured against the most of its uplinks now,
  in the store's *first* topology snapshot and the usual count of its tier in its section
  (:func:`fabric.advise.safety.designed_uplinks`), never against what earlier isolations left.
* **Isolations already in place**: the cap counts the switch ports the fabric shows *disabled* now
  (``iblinkinfo``: whoever disabled them, from whichever store) together with the store's open
  isolations, each port once. A saved topology cannot show port states: the plan says so, and an
  apply, which runs on the live fabric, reads them there.
* **One change at a time per fabric**: :func:`fabric_change_lock` is a lock file keyed by the
  fabric (the lab's name, else its lowest switch GUID), not by the store, in ``$IBFAB_LOCK_DIR``
  (default: ``locks/`` beside the default store). Discovery, the plan and the change all happen
  under it, so a second process plans on the fabric the first one left.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fabric.advise.safety import DesignedUplinks, SafetyPolicy, designed_uplinks
from fabric.app.discovery.discover import Discovery
from fabric.app.isolation.isolate import (
    AppliedChange,
    IsolationPlan,
    apply_plan,
    open_isolations,
    plan_isolation,
    unsafe_summary,
)
from fabric.app.session import Session
from fabric.store import Store, default_db_path
from probes.driver import FabricDriver
from probes.iblinkinfo import disabled_ports
from topology.classify import Classification, classify
from topology.errors import IbfabError, SafetyError, StoreError
from topology.model import Fabric, Guid, NodeKind, PortRef

IBLINKINFO_TIMEOUT = 300.0
LOCK_WAIT_S = 120.0


@dataclass(frozen=True)
class IsolationLimits:
    """What the safety rules count besides the fabric itself."""

    already: int  # ports isolated now: disabled on the fabric or open in the store, each once
    designed: Mapping[Guid, DesignedUplinks]
    disabled_now: frozenset[PortRef] | None  # None: the fabric's port states could not be read
    open_in_store: frozenset[PortRef]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "already_isolated": self.already,
            "disabled_now": None
            if self.disabled_now is None
            else [{"guid": r.guid, "port": r.port} for r in sorted(self.disabled_now)],
            "open_in_store": [{"guid": r.guid, "port": r.port} for r in sorted(self.open_in_store)],
            "notes": list(self.notes),
        }

    def describe(self) -> str:
        seen = "not known" if self.disabled_now is None else str(len(self.disabled_now))
        return (
            f"{self.already} port(s) isolated now count toward the cap "
            f"(disabled on the fabric: {seen}; open in the store: {len(self.open_in_store)})"
        )


def fabric_disabled_ports(driver: FabricDriver) -> frozenset[PortRef]:
    """The switch ports ``iblinkinfo`` shows Disabled on the fabric ``driver`` reaches."""
    res = driver.run_tool(["iblinkinfo"], IBLINKINFO_TIMEOUT)
    return disabled_ports(res.stdout, f"iblinkinfo ({driver.label})")


def _first_snapshot_uplinks(store: Store) -> tuple[dict[Guid, int], str] | None:
    try:
        snapshots = store.list_topologies()
        if not snapshots:
            return None
        first = store.load_topology(snapshots[0].id)
    except StoreError:
        return None
    cls = classify(first.fabric)
    return dict(cls.uplinks), f"first snapshot {first.summary.id}"


def isolation_limits(
    store: Store | None,
    fabric: Fabric,
    cls: Classification,
    state_from: FabricDriver | None,
) -> IsolationLimits:
    """The limits' inputs: designed uplinks, and the isolations in place (fabric + store).

    ``state_from`` is where the fabric's port states are read (None: nowhere, e.g. a saved file
    and no change to make); ``store`` None: no store to read."""
    notes: list[str] = []
    first = _first_snapshot_uplinks(store) if store is not None else None
    designed = designed_uplinks(cls, *(first or (None, "")))
    stored = frozenset(p for e in open_isolations(store) for p in e.ports) if store else frozenset()
    disabled: frozenset[PortRef] | None = None
    if state_from is not None:
        try:
            switches = {g for g, n in fabric.nodes.items() if n.kind is NodeKind.SWITCH}
            disabled = frozenset(p for p in fabric_disabled_ports(state_from) if p.guid in switches)
        except IbfabError as exc:
            notes.append(f"ports disabled now: not known ({exc.one_line()})")
    else:
        notes.append("ports disabled now: not known (a saved topology shows no port states)")
    already = len(stored | (disabled or frozenset()))
    return IsolationLimits(already, designed, disabled, stored, tuple(notes))


# -- one change at a time per fabric --------------------------------------------------------------
def lock_dir() -> Path:
    env = os.environ.get("IBFAB_LOCK_DIR")
    return Path(env) if env else default_db_path().parent / "locks"


def fabric_key(driver: FabricDriver, fabric: Fabric) -> str:
    """The fabric's name for its lock: the driver's (a lab's name), else its lowest switch GUID
    (the same fabric from any host, store or source gives the same key)."""
    named = driver.fabric_lock_name()
    if named is not None:
        return named
    switches = sorted(g for g, n in fabric.nodes.items() if n.kind is NodeKind.SWITCH)
    return f"fabric-{switches[0]}" if switches else f"fabric-{driver.label}"


@contextmanager
def fabric_change_lock(key: str, wait_s: float = LOCK_WAIT_S) -> Iterator[Path]:
    """Hold the fabric's change lock (waiting up to ``wait_s`` for another holder), then release.
    A SafetyError names the holder when it is not released in time."""
    folder = lock_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{''.join(c if c.isalnum() or c in '-_.' else '_' for c in key)}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise SafetyError(
                        f"another change to this fabric is under way ({_holder(path)}); "
                        f"nothing was changed (lock {path})"
                    ) from None
                time.sleep(0.05)
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        yield path
    finally:
        os.close(fd)  # closing releases the lock


def _holder(path: Path) -> str:
    try:
        data = json.loads(path.read_text() or "{}")
        return f"held by pid {data['pid']} on {data['host']} since {time.ctime(data['since'])}"
    except (OSError, ValueError, KeyError, TypeError):
        return "held by another process"


# -- the isolation use case under the limits ------------------------------------------------------
@dataclass(frozen=True)
class IsolationRun:
    plan: IsolationPlan
    limits: IsolationLimits
    changes: tuple[AppliedChange, ...] = ()


def isolate_ports(
    store: Store,
    discovery: Discovery,
    ports: Sequence[PortRef],
    policy: SafetyPolicy,
    reason: str,
    session: Session,
    *,
    rediscover: Callable[[], Discovery] | None = None,
    apply: bool = False,
    before_apply: Callable[[IsolationRun], None] | None = None,
) -> IsolationRun:
    """Plan isolating ``ports`` against every limit; with ``apply``, under the fabric's change lock:
    discover again (``rediscover``, for live sources), re-read the limits from the fabric and the
    store, plan, call ``before_apply`` (which may refuse by raising) and change the fabric.

    The fabric's port states come from the session's driver, where the change runs; an apply that
    cannot read them changes nothing."""
    driver = session.driver
    if not apply:
        state_from = driver if rediscover is not None else None
        return _plan(store, discovery, ports, policy, reason, state_from)
    with fabric_change_lock(fabric_key(driver, discovery.fabric)):
        d = rediscover() if rediscover is not None else discovery
        run = _plan(store, d, ports, policy, reason, driver)
        if run.limits.disabled_now is None:
            raise SafetyError(
                "cannot see which ports are disabled on the fabric now ("
                + "; ".join(run.limits.notes)
                + "): the cap cannot be counted; nothing was changed"
            )
        if before_apply is not None:
            before_apply(run)
        if not run.plan.safe:
            raise SafetyError(f"{unsafe_summary(run.plan)}; nothing was changed")
        changes = apply_plan(run.plan, store, session)
    return IsolationRun(run.plan, run.limits, tuple(changes))


def _plan(
    store: Store,
    d: Discovery,
    ports: Sequence[PortRef],
    policy: SafetyPolicy,
    reason: str,
    state_from: FabricDriver | None,
) -> IsolationRun:
    limits = isolation_limits(store, d.fabric, d.classification, state_from)
    plan = plan_isolation(
        d.fabric, d.classification, ports, policy, reason, limits.already, designed=limits.designed
    )
    return IsolationRun(plan, limits)
