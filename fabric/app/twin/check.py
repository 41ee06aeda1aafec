"""A change checked on the twin before it is applied: the plan run there, routes before and after.

:func:`check_isolation` takes the ports a plan would disable, finds (or builds) the fabric's twin
with the site's engine, reads its forwarding tables (the real ``dump_fts``), then runs the plan on
the twin exactly as a plan runs on the fabric: :func:`fabric.app.isolation.isolate.plan_isolation`
over the twin's own discovery and :func:`fabric.app.isolation.isolate.apply_plan` with the twin's
session (:func:`fabric.app.twin.build.twin_session`), whose lab driver runs the real ``ibportstate
... disable`` and asks OpenSM to re-sweep, audited in the twin's own log, never the operator's.
Once OpenSM has routed again, the tables are read again and judged over the fabric without those
cables; the SM's log says which engine routed. The twin is then put back
(:func:`fabric.app.isolation.isolate.apply_undo`: ``enable``, and the console's Unlink/ReLink ibsim
needs, through the same driver) and kept up for the next check.

The verdict is :func:`fabric.advise.routing_check.judge_change`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabric.advise.routing_check import RoutingIssue, RoutingVerdict, SmRouted, judge_change, worst
from fabric.advise.safety import SafetyPolicy
from fabric.advise.twin_engine import EngineChoice
from fabric.app.discovery.discover import Discovery
from fabric.app.isolation.isolate import apply_plan, apply_undo, plan_isolation, plan_undo
from fabric.app.session import Session
from fabric.app.twin.build import (
    Twin,
    ensure_twin,
    mark_stale,
    require_equal,
    twin_discovery,
    twin_lock,
    twin_name,
    twin_session,
)
from fabric.app.twin.tables import check_size, twin_tables
from fabric.store import Store
from probes.driver import FabricDriver
from probes.opensm import parse_routing_log
from topology.errors import LabError, UsageError
from topology.lft import Lfts
from topology.model import Fabric, Guid, LinkKey, PortRef
from topology.route_checks import RouteReport, check_routes
from topology.route_delta import RouteDelta, route_delta

_USER = "ibfab twin check"
_LOG_LINES = 12  # the SM's log lines kept as evidence
# Lines of the SM's log that say why an engine gave up (ftree's "ERR AB0B: Different number of
# ports in an upward port group on switches:" and the switches on the lines after it, "Fabric
# topology is not a fat-tree") or what routed; its MAD transport's errors (timeouts towards a port
# just taken out) say nothing of the routing.
_EVIDENCE = ("cannot build", "tables configured", "not a fat-tree", "ERR ")
_NOISE = ("SMP", "MAD", "Timeout", "mkey", "TID", "umad")
# Settings the twin plans with: the real plan was judged by the site's rules already; on the twin
# every port it accepted is taken out, whatever the twin's own count of isolations says.
_ANY = SafetyPolicy(min_uplink_share=0.0, max_isolations=1 << 20, allow_switch_to_host=True)


@dataclass(frozen=True)
class TwinCheck:
    """One plan checked on the twin."""

    twin: Twin
    engine: EngineChoice
    changes: tuple[str, ...]  # the ports taken out on the twin, named (leaf-01:9 <-> spine-01:1)
    delta: RouteDelta
    before: SmRouted
    after: SmRouted
    issues: tuple[RoutingIssue, ...]
    restored: bool
    seconds: Mapping[str, float] = field(default_factory=dict)
    routes_before: RouteReport | None = field(default=None, repr=False, compare=False)  # for the jobs
    tables_before: Lfts | None = field(default=None, repr=False, compare=False)  # for what-if
    tables_after: Lfts | None = field(default=None, repr=False, compare=False)
    fabric_after: Fabric | None = field(default=None, repr=False, compare=False)

    @property
    def verdict(self) -> RoutingVerdict:
        return worst(self.issues)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "twin": self.twin.name,
            "twin_built": self.twin.built,
            "engine": self.engine.to_dict(),
            "routing": self.twin.routing,
            "changes": list(self.changes),
            "issues": [i.to_dict() for i in self.issues],
            "delta": self.delta.to_dict(),
            "sm_before": self.before.to_dict(),
            "sm_after": self.after.to_dict(),
            "restored": self.restored,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }


def sm_log(driver: FabricDriver) -> str:
    """The twin's OpenSM log, as its lab driver knows it."""
    path = driver.sm_log()
    if path is None:
        raise LabError(f"{driver.label}: no subnet manager log to follow (a twin is a lab)")
    return path


def log_size(driver: FabricDriver) -> int:
    try:
        return Path(sm_log(driver)).stat().st_size
    except OSError:
        return 0


def _log_text(driver: FabricDriver, start: int = 0, end: int | None = None) -> str:
    with Path(sm_log(driver)).open("rb") as fh:
        fh.seek(start)
        data = fh.read() if end is None else fh.read(max(0, end - start))
    return data.decode(errors="replace")


