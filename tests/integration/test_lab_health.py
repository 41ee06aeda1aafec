"""`ibfab lab status` asks the lab itself (its console's clients, a new client attaching, the SM),
so a lab whose processes run but that refuses every new client, or whose ibsim or OpenSM is gone,
says so and exits 6; `ibfab lab restart` brings it back. Each case breaks a real lab for real."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from fabric.cli.lab import lab as lab_group
from fabric.lab import check as labcheck
from fabric.lab import simulator as lab
from fabric.lab.check import Trouble

pytestmark = pytest.mark.lab

NAME = "health"
_DEADLINE = 60.0  # for a client to show in the console: a deadline, not a speed


@pytest.fixture
def running() -> Iterator[str]:
    lab.up("rail-small", (), NAME)  # IBFAB_LAB_DIR is per test (conftest)
    try:
        yield NAME
    finally:
        for state in lab.list_labs():
            lab.down(state.name)


def _status(name: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(lab_group, ["status", "--name", name])
    return result.exit_code, result.stdout, result.stderr


def _attached_pids(name: str) -> set[int]:
    return {int(pid) for pid in re.findall(r"pid (\d+) connected", lab.console(name, "Attached"))}


def _leak_a_slot(name: str, switch_guid: str) -> None:
    """A client that stays attached (iblinkinfo --switch never ends on ibsim), SIGKILLed once
    ibsim lists it: its slot stays taken, as a killed collection's tool leaves it."""
    env = {**os.environ, **lab.tool_env(name)}
    proc = subprocess.Popen(
        ["iblinkinfo", "-S", switch_guid],
        env=env,
        cwd=lab.tool_cwd(name),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + _DEADLINE
        while proc.pid not in _attached_pids(name) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def _works(name: str) -> None:
    health = labcheck.check(name)
    assert health.healthy, health.problems
    code, out, err = _status(name)
    assert code == 0 and err == "", (out, err)
    assert f"{name}: running" in out and "a new client attached and was answered" in out
    assert "SMINFO_MASTER" in out
    topo = lab.run_tool(name, ["ibnetdiscover"], timeout=60).stdout
    assert topo.count("\nSwitch") == 20  # the whole fabric, routed by a fresh OpenSM


def test_a_working_lab_says_so(running: str) -> None:
    _works(running)
    health = labcheck.check(running)
    assert health.clients is not None and [c.is_sm for c in health.clients] == [True]  # OpenSM alone
    assert health.to_dict()["healthy"] is True and health.to_dict()["problems"] == []


def test_a_lab_that_refuses_new_clients_says_so_and_restart_brings_it_back(running: str) -> None:
    switch = re.search(r"0x[0-9a-f]{16}", lab.run_tool(running, ["ibswitches"]).stdout)
    assert switch is not None
    for _ in range(labcheck.CLIENT_SLOTS + 2):  # the slots OpenSM leaves, then one more try
        if labcheck.check(running).problems:
            break
        _leak_a_slot(running, switch.group(0))
    health = labcheck.check(running)
    assert [p.trouble for p in health.problems] == [Trouble.CLIENTS_REFUSED]
    assert "connect failed" in health.problems[0].detail  # the client's own words
    state = health.state
    assert state.ibsim_alive and state.opensm_alive  # what `status` used to call "running"

    code, out, err = _status(running)
    assert code == 6
    assert f"{running}: SICK" in out
    assert (
        f"ibsim refuses new clients ({labcheck.CLIENT_SLOTS} of {labcheck.CLIENT_SLOTS} client slots held"
        in out
    )
    assert f"ibfab lab restart --name {running}" in out
    assert (
        err.startswith(f"ibfab: lab {running} is not working: ibsim refuses new clients")
        and err.count("\n") == 1
    )

    result = CliRunner().invoke(lab_group, ["restart", "--name", running])
    assert result.exit_code == 0, result.output
    assert f"lab {running} restarted" in result.stdout
    new = lab.status(running)
    assert (new.ibsim_pid, new.opensm_pid) != (state.ibsim_pid, state.opensm_pid)
    assert not any(lab.alive(pid, p) for pid, p in ((state.ibsim_pid, "ibsim"), (state.opensm_pid, "opensm")))
    _works(running)


@pytest.mark.parametrize("program", ["ibsim", "opensm"])
def test_a_lab_whose_process_was_killed_says_so_and_restart_brings_it_back(
    running: str, program: str
) -> None:
    state = lab.status(running)
    pid = state.ibsim_pid if program == "ibsim" else state.opensm_pid
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + _DEADLINE
    while lab.alive(pid, program) and time.monotonic() < deadline:
        time.sleep(0.05)

    health = labcheck.check(running)
    troubles = [p.trouble for p in health.problems]
    if program == "ibsim":
        assert troubles[0] is Trouble.IBSIM_GONE and health.problems[0].detail == f"pid {pid}"
    else:
        assert troubles == [Trouble.OPENSM_GONE, Trouble.SM_SILENT]  # and a client says so too
    code, out, err = _status(running)
    assert code == 6 and f"{running}: DEAD" in out
    assert f"{program} (pid {pid}) is not running" in out and err.startswith(
        f"ibfab: lab {running} is not working"
    )

    assert CliRunner().invoke(lab_group, ["restart", "--name", running]).exit_code == 0
    _works(running)
