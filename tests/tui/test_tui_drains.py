"""Drains from the TUI against the real 4-node Slurm on loopback (tests/slurm.py): the drain of a
recommendation applies only after the Slurm node's name is typed in the plan window, shows the
labelled dry run first and lands in the audit log like ``ibfab drain recommended --apply``; the
changes screen lists open drains with their age beside isolations, and resumes one only after the
re-test window, once its name is typed, audited as undoing the drain.

The fabric's hosts cn0001..cn0004 are the Slurm nodes node1..node4 (a node map says so); cn0001's
only cable has a critical bit error rate, so isolating it would cut the host off and the advice
is to drain it.
"""

from __future__ import annotations

import shlex
import threading
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from fabric.advise.candidates import resolve_port
from fabric.app.discovery.discover import discover_text
from fabric.app.readmodel.service import FabricService
from fabric.app.session import Session, StoreAccess
from fabric.app.slurm import parse_node_map
from fabric.store import Store
from probes.slurm import SlurmUnavailable
from probes.slurm_parse import SINFO_REASONS, parse_reasons
from tests.slurm import SlurmCluster, slurm, slurm_cluster
from tests.tui.test_tui import SIZE, run_async, settle, table_rows, top
from tests.tui_data import SNAPSHOT_EVERY_S, T0, counter_rows
from topology.generate import generate, to_ibnetdiscover
from tui.app import IbfabApp, build_app
from tui.messages import ActionApplied
from tui.screens import confirm
from tui.screens.confirm import GRACE_S, ConfirmChange, Waiting
from tui.screens.detail import DetailScreen
from tui.screens.links import LinksScreen
from tui.screens.operations import OperationsScreen
from tui.screens.recommendations import RecommendationsScreen

__all__ = ["slurm", "slurm_cluster"]

FOUR_HOSTS = "leafspine:leaves=2,spines=2,hosts=2,radix=40,speed=HDR"
NODE_MAP = parse_node_map("cn[0001-0004] node[1-4]\n")


def four_host_store(path: Path) -> Path:
    """16 snapshots of the 4-host fabric; cn0001's only cable (leaf-01 port 1) gains symbol errors."""
    text = to_ibnetdiscover(generate(FOUR_HOSTS))
    d = discover_text(text, "generated")
    ref = resolve_port(d.fabric, d.classification, "leaf-01:1")
    bad: dict[tuple[str, int], dict[str, int]] = {(ref.guid, ref.port): {"symbol_errors": 4000}}
    with Store.open(path) as store:
        topo = store.save_topology(d.fabric, text, "ibnetdiscover", "generated", taken_at=T0 - 10)
        for i in range(16):
            when = T0 + i * SNAPSHOT_EVERY_S
            store.save_counter_snapshot(when, "synthetic", topo, counter_rows(d.fabric, when, i, bad))
    return path


def reasons(cluster: SlurmCluster) -> dict[str, str]:
    out = cluster.client("sinfo", "-R", "-h", "-N", "-o", SINFO_REASONS).stdout
    return {d.node: d.reason for d in parse_reasons(out)}


async def applied(pilot: Pilot[None], app: IbfabApp, count: int = 1) -> list[ActionApplied]:
    # A deadline, not a speed test: the change runs scontrol against the real Slurm, which takes
    # seconds on a loaded 2-core machine (10 s was too short under a busy fresh-clone run).
    for _ in range(1200):
        done = [m for m in app.messages_seen if isinstance(m, ActionApplied)]
        if len(done) >= count:
            return done
        await pilot.pause(0.05)
    raise AssertionError("no ActionApplied posted")


def service(path: Path, cluster: SlurmCluster) -> FabricService:
    return FabricService(Session(store=StoreAccess(path), node_map=NODE_MAP), slurm_env=cluster.env)


def shown(app: IbfabApp) -> object:
    """The screen on top, untyped: mypy would narrow app.screen across the awaits that change it."""
    return app.screen