def routed(driver: FabricDriver, start: int = 0, end: int | None = None) -> SmRouted:
    """What the twin's SM logged of its routing between two offsets of its log (the last routing)."""
    text = _log_text(driver, start, end)
    _, engine, failed = parse_routing_log(text)
    lines: list[str] = []
    keeping = False
    for ln in text.splitlines():
        if ln[:1].isspace():  # a message's own next lines (the switches ftree compared)
            if keeping:
                lines.append(ln.strip())
            continue
        keeping = any(k in ln for k in _EVIDENCE) and not any(n in ln for n in _NOISE)
        if keeping:
            lines.append(ln.strip())
    # the last routing only: from after the one before it to its "tables configured" line
    done = [i for i, ln in enumerate(lines) if "tables configured" in ln]
    last = done[-1] if done else len(lines) - 1
    first = done[-2] + 1 if len(done) > 1 else 0
    keep = lines[max(first, last + 1 - _LOG_LINES) : last + 1]
    return SmRouted(engine, failed, tuple(keep), sm_log(driver))


QUIET = 1.0  # seconds the SM's log must show no new sweep or trap for the routing to count as done
_BUSY = ("Received Generic Notice", "tables configured", "SUBNET UP", "fabric_dump_general_info")


def wait_routed(name: str, driver: FabricDriver, mark: int, timeout: float) -> None:
    """Until the twin's OpenSM has finished a sweep after ``mark`` (an offset of its log), logged
    no trap since, and started no other sweep for :data:`QUIET` seconds: a sweep that began before
    the change's trap ends with SUBNET UP too, and the one the trap asked for follows it."""
    deadline = time.monotonic() + timeout
    quiet_since: float | None = None
    seen = -1
    while True:
        text = _log_text(driver, mark)
        last = text.rfind("SUBNET UP")
        done = last >= 0 and text.rfind("Received Generic Notice") < last
        if done:
            busy = max(text.rfind(k) for k in _BUSY)
            if busy != seen:
                seen, quiet_since = busy, time.monotonic()
            elif quiet_since is not None and time.monotonic() - quiet_since >= QUIET:
                return
        else:
            quiet_since = None
        if time.monotonic() > deadline:
            raise LabError(
                f"twin {name}: OpenSM did not finish re-routing within {timeout:g} s (see {sm_log(driver)})"
            )
        time.sleep(0.05)


def without(fabric: Fabric, gone: set[LinkKey]) -> Fabric:
    """``fabric`` with the cables ``gone`` taken out (the ports the plan disables)."""
    return Fabric.build(
        fabric.nodes.values(),
        [lk for lk in fabric.links if lk.key not in gone],
        fabric.unconnected,
        fabric.source,
        unique=True,
        origin=fabric.origin,
        lids=dict(fabric.lids),
    )


def check_isolation(
    d: Discovery, ports: Sequence[PortRef], engine: EngineChoice, *, lfts_file: str | None = None
) -> TwinCheck:
    """Disable ``ports`` on the twin of ``d`` (running ``engine``), judge the re-routing, put it back."""
    if not ports:
        raise UsageError("no port to check: the plan takes nothing out")
    return _checked(
        d,
        engine,
        lfts_file,
        lambda name, twin, td, store, timeout: _isolation(name, twin, td, store, ports, timeout),
    )


def check_unplug(
    d: Discovery, hcas: Sequence[Guid], engine: EngineChoice, *, lfts_file: str | None = None
) -> TwinCheck:
    """Unplug every cable of the HCAs ``hcas`` on the twin (a drained node taken away for repair),
    judge the re-routing of everyone else's traffic, put them back."""
    if not hcas:
        raise UsageError("no HCA to check: the drain takes nothing out")
    return _checked(
        d,
        engine,
        lfts_file,
        lambda name, twin, td, store, timeout: _unplug(name, twin.driver, td, hcas, timeout),
        frozenset(hcas),
    )


@dataclass
class _Change:
    """A change made on the twin: its names, the cables it takes out, and how it is undone."""

    names: tuple[str, ...]
    gone: set[LinkKey]
    undo: Callable[[], bool]


_Maker = Callable[[str, Session, Discovery, Store, float], _Change]


