"""Where labs live and what each records: its directory (:class:`LabPaths`), ``state.json`` read
back as a :class:`LabState` with liveness checked now, and what it simulates (its design, a
twin's node ids).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fabric.lab.simulator.processes import alive
from topology.errors import LabError, UsageError
from topology.generate import (
    Design,
    design_from_dict,
)

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
TWIN_FILE = "twin.json"  # in a twin's directory: what it copies (see fabric.app.twin)


@dataclass(frozen=True, slots=True)
class LabState:
    name: str
    directory: str
    spec: str
    faults: tuple[str, ...]
    sockname: str
    ibsim_pid: int
    opensm_pid: int
    started: float  # epoch seconds
    up_seconds: float  # how long `up` took
    switches: int
    hcas: int  # present HCAs (absent ones planted by faults are not counted)
    ibsim_alive: bool
    opensm_alive: bool
    sm_options: tuple[str, ...] = ()  # OpenSM's routing and QoS options (-R ENGINE, -U DUMP, -Q)

    @property
    def running(self) -> bool:
        return self.ibsim_alive and self.opensm_alive

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["faults"] = list(self.faults)
        data["sm_options"] = list(self.sm_options)
        data["running"] = self.running
        data["env"] = {"LD_PRELOAD": UMAD2SIM, "IBSIM_SOCKNAME": self.sockname}
        data["tool_cwd"] = str(Path(self.directory) / "scratch")
        return data


@dataclass(frozen=True, slots=True)
class LabPaths:
    """The files of one lab, all inside its directory."""

    root: Path
    net: Path
    design: Path
    fifo: Path
    ibsim_out: Path
    ibsim_err: Path
    osm_log: Path
    osm_dir: Path  # OSM_TMP_DIR and OSM_CACHE_DIR: OpenSM's dumps and caches
    scratch: Path  # the clients' CWD (umad2sim writes ./sys-<pid> there)
    state: Path

    @classmethod
    def at(cls, root: Path) -> LabPaths:
        names = ("fabric.net", "design.json", "console.fifo", "ibsim.out", "ibsim.err", "osm.log")
        return cls(root, *(root / n for n in (*names, "opensm", "scratch", "state.json")))


def labs_root() -> Path:
    """``$IBFAB_LAB_DIR``, else ``$XDG_STATE_HOME/ibfab/labs``, else ``~/.local/state/ibfab/labs``."""
    explicit = os.environ.get("IBFAB_LAB_DIR")
    if explicit:
        return Path(explicit)
    state_home = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state_home) / "ibfab" / "labs"


def lab_dir(name: str) -> Path:
    if not _NAME.match(name):
        raise UsageError(f"lab name {name!r}: use up to 32 letters, digits, '.', '_' or '-'")
    return labs_root() / name


def paths_of(name: str) -> LabPaths:
    return LabPaths.at(lab_dir(name))


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_state(paths: LabPaths) -> LabState | None:
    try:
        data = json.loads(paths.state.read_text())
        ibsim_pid, opensm_pid = int(data["ibsim_pid"]), int(data["opensm_pid"])
        return LabState(
            name=str(data["name"]),
            directory=str(paths.root),
            spec=str(data["spec"]),
            faults=tuple(data["faults"]),
            sockname=str(data["sockname"]),
            ibsim_pid=ibsim_pid,
            opensm_pid=opensm_pid,
            started=float(data["started"]),
            up_seconds=float(data["up_seconds"]),
            switches=int(data["switches"]),
            hcas=int(data["hcas"]),
            ibsim_alive=alive(ibsim_pid, "ibsim"),
            opensm_alive=alive(opensm_pid, "opensm"),
            sm_options=tuple(str(x) for x in data.get("sm_options", ())),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LabError(f"{paths.state}: unreadable lab state ({exc})") from exc


def status(name: str = "default") -> LabState:
    """The recorded state of lab ``name`` with liveness checked now; LabError if there is none."""
    state = read_state(paths_of(name))
    if state is None:
        raise LabError(f"no lab named {name!r} (start one with 'ibfab lab up --name {name}')")
    return state


def list_labs() -> list[LabState]:
    root = labs_root()
    if not root.is_dir():
        return []
    found = (read_state(LabPaths.at(d)) for d in sorted(root.iterdir()) if (d / "state.json").is_file())
    return [s for s in found if s is not None]


def running_lab(name: str) -> tuple[LabPaths, LabState]:
    state = status(name)
    if not state.ibsim_alive:
        raise LabError(f"lab {name!r} is not running (ibsim pid {state.ibsim_pid} is gone)")
    return paths_of(name), state


def console_node(name: str, guid: str) -> str:
    """The simulator's node id (what its console takes) of the node ``guid`` in lab ``name``: a
    generated lab's switch name or HCA description, a twin's ``S-``/``H-`` id; LabError if none."""
    twin = paths_of(name).root / TWIN_FILE
    if twin.is_file():
        try:
            ids = json.loads(twin.read_text())["node_ids"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LabError(f"{twin}: unreadable twin record ({exc})") from exc
        if guid in ids:
            return str(ids[guid])
        raise LabError(f"{guid} is not a node of lab {name!r}")
    design = design_of(name)
    for s in design.switches:
        if s.guid == guid:
            return s.name
    for h in design.hcas:
        if h.guid == guid:
            return h.description
    raise LabError(f"{guid} is not a node of lab {name!r}")


def design_of(name: str = "default") -> Design:
    """The design (intended fabric and planted faults) of lab ``name``."""
    path = paths_of(name).design
    try:
        return design_from_dict(json.loads(path.read_text()), str(path))
    except (OSError, ValueError) as exc:
        raise LabError(f"{path}: cannot read the lab design ({exc})") from exc