async def plan_window(pilot: Pilot[None], app: IbfabApp) -> ConfirmChange:
    """The plan's window, once Slurm has answered (asked off the UI thread, behind Waiting)."""
    for _ in range(1200):  # a deadline (60 s): Slurm answers slowly on a loaded machine
        if isinstance(app.screen, ConfirmChange):
            return app.screen
        await pilot.pause(0.05)
    raise AssertionError(f"no plan window; on screen: {app.screen!r}")


@run_async
async def test_while_slurm_is_asked_the_ui_draws_and_typed_keys_go_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slurm slow to answer (its client blocks until released here: the boundary that cannot be
    made slow for real) keeps the UI drawing behind a Waiting window: screen keys typed meanwhile
    open nothing, escape gives up and the late answer shows nothing; an answer that is an error
    closes the window with the error."""
    path = four_host_store(tmp_path / "tui.db")
    svc = FabricService(Session(store=StoreAccess(path), node_map=NODE_MAP))
    release = threading.Event()
    asked: list[str] = []

    def slow_slurm(advice: object) -> object:
        asked.append(str(advice))
        release.wait(10)
        raise SlurmUnavailable("slurm: the controller did not answer in 10 s", ())

    monkeypatch.setattr(svc, "drain_plan", slow_slurm)
    app = build_app(svc, poll_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("r")
        screen = app.screen
        assert isinstance(screen, RecommendationsScreen)
        kinds = [a.kind for a in screen.advice]
        screen.query_one("#advice", DataTable).move_cursor(row=kinds.index("drain_node"))
        await pilot.press("enter", *"el2c", "enter")  # screen keys typed while Slurm is asked
        waiting = app.screen
        assert isinstance(waiting, Waiting) and len(asked) == 1
        await pilot.pause(0.2)
        assert shown(app) is waiting  # nothing opened: the keys went nowhere
        await pilot.press("escape")  # give up
        assert shown(app) is screen
        release.set()
        await pilot.pause(0.3)
        assert shown(app) is screen  # the late answer shows nothing
        # asked again, the answer is an error: the window closes and says it
        release.clear()
        await pilot.press("enter")
        assert isinstance(shown(app), Waiting)
        release.set()
        for _ in range(100):
            if shown(app) is screen:
                break
            await pilot.pause(0.05)
        assert shown(app) is screen and len(asked) == 2


@pytest.mark.slurm
@run_async
async def test_drain_of_a_recommendation_needs_the_node_name_and_is_audited(
    slurm: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the name box opens when the test says (open_box), not after a pause a loaded machine may
    # stretch past while the keys behind enter are still being typed
    monkeypatch.setattr(confirm, "GRACE_S", 3600.0)
    path = four_host_store(tmp_path / "tui.db")
    app = build_app(service(path, slurm), poll_seconds=None)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            # typed into the links filter, the node's name and enter do nothing to Slurm
            await pilot.press("l", "slash", *"node1 drain", "enter")
            assert isinstance(app.screen, LinksScreen)
            await pilot.press("r")
            screen = app.screen
            assert isinstance(screen, RecommendationsScreen)
            kinds = [a.kind for a in screen.advice]
            assert "drain_node" in kinds, kinds
            table = screen.query_one("#advice", DataTable)
            table.move_cursor(row=kinds.index("drain_node"))
            await pilot.press("enter", *"node1", "enter")  # typed behind enter: dropped, never a name
            modal = await plan_window(pilot, app)
            assert modal.blocked is None and modal.target == "node1"
            # the dry run, labelled: the finding, Slurm's state now, the command and its undo
            plan = modal.plan_text.splitlines()
            assert plan[0].startswith("drain node1 (fabric host cn0001): ") and "critical" in plan[0]
            assert "  slurm now: idle" in plan
            assert any(
                ln.startswith("  [slurm apply] scontrol update NodeName=node1 State=DRAIN 'Reason=ibfab: ")
                for ln in plan
            )
            assert any(
                ln.startswith("  [slurm undo] scontrol update NodeName=node1 State=RESUME") for ln in plan
            )
            assert "changes Slurm" in str(modal.query_one("#confirm-prompt").render())
            assert reasons(slurm) == {} and not modal.confirmed
            assert modal.query_one("#confirm-name", Input).value == ""  # the keys behind enter: dropped
            modal.open_box()  # the grace period over
            await pilot.press(*"node2", "enter")  # a wrong name: refused, still open
            assert top(app) is modal and reasons(slurm) == {}
            await pilot.press(*["backspace"] * 5, *"node1", "enter")
            (done,) = await applied(pilot, app)
            assert done.ok, done.result
            why = reasons(slurm)
            assert (
                list(why) == ["node1"] and why["node1"].startswith("ibfab: ") and "leaf-01:1" in why["node1"]
            )
            with Store.open(path) as store:
                (entry,) = store.audit_log()
            assert (entry.action, entry.target, entry.result) == ("drain", "node1 (fabric host cn0001)", "ok")
            assert entry.command.startswith("scontrol update NodeName=node1 State=DRAIN")
            assert done.result.startswith(f"audit {entry.id}: {entry.command}: ok")
            # the changes screen lists it with its age; inside the re-test window it cannot resume
            await pilot.press("c")
            assert isinstance(app.screen, OperationsScreen)
            (row,) = table_rows(app, "#ops-open")
            assert f"{entry.id}  drain  node1 (fabric host cn0001)" in row and "s ago" in row
            await pilot.press("enter")
            blocked = await plan_window(pilot, app)
            assert blocked.target == "node1"
            assert blocked.blocked is not None and "re-test it clean for 126 min" in blocked.blocked
            assert f"ibfab drain undo {entry.id} --force" in blocked.blocked
            assert "  [slurm apply] scontrol update NodeName=node1 State=RESUME" in blocked.plan_text
            assert not blocked.query("#confirm-name")
            await pilot.press("escape", "d")  # d on a drain: the drained host
            await pilot.pause(0.2)
            detail = app.screen
            assert isinstance(detail, DetailScreen) and detail.guid is not None
            assert app.view is not None and app.view.name(detail.guid).startswith("cn0001")
        assert list(reasons(slurm)) == ["node1"]  # nothing resumed it
    finally:
        slurm.client("scontrol", "update", "NodeName=node1", "State=RESUME", check=False)
        slurm.wait_idle(("node1",))


@pytest.mark.slurm
@run_async
async def test_resume_after_the_window_needs_the_name_and_is_audited_as_the_undo(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    path = four_host_store(tmp_path / "tui.db")
    # a drain ibfab made three hours ago (the node drained with ibfab's reason, the audit entry then)
    slurm.client("scontrol", "update", "NodeName=node2", "State=DRAIN", "Reason=ibfab: BER on leaf-01:2")
    cmd = "scontrol update NodeName=node2 State=DRAIN 'Reason=ibfab: BER on leaf-01:2'"
    with Store.open(path) as store:
        drained = store.audit(
            "operator", "drain", "node2 (fabric host cn0002)", cmd, "ok", when=time.time() - 3 * 3600,
            argv=shlex.split(cmd), nodes=("node2",), hosts=("cn0002",),
        )  # fmt: skip
    app = build_app(service(path, slurm), poll_seconds=None)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press("c")
            (row,) = table_rows(app, "#ops-open")
            assert f"{drained}  drain  node2 (fabric host cn0002)" in row and "3.0 h ago" in row
            await pilot.press("enter", "u")
            modal = await plan_window(pilot, app)
            assert modal.blocked is None and modal.target == "node2"
            assert "re-test window of 126 min passed" in modal.plan_text
            await pilot.press(*"node2", "enter")  # before the box opens: dropped
            assert top(app) is modal and list(reasons(slurm)) == ["node2"]
            await pilot.pause(GRACE_S + 0.2)
            await pilot.press(*"node2", "enter")
            (done,) = await applied(pilot, app)
            assert done.ok, done.result
            with Store.open(path) as store:
                resumed = store.audit_log()[-1]
            assert (resumed.action, resumed.undo_of, resumed.command) == (
                "resume",
                drained,
                "scontrol update NodeName=node2 State=RESUME",
            )
            assert reasons(slurm) == {}
            await pilot.pause(0.2)
            assert table_rows(app, "#ops-open") == []
    finally:
        slurm.client("scontrol", "update", "NodeName=node2", "State=RESUME", check=False)
        slurm.wait_idle(("node2",))