def _checked(
    d: Discovery,
    engine: EngineChoice,
    lfts_file: str | None,
    make: _Maker,
    expected: frozenset[Guid] = frozenset(),
) -> TwinCheck:
    if not engine.known:
        raise UsageError(f"the routing check cannot be done: {engine.unknown}")
    check_size(twin_name(d.fabric), d)  # before any twin is built for it
    with twin_lock(twin_name(d.fabric)):
        seconds: dict[str, float] = {}
        t0 = time.monotonic()
        twin = ensure_twin(d, engine, lfts_file=lfts_file)
        require_equal(twin)
        td = twin_discovery(twin)
        seconds["twin"] = time.monotonic() - t0
        name = twin.name
        session = twin_session(name)  # the twin reached as a plan reaches the fabric: its driver
        driver = session.driver
        timeout = 30.0 + (twin.state.switches + twin.state.hcas) / 50.0

        t0 = time.monotonic()
        wait_routed(name, driver, 0, timeout)  # the twin's own sweeps since it came up (or was put back) done
        sm_before = routed(driver, 0, log_size(driver))
        lfts_before = twin_tables(session, td)
        before = check_routes(td.fabric, td.classification, lfts_before)
        seconds["before"] = time.monotonic() - t0

        t0 = time.monotonic()
        with session.store.write() as store:
            mark = log_size(driver)
            change = make(name, session, td, store, timeout)
            try:
                wait_routed(name, driver, mark, timeout)
                seconds["apply"] = time.monotonic() - t0
                t0 = time.monotonic()
                sm_after = routed(driver, mark)
                after_fabric = without(td.fabric, change.gone)
                lfts_after = twin_tables(session, td)
                after = check_routes(after_fabric, td.classification, lfts_after)
                seconds["after"] = time.monotonic() - t0
            finally:
                t0 = time.monotonic()
                mark = log_size(driver)
                restored = change.undo()
                wait_routed(name, driver, mark, timeout)
                if not restored:
                    mark_stale(name)
                seconds["restore"] = time.monotonic() - t0
    delta = route_delta(before, after, ignore=expected)
    issues = judge_change(delta, sm_before, sm_after)
    return TwinCheck(
        twin,
        engine,
        change.names,
        delta,
        sm_before,
        sm_after,
        issues,
        restored,
        seconds,
        before,
        lfts_before,
        lfts_after,
        after_fabric,
    )


def _isolation(
    name: str, twin: Session, td: Discovery, store: Store, ports: Sequence[PortRef], timeout: float
) -> _Change:
    """The plan run on the twin as it runs on the fabric: planned over the twin's discovery,
    applied with the twin's session (its lab driver) and audited in the twin's own log."""
    missing = [p for p in ports if p.guid not in td.fabric.nodes]
    if missing:
        raise LabError(f"twin {name}: no node {missing[0].guid}: it does not copy this fabric")
    plan = plan_isolation(td.fabric, td.classification, list(ports), _ANY, "checked on the twin")
    if not plan.steps:
        raise LabError(
            f"twin {name}: the twin would take out none of the ports ({plan.safety.rejected[0].reason})"
        )
    driver = twin.driver
    mark = log_size(driver)
    changes = apply_plan(plan, store, twin, user=_USER)
    wait_routed(name, driver, mark, timeout)  # the re-sweep apply_plan asked for, before the cable goes
    # ibsim leaves a disabled port's LinkState Active and sends no trap, so OpenSM would route on
    # over the cable (ibsim.md 6.6); a real port goes down and its switch traps. The cable is
    # unplugged on the console, as the port going down does.
    for step in plan.steps:
        driver.unplug(driver.node_id(step.port.guid), step.port.port, timeout=timeout)
    return _Change(
        tuple(f"{s.name} <-> {s.far}" for s in plan.steps),
        {v.candidate.link.key for v in plan.safety.accepted},
        lambda: _restore(twin, store, [c.audit_id for c in changes], timeout),
    )


def _unplug(name: str, driver: FabricDriver, td: Discovery, hcas: Sequence[Guid], timeout: float) -> _Change:
    cables = [lk for g in hcas for lk in td.fabric.links_of(g)]
    if not cables:
        raise LabError(f"twin {name}: the HCAs to take out have no cable there")
    names = {g: c.name for g, c in td.classification.nodes.items()}
    done: list[tuple[str, int]] = []
    for lk in cables:
        end = lk.a if lk.a.guid in hcas else lk.b
        node = driver.node_id(end.guid)
        driver.unplug(node, end.port, timeout=timeout)
        done.append((node, end.port))

    def undo() -> bool:
        for node, port in done:
            driver.replug(node, port, timeout=timeout)
        return True

    return _Change(
        tuple(
            f"{names.get(lk.a.guid, lk.a.guid)}:{lk.a.port} <-> {names.get(lk.b.guid, lk.b.guid)}:{lk.b.port}"
            for lk in cables
        ),
        {lk.key for lk in cables},
        undo,
    )


def _restore(twin: Session, store: Store, audit_ids: Sequence[int], timeout: float) -> bool:
    """Put the twin back as it was: each isolation undone as the lab undoes one (``enable``, and
    the console's Unlink/ReLink), once the cable is plugged back. False when a port stays down."""
    driver = twin.driver
    ok = True
    for audit_id in audit_ids:
        undo = plan_undo(store, audit_id, driver, window_seconds=0)
        node = driver.node_id(undo.port.guid)
        if not driver.port_state(node, undo.port.port).linked:
            driver.console(f'ReLink "{node}"[{undo.port.port}]')
        apply_undo(undo, store, twin, user=_USER, force=True)
        deadline = time.monotonic() + timeout
        while driver.port_state(node, undo.port.port).state != "Active":
            if time.monotonic() > deadline:
                ok = False
                break
            time.sleep(0.05)
    return ok
