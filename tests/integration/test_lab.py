"""The lab against the real tools: ibsim + OpenSM brought up once per module, torn down always."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.lab import lab as lab_group
from fabric.lab import simulator as lab
from topology.errors import LabError, UsageError
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Fabric

pytestmark = pytest.mark.lab

NAME = "t1"
FAULTS = ("degraded-width:leaf-su01-r0:3", "missing-hca:dgx-0003:5", "miswire:dgx-0002:1:2")


@pytest.fixture(scope="module")
def lab_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("labs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IBFAB_LAB_DIR", str(root))
        lab.up("rail-small", FAULTS, NAME)
        try:
            yield root
        finally:
            for state in lab.list_labs():
                lab.down(state.name)


@pytest.fixture
def running(lab_root: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    # conftest points IBFAB_LAB_DIR at a per-test directory; use the module's lab instead.
    monkeypatch.setenv("IBFAB_LAB_DIR", str(lab_root))
    return NAME


def _discover(name: str) -> Fabric:
    result = lab.run_tool(name, ["ibnetdiscover"], timeout=30)
    return parse_ibnetdiscover(result.stdout.splitlines(), "ibnetdiscover")


def test_discovery_sees_the_designed_fabric(running: str) -> None:
    design = lab.design_of(running)
    fabric = _discover(running)
    assert len(fabric.switches()) == len(design.switches) == 20
    assert len(fabric.hcas()) == len(design.present_hcas()) == 63
    assert "dgx-0003 mlx5_5" not in {n.description for n in fabric.hcas()}
    # The miswire is visible as built: mlx5_1 of dgx-0002 sits on the rail-2 leaf, port 2.
    leaf = fabric.find("MF0;leaf-su01-r2:MQM9700/U1")
    peers = {port: fabric.node(far.guid).description for port, far, _ in fabric.neighbours(leaf.guid)}
    assert peers[2] == "dgx-0002 mlx5_1"
    state = lab.status(running)
    assert state.running and state.hcas == 63 and state.faults == FAULTS


def test_planted_1x_link_shows_in_iblinkinfo_and_ports_report(running: str) -> None:
    out = lab.run_tool(running, ["iblinkinfo"], timeout=30).stdout
    one_x = [ln for ln in out.splitlines() if "==( 1X" in ln]
    assert len(one_x) == 2  # both ends of leaf-su01-r0 port 3 <-> dgx-0003 mlx5_0
    assert any('"dgx-0003 mlx5_0"' in ln for ln in one_x)
    ports = lab.run_tool(running, ["ibnetdiscover", "-p"], timeout=30).stdout
    assert len(re.findall(r"\b1x HDR\b", ports)) == 2


def test_link_down_hides_a_ca_and_link_up_brings_it_back(running: str) -> None:
    target = "dgx-0006 mlx5_2"
    lab.link_down(running, target, 1)
    try:
        after_down = {n.description for n in _discover(running).hcas()}
        assert target not in after_down and len(after_down) == 62
    finally:
        lab.link_up(running, target, 1)
    back = {n.description for n in _discover(running).hcas()}
    assert target in back and len(back) == 63


def test_counter_set_on_the_console_is_read_by_perfquery(running: str) -> None:
    leaf = _discover(running).find("MF0;leaf-su01-r1:MQM9700/U1")
    reply = lab.set_counter(running, "leaf-su01-r1", 2, "SymbolErrorCounter", 77)
    assert reply == "leaf-su01-r1[2] PortCounters.SymbolErrorCounter has been set to 77"
    lab.set_counter(running, "leaf-su01-r1", 2, "link_downed", 3)  # ibfab counter names work too
    out = lab.run_tool(running, ["perfquery", str(leaf.lid), "2"], timeout=30).stdout
    assert re.search(r"^SymbolErrorCounter:\.+77$", out, re.MULTILINE)
    assert re.search(r"^LinkDownedCounter:\.+3$", out, re.MULTILINE)


def test_console_errors_and_error_rate(running: str) -> None:
    with pytest.raises(LabError, match=r'nodeid "no-such-node" .*not found'):
        lab.console(running, 'Dump "no-such-node"')
    with pytest.raises(LabError, match="field Bogus cannot be found"):
        lab.set_counter(running, "spine-01", 1, "Bogus", 1)
    lab.set_error_rate(running, "spine-02", 30, port=1)
    try:
        assert "# err_rate 30" in lab.console(running, 'Dump "spine-02"')
    finally:
        lab.set_error_rate(running, "spine-02", 0, port=1)
    # Longer than ibsim's 127-byte console line: goes through a command file.
    long_reply = lab.console(running, "Dump " + " ".join(['"spine-01"'] * 14))
    assert long_reply.count('Switch 64 "spine-01"') == 1


def test_resweep_makes_opensm_sweep_again(running: str) -> None:
    log = Path(lab.opensm_log(running))
    before = log.read_text().count("SUBNET UP")
    lab.resweep(running)
    deadline = time.monotonic() + 20
    while log.read_text().count("SUBNET UP") == before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert log.read_text().count("SUBNET UP") > before
    assert (Path(lab.opensm_dump_dir(running)) / "opensm-lfts.dump").is_file()


def test_second_up_is_refused_and_down_leaves_nothing(running: str) -> None:
    with pytest.raises(LabError, match="already running"):
        lab.up("rail-small", (), running)
    state = lab.up("leafspine:leaves=2,spines=1,hosts=2,radix=40", (), "t2")
    assert state.running and state.switches == 3 and state.hcas == 4
    stopped = lab.down("t2")
    for pid in (stopped.ibsim_pid, stopped.opensm_pid):
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or ") Z" in stat.read_text()  # gone, or a zombie nobody reaped
    root = Path(stopped.directory)
    assert not (root / "console.fifo").exists() and not (root / "state.json").exists()
    assert not list((root / "scratch").glob("sys-*"))
    with pytest.raises(LabError, match="no lab named 't2'"):
        lab.status("t2")


def test_bad_spec_and_name_are_usage_errors(running: str) -> None:
    with pytest.raises(UsageError, match="unknown kind or preset 'mesh'"):
        lab.up("mesh:size=3", (), "t3")
    with pytest.raises(UsageError, match="lab name"):
        lab.up("rail-small", (), "../evil")
    assert not (lab.labs_root() / "t3").exists()


def test_cli_status_json(running: str) -> None:
    result = CliRunner().invoke(lab_group, ["status", "--name", running, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["running"] is True and data["name"] == running
    assert (data["switches"], data["hcas"]) == (20, 63)
    assert data["env"]["IBSIM_SOCKNAME"].startswith(f"ibfab-{running}-")
    missing = CliRunner().invoke(lab_group, ["status", "--name", "nope"])
    assert isinstance(missing.exception, LabError)


# -- link changes return once the fabric shows them (the demo's flap read the fabric mid-sweep) ----
def _sm_log(name: str) -> str:
    return Path(lab.opensm_log(name)).read_text(errors="replace")


def _swept_after_every_trap(text: str) -> bool:
    return text.rfind("SUBNET UP") > max(text.rfind("Received Generic Notice"), -1)


def test_link_down_and_up_wait_for_the_ports_and_the_sm(running: str) -> None:
    """With OpenSM paused, a replugged port stays Init and link_up does not return; once OpenSM
    runs it sweeps, the ports go Active and link_up returns with the SM idle (what is read next is
    the replugged fabric, not one the SM is still reprogramming)."""
    import os
    import signal
    import threading

    sm = lab.status(running).opensm_pid
    node, port = "leaf-su01-r1", 6
    mark = len(_sm_log(running))
    lab.link_down(running, node, port)
    after = _sm_log(running)[mark:]
    assert lab.port_line(running, node, port).state == "Down"
    assert "Received Generic Notice" in after and _swept_after_every_trap(after)
    done = threading.Event()
    failed: list[BaseException] = []

    def plug() -> None:
        try:
            lab.link_up(running, node, port)
        except BaseException as exc:  # reported below
            failed.append(exc)
        done.set()

    mark = len(_sm_log(running))
    os.kill(sm, signal.SIGSTOP)
    try:
        worker = threading.Thread(target=plug)
        worker.start()
        # The simulator relinks at once; only the SM makes the ports Active.
        deadline = time.monotonic() + 10
        while lab.port_line(running, node, port).state != "Init" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert lab.port_line(running, node, port).state == "Init"
        assert not done.wait(1.0), "link_up returned while the SM could not sweep"
    finally:
        os.kill(sm, signal.SIGCONT)
    assert done.wait(30) and not failed, failed
    worker.join()
    line = lab.port_line(running, node, port)
    assert line.state == "Active" and line.far == ("spine-02", 2)
    assert lab.port_line(running, "spine-02", 2).state == "Active"
    assert _swept_after_every_trap(_sm_log(running)[mark:])


def test_unplugging_the_sms_own_cable_waits_for_no_sweep(running: str) -> None:
    # No SM is left to sweep: link_down returns once the port is down, not after its timeout.
    sm_hca = next(n for n in ("dgx-0001 mlx5_0", "dgx-0001 mlx5_1") if lab.port_line(running, n, 1).is_sm)
    start = time.monotonic()
    lab.link_down(running, sm_hca, 1, timeout=20)
    try:
        assert time.monotonic() - start < 10
        assert lab.port_line(running, sm_hca, 1).state == "Down"
    finally:
        lab.link_up(running, sm_hca, 1)
    assert lab.port_line(running, sm_hca, 1).state == "Active"
