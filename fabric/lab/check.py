"""Whether a lab works now, asked of the lab itself, and a clean restart of one that does not.

A lab whose processes run can still be broken: ibsim has 10 client slots and a client killed by a
signal keeps its slot (ibsim frees it only when a write to it fails), so after enough SIGKILLed
tools every new client is refused (``sim_init: connect failed``) while both PIDs are alive.
:func:`check` therefore does what a client does: it reads the simulator console's client list,
attaches a client that asks the simulator for its own port (``smpquery -D nodeinfo 0``, direct
route: no SM needed) and asks the subnet manager who it is (``sminfo``); each answer that is not
what a working lab gives is a :class:`LabProblem` with the tool's own words.

:func:`restart` stops OpenSM and ibsim by their recorded PIDs and brings the same design up
again, OpenSM with the routing and QoS options it had (a new socket, fresh client slots, OpenSM sweeping from scratch); what was injected into
the running simulator (unplugged cables, set counters) is gone with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from fabric.lab import simulator as lab
from fabric.lab.simulator.lifecycle import bring_up, designed, teardown
from fabric.lab.simulator.state import locked, paths_of, read_state
from topology.errors import CommandFailed, LabError

# The probes are quick on a working lab (measured: ~0.1 s each); these are deadlines for a
# simulator that has stopped answering, not speeds.
PROBE_TIMEOUT = 15.0
CONSOLE_TIMEOUT = 10.0
CLIENT_SLOTS = 10  # ibsim 0.10's IBSIM_MAX_CLIENTS
_CLIENT = re.compile(r"^Client (\d+): pid (\d+) connected at .*?(\bSM)?\s*$", re.MULTILINE)
_REFUSED = ("sim_init: connect failed", "can't open new connection")
_IBWARN = re.compile(r"^\s*ib(?:warn|panic|error): \[\d+\] ")  # the tools' prefix with their PID


class Trouble(StrEnum):
    """What can be wrong with a lab."""

    IBSIM_GONE = "ibsim_gone"  # its process is not running
    OPENSM_GONE = "opensm_gone"
    CONSOLE_SILENT = "console_silent"  # the simulator does not answer its console
    CLIENTS_REFUSED = "clients_refused"  # a new client cannot attach (its slots are all held)
    MAD_FAILED = "mad_failed"  # a client attached but the simulator did not answer it
    SM_SILENT = "sm_silent"  # sminfo gets no answer from the subnet manager
    SM_NOT_MASTER = "sm_not_master"  # the SM answers but is not the master


@dataclass(frozen=True, slots=True)
class LabProblem:
    trouble: Trouble
    detail: str  # the evidence: a PID, the tool's last line, the SM state


@dataclass(frozen=True, slots=True)
class LabClient:
    """One of ibsim's client slots as its console lists it."""

    slot: int
    pid: int
    alive: bool  # the process still runs (a dead one holds its slot until ibsim notices)
    is_sm: bool


@dataclass(frozen=True, slots=True)
class LabHealth:
    state: lab.LabState
    problems: tuple[LabProblem, ...]
    clients: tuple[LabClient, ...] | None  # None: the console was not asked or did not answer
    sm: str  # sminfo's answer ("" when not asked or no answer)

    @property
    def healthy(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, object]:
        data = self.state.to_dict()
        data["healthy"] = self.healthy
        data["problems"] = [{"trouble": p.trouble.value, "detail": p.detail} for p in self.problems]
        data["clients"] = (
            None
            if self.clients is None
            else [{"slot": c.slot, "pid": c.pid, "alive": c.alive, "sm": c.is_sm} for c in self.clients]
        )
        data["sm"] = self.sm
        return data


def check(name: str = "default") -> LabHealth:
    """Lab ``name`` asked now: its processes, its console's clients, a client attach and an SM
    query (LabError only when there is no such lab)."""
    state = lab.status(name)
    problems: list[LabProblem] = []
    if not state.ibsim_alive:
        problems.append(LabProblem(Trouble.IBSIM_GONE, f"pid {state.ibsim_pid}"))
    if not state.opensm_alive:
        problems.append(LabProblem(Trouble.OPENSM_GONE, f"pid {state.opensm_pid}"))
    if not state.ibsim_alive:  # nothing to ask
        return LabHealth(state, tuple(problems), None, "")
    clients: tuple[LabClient, ...] | None = None
    try:
        clients = _clients(lab.console(name, "Attached", timeout=CONSOLE_TIMEOUT))
    except LabError as exc:
        problems.append(LabProblem(Trouble.CONSOLE_SILENT, exc.one_line()))
    attached, said = _ask(name, ["smpquery", "-D", "nodeinfo", "0"])
    sm = ""
    if not attached:
        refused = any(word in said for word in _REFUSED)
        problems.append(LabProblem(Trouble.CLIENTS_REFUSED if refused else Trouble.MAD_FAILED, said))
    else:
        answered, said = _ask(name, ["sminfo"])
        if not answered or not said.startswith("sminfo: sm lid"):
            problems.append(LabProblem(Trouble.SM_SILENT, said))
        else:
            sm = said
            if "SMINFO_MASTER" not in said:
                problems.append(LabProblem(Trouble.SM_NOT_MASTER, said))
    return LabHealth(state, tuple(problems), clients, sm)


def _ask(name: str, argv: list[str]) -> tuple[bool, str]:
    """Run ``argv`` as a lab client: (True, its first line of output) or (False, the last line it
    said about failing)."""
    try:
        result = lab.run_tool(name, argv, timeout=PROBE_TIMEOUT)
    except (CommandFailed, LabError) as exc:
        said = exc.stderr if isinstance(exc, CommandFailed) else exc.one_line()
        lines = [_IBWARN.sub("", ln).strip() for ln in said.splitlines() if "sim_connect: attached" not in ln]
        lines = [ln for ln in lines if ln]
        return False, (lines[-1] if lines else exc.one_line())[:300]
    return True, next(iter(result.stdout.strip().splitlines()), "")


def _clients(reply: str) -> tuple[LabClient, ...]:
    return tuple(
        LabClient(int(m.group(1)), int(m.group(2)), _runs(int(m.group(2))), m.group(3) is not None)
        for m in _CLIENT.finditer(reply)
    )


def _runs(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return not stat[stat.rfind(")") + 2 :].startswith(("Z", "X"))


def restart(name: str = "default") -> lab.LabState:
    """Stop lab ``name``'s OpenSM and ibsim (by their recorded PIDs, whatever state they are in)
    and bring its design up again; LabError when there is no such lab or it does not come up."""
    # the simulator's own steps (its lock, teardown and bring-up), so a restart is exactly a down and an
    # up of the same design, never a second lab beside the first
    paths = paths_of(name)
    with locked(paths.root / "lab.lock"):
        state = read_state(paths)
        if state is None:
            raise LabError(f"no lab named {name!r} (start one with 'ibfab lab up --name {name}')")
        if (paths.root / lab.TWIN_FILE).is_file():
            # a twin copies a discovered fabric (and its SM's engine): it is built from that source
            raise LabError(
                f"lab {name!r} is a twin of a real fabric: rebuild it with "
                f"'ibfab lab up --from SOURCE --name {name}'"
            )
        design = lab.design_of(name)
        teardown(paths, state)
        return bring_up(paths, name, designed(design), state.sm_options)
