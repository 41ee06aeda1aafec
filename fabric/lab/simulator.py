"""The lab: a simulated fabric (ibsim + OpenSM) that the real infiniband-diags tools run against.

One directory per lab name holds everything: the net file, the design, the console FIFO, ibsim's
stdout/stderr, OpenSM's log and dumps, a scratch directory for clients (umad2sim writes
``./sys-<pid>`` there) and ``state.json`` with the PIDs and the socket name. ibsim and OpenSM run
in their own sessions so that they outlive the CLI; ``down`` stops only the recorded PIDs.

>>> state = up("rail-small", ["degraded-width:leaf-su01-r0:3"])        # doctest: +SKIP
>>> run_tool("default", ["ibnetdiscover"]).stdout                        # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from probes.runner import LocalTransport
from probes.transport import ANY_EXIT_CODE, CommandResult
from topology.errors import LabError, UsageError
from topology.generate import (
    DEFAULT_PRESET,
    Design,
    design_from_dict,
    design_to_dict,
    generate,
    ibsim_limits,
    to_ibsim_net,
)

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
PROMPT = "sim> "
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
# Console replies that are errors: "# nodeid "x" not found", "# port 9 ... is not linked",
# "command 'x' unknown - skipped". Informational lines start "# Net status", "#  dumped", "#\t".
_CONSOLE_ERROR = re.compile(r"^(# [a-z].*|command '.*' unknown.*)$", re.MULTILINE)
_STOP_GRACE = 3.0
TWIN_FILE = "twin.json"  # in a twin's directory: what it copies (see fabric.app.twin)
# How long link_down/link_up wait for the port and OpenSM to settle after the change.
SETTLE_TIMEOUT = 30.0
# Popen objects of the processes this Python process started: kept so they are reaped, not leaked.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


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

    @property
    def running(self) -> bool:
        return self.ibsim_alive and self.opensm_alive

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["faults"] = list(self.faults)
        data["running"] = self.running
        data["env"] = {"LD_PRELOAD": UMAD2SIM, "IBSIM_SOCKNAME": self.sockname}
        data["tool_cwd"] = str(Path(self.directory) / "scratch")
        return data


@dataclass(frozen=True, slots=True)
class _Paths:
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
    def at(cls, root: Path) -> _Paths:
        names = ("fabric.net", "design.json", "console.fifo", "ibsim.out", "ibsim.err", "osm.log")
        return cls(root, *(root / n for n in (*names, "opensm", "scratch", "state.json")))


# -- where labs live ----------------------------------------------------------------------------
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


def _paths(name: str) -> _Paths:
    return _Paths.at(lab_dir(name))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _tail(path: Path, lines: int = 8) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return " | ".join(ln.strip() for ln in text.splitlines()[-lines:] if ln.strip())


# -- processes ----------------------------------------------------------------------------------
def _alive(pid: int, program: str) -> bool:
    """True if ``pid`` runs ``program`` (guards against PID reuse); a zombie counts as dead."""
    if pid <= 0:
        return False
    child = _CHILDREN.get(pid)
    if child is not None:
        if child.poll() is None:
            return True  # our own child, not reaped: it cannot have been reused
        del _CHILDREN[pid]
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return False
    comm = stat[stat.find("(") + 1 : stat.rfind(")")]
    if stat[stat.rfind(")") + 2 :].startswith(("Z", "X")):
        return False
    return program in (comm, Path(argv0).name)


def _stop(pid: int, program: str) -> None:
    """SIGTERM, then SIGKILL after a grace period; only if ``pid`` still runs ``program``."""
    if not _alive(pid, program):
        return
    for sig, wait in ((signal.SIGTERM, _STOP_GRACE), (signal.SIGKILL, _STOP_GRACE)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not _alive(pid, program):
                return
            time.sleep(0.02)
    raise LabError(f"{program} (pid {pid}) did not stop after SIGKILL")


def _start(argv: Sequence[str], env: dict[str, str], cwd: Path, out: Path, err: Path, stdin: int) -> int:
    with out.open("ab") as fout, err.open("ab") as ferr:
        try:
            proc = subprocess.Popen(
                list(argv), stdin=stdin, stdout=fout, stderr=ferr, env=env, cwd=cwd, start_new_session=True
            )
        except OSError as exc:
            raise LabError(f"cannot start {argv[0]}: {exc.strerror or exc}") from exc
    _CHILDREN[proc.pid] = proc
    return proc.pid


def _wait_for(path: Path, needle: str, pid: int, program: str, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError):
            if needle in path.read_text(errors="replace"):
                return
        if not _alive(pid, program):
            raise LabError(f"{program} exited before {what}")
        if time.monotonic() > deadline:
            raise LabError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(0.05)


def _clean_litter(scratch: Path, only_dead: bool = True) -> None:
    """Remove ``sys-<pid>`` trees that umad2sim clients left behind when they were killed."""
    import shutil

    if not scratch.is_dir():
        return
    for entry in scratch.glob("sys-*"):
        pid = entry.name[4:]
        if only_dead and pid.isdigit() and Path(f"/proc/{pid}").exists():
            continue
        shutil.rmtree(entry, ignore_errors=True)


# -- lifecycle ----------------------------------------------------------------------------------
def up(
    spec: str = DEFAULT_PRESET,
    faults: Sequence[str] = (),
    name: str = "default",
    *,
    routing: str | None = None,
    lfts_file: str | None = None,
) -> LabState:
    """Generate the fabric, start ibsim and OpenSM, wait for SUBNET UP; LabError on any failure.

    ``routing`` is OpenSM's ``-R`` (an engine or a comma list: ``minhop``, ``updn``, ``ftree``,
    ``dfsssp``, ``file``; default minhop); ``lfts_file`` is the dump the ``file`` engine loads
    (``-U``), copied into the lab so that an edited table can be planted."""
    paths = _paths(name)
    design = generate(spec, faults)  # UsageError before anything is touched
    to_ibsim_net(design)  # ... as are faults only ibnetdiscover text shows (no-lid, dup-lid, dup-guid)
    paths.root.mkdir(parents=True, exist_ok=True)
    with _locked(paths.root / "lab.lock"):
        old = _read_state(paths)
        if old is not None:
            if old.ibsim_alive or old.opensm_alive:
                raise LabError(
                    f"lab {name!r} is already running (ibsim pid {old.ibsim_pid}); run 'ibfab lab down'"
                    f" first, or 'ibfab lab restart --name {name}' if it is sick"
                )
            _teardown(paths, old)
        return _bring_up(paths, name, _designed(design), _routing_args(paths, routing, lfts_file))


@dataclass(frozen=True)
class SimFabric:
    """What a lab simulates, ready for ibsim: its net file, ibsim's limit options, what its state
    records, and files for the lab directory and for OpenSM's cache (a twin's ``guid2lid``)."""

    net: str
    limits: tuple[str, ...]
    spec: str  # in words: the generator's spec, or what a twin copies
    faults: tuple[str, ...]
    switches: int
    hcas: int
    files: Mapping[str, str] = field(default_factory=dict)  # name -> text, in the lab directory
    sm_cache: Mapping[str, str] = field(default_factory=dict)  # name -> text, in OpenSM's cache


def _designed(design: Design) -> SimFabric:
    return SimFabric(
        to_ibsim_net(design),
        tuple(ibsim_limits(design)),
        design.spec.text(),
        tuple(design.faults),
        len(design.switches),
        len(design.present_hcas()),
        {"design.json": json.dumps(design_to_dict(design))},
    )


def up_sim(
    sim: SimFabric, name: str, *, routing: str | None = None, lfts_file: str | None = None
) -> LabState:
    """Start ibsim on ``sim`` and OpenSM over it (``routing``, ``lfts_file`` as :func:`up`), wait
    for SUBNET UP; LabError on any failure. How a twin of a discovered fabric is brought up."""
    paths = _paths(name)
    paths.root.mkdir(parents=True, exist_ok=True)
    with _locked(paths.root / "lab.lock"):
        old = _read_state(paths)
        if old is not None:
            if old.ibsim_alive or old.opensm_alive:
                raise LabError(
                    f"lab {name!r} is already running (ibsim pid {old.ibsim_pid}); run 'ibfab lab down' first"
                )
            _teardown(paths, old)
        return _bring_up(paths, name, sim, _routing_args(paths, routing, lfts_file))


def _routing_args(paths: _Paths, routing: str | None, lfts_file: str | None) -> tuple[str, ...]:
    if routing is None and lfts_file is None:
        return ()
    if routing is not None and not re.fullmatch(r"[A-Za-z0-9_-]+(,[A-Za-z0-9_-]+)*", routing):
        raise UsageError(f"routing engine {routing!r}: give OpenSM engine names such as ftree or updn,dfsssp")
    args: tuple[str, ...] = ("-R", routing or "file")
    if lfts_file is not None:
        target = paths.root / "lfts.dump"
        try:
            data = Path(lfts_file).read_bytes()
        except OSError as exc:
            raise UsageError(f"{lfts_file}: cannot read the LFT dump ({exc.strerror or exc})") from exc
        paths.root.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        args += ("-U", str(target))
    return args


def _bring_up(paths: _Paths, name: str, sim: SimFabric, routing: tuple[str, ...] = ()) -> LabState:
    start = time.monotonic()
    for stale in (paths.ibsim_out, paths.ibsim_err, paths.osm_log, paths.root / "opensm.out", paths.fifo):
        stale.unlink(missing_ok=True)
    for d in (paths.osm_dir, paths.scratch):
        d.mkdir(exist_ok=True)
    for stale in (paths.design, paths.root / TWIN_FILE):  # what the previous lab of this name was
        stale.unlink(missing_ok=True)
    paths.net.write_text(sim.net)
    for file_name, text in sim.files.items():
        (paths.root / file_name).write_text(text)
    for file_name, text in sim.sm_cache.items():
        (paths.osm_dir / file_name).write_text(text)
    os.mkfifo(paths.fifo)
    sockname = f"ibfab-{name}-{secrets.token_hex(4)}"
    base_env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "SIM_HOST")}
    base_env["IBSIM_SOCKNAME"] = sockname
    nodes = sim.switches + sim.hcas
    timeout = 20.0 + nodes / 100.0
    ibsim_pid = opensm_pid = 0
    try:
        fd = os.open(paths.fifo, os.O_RDWR)  # read-write: never EOF, never blocks
        try:
            ibsim_argv = ["ibsim", "-s", *sim.limits, paths.net.name]
            ibsim_pid = _start(ibsim_argv, base_env, paths.root, paths.ibsim_out, paths.ibsim_err, fd)
        finally:
            os.close(fd)
        try:
            _wait_for(paths.ibsim_out, PROMPT, ibsim_pid, "ibsim", timeout, "ibsim ready")
        except LabError as exc:
            raise LabError(f"{exc}: {_tail(paths.ibsim_err) or _tail(paths.ibsim_out)}") from None
        osm_env = dict(base_env, LD_PRELOAD=UMAD2SIM, OSM_TMP_DIR=str(paths.osm_dir))
        osm_env["OSM_CACHE_DIR"] = str(paths.osm_dir)
        # -d 2 flushes the log after every message; -D 0x43 adds the routing dumps (LFTs).
        flags = "0x43" if nodes <= 4096 else "0x03"
        osm_argv = ["opensm", "-d", "2", "-D", flags, "-f", str(paths.osm_log), *routing]
        opensm_out = paths.root / "opensm.out"
        opensm_pid = _start(osm_argv, osm_env, paths.scratch, opensm_out, opensm_out, subprocess.DEVNULL)
        try:
            _wait_for(paths.osm_log, "SUBNET UP", opensm_pid, "opensm", timeout, "SUBNET UP")
        except LabError as exc:
            detail = _tail(paths.osm_log, 4) or _tail(opensm_out) or _tail(paths.ibsim_err)
            raise LabError(f"{exc}: {detail}") from None
    except BaseException:
        for pid, program in ((opensm_pid, "opensm"), (ibsim_pid, "ibsim")):
            with contextlib.suppress(LabError):
                _stop(pid, program)
        paths.fifo.unlink(missing_ok=True)
        _clean_litter(paths.scratch, only_dead=False)
        raise
    record = {
        "name": name,
        "spec": sim.spec,
        "faults": list(sim.faults),
        "sockname": sockname,
        "ibsim_pid": ibsim_pid,
        "opensm_pid": opensm_pid,
        "started": time.time(),
        "up_seconds": round(time.monotonic() - start, 3),
        "switches": sim.switches,
        "hcas": sim.hcas,
    }
    paths.state.write_text(json.dumps(record, indent=1))
    return status(name)


def _read_state(paths: _Paths) -> LabState | None:
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
            ibsim_alive=_alive(ibsim_pid, "ibsim"),
            opensm_alive=_alive(opensm_pid, "opensm"),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LabError(f"{paths.state}: unreadable lab state ({exc})") from exc


def status(name: str = "default") -> LabState:
    """The recorded state of lab ``name`` with liveness checked now; LabError if there is none."""
    state = _read_state(_paths(name))
    if state is None:
        raise LabError(f"no lab named {name!r} (start one with 'ibfab lab up --name {name}')")
    return state


def list_labs() -> list[LabState]:
    root = labs_root()
    if not root.is_dir():
        return []
    found = (_read_state(_Paths.at(d)) for d in sorted(root.iterdir()) if (d / "state.json").is_file())
    return [s for s in found if s is not None]


def down(name: str = "default") -> LabState:
    """Stop lab ``name`` (OpenSM, then ibsim) and clean up; returns the state it had."""
    paths = _paths(name)
    with _locked(paths.root / "lab.lock"):
        state = _read_state(paths)
        if state is None:
            raise LabError(f"no lab named {name!r}")
        _teardown(paths, state)
        return state


def _teardown(paths: _Paths, state: LabState) -> None:
    _stop(state.opensm_pid, "opensm")
    _stop(state.ibsim_pid, "ibsim")
    paths.fifo.unlink(missing_ok=True)
    _clean_litter(paths.scratch, only_dead=False)
    paths.state.unlink(missing_ok=True)


def _running(name: str) -> tuple[_Paths, LabState]:
    state = status(name)
    if not state.ibsim_alive:
        raise LabError(f"lab {name!r} is not running (ibsim pid {state.ibsim_pid} is gone)")
    return _paths(name), state


def console_node(name: str, guid: str) -> str:
    """The simulator's node id (what its console takes) of the node ``guid`` in lab ``name``: a
    generated lab's switch name or HCA description, a twin's ``S-``/``H-`` id; LabError if none."""
    twin = _paths(name).root / TWIN_FILE
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
    path = _paths(name).design
    try:
        return design_from_dict(json.loads(path.read_text()), str(path))
    except (OSError, ValueError) as exc:
        raise LabError(f"{path}: cannot read the lab design ({exc})") from exc


# -- pointing real tools at the lab -------------------------------------------------------------
def tool_env(name: str = "default") -> dict[str, str]:
    """Environment for a client of the lab. Put it on the tool's subprocess only (it takes a slot)."""
    return {"LD_PRELOAD": UMAD2SIM, "IBSIM_SOCKNAME": _running(name)[1].sockname}


def tool_cwd(name: str = "default") -> str:
    """A writable scratch directory for clients (umad2sim writes ./sys-<pid> into the CWD)."""
    return str(_paths(name).scratch)


def opensm_dump_dir(name: str = "default") -> str:
    """OpenSM's dump directory (OSM_TMP_DIR): opensm-lfts.dump, opensm.fdbs, guid2lid, ..."""
    return str(_paths(name).osm_dir)


def opensm_log(name: str = "default") -> str:
    return str(_paths(name).osm_log)


def transport(name: str = "default") -> LocalTransport:
    """The transport that runs real infiniband-diags tools against lab ``name``: this machine with
    the simulator's environment, its litter cleared after each command."""
    cwd = tool_cwd(name)
    return LocalTransport(f"lab {name}", env=tool_env(name), cwd=cwd, after=lambda: _clean_litter(Path(cwd)))


def run_tool(
    name: str,
    argv: Sequence[str],
    *,
    timeout: float = 60.0,
    check: bool = True,
    ok_codes: Sequence[int] = (0,),
) -> CommandResult:
    """Run a real infiniband-diags tool against lab ``name`` (CommandFailed on failure; with
    ``check`` False any exit code comes back as a result)."""
    t = transport(name)
    result = t.run(argv, timeout)
    return t.require(result, ok_codes if check else ANY_EXIT_CODE)


# -- the simulator console ----------------------------------------------------------------------
def console(name: str, command: str, *, timeout: float = 30.0) -> str:
    """Send one console command to lab ``name``'s ibsim and return its reply (LabError on errors)."""
    command = command.strip()
    if not command or "\n" in command or "\r" in command:
        raise UsageError(f"console command {command!r}: give exactly one non-empty line")
    paths, _state = _running(name)
    with _locked(paths.root / "console.lock"):
        line = command
        if len(command.encode()) > 120:  # ibsim splits lines at 127 bytes; a command file has 4096
            (paths.root / "console.cmd").write_text(command + "\n")
            line = "!console.cmd"  # relative to ibsim's CWD, the lab directory
        offset = paths.ibsim_out.stat().st_size
        fd = os.open(paths.fifo, os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
        reply = _read_reply(paths, offset, timeout, command)
    bad = _CONSOLE_ERROR.search(reply)
    if bad:
        raise LabError(f"ibsim console: {command}: {bad.group(0).lstrip('# ')}")
    return reply


def _read_reply(paths: _Paths, offset: int, timeout: float, command: str) -> str:
    deadline = time.monotonic() + timeout
    data = b""
    with paths.ibsim_out.open("rb") as fh:
        fh.seek(offset)
        while True:
            data += fh.read()
            if data.endswith(PROMPT.encode()):
                return data[: -len(PROMPT)].decode(errors="replace").rstrip()
            if time.monotonic() > deadline:
                raise LabError(f"ibsim console: no reply to {command!r} within {timeout:g} s")
            time.sleep(0.01)


# -- fault injection ----------------------------------------------------------------------------
def _node_port(node: str, port: int | None) -> str:
    if not node or '"' in node or "\n" in node:
        raise UsageError(f"node {node!r}: give a node id such as leaf-su01-r0 or 'dgx-0001 mlx5_0'")
    if port is None:
        return f'"{node}"'
    if port < 0:
        raise UsageError(f"port {port}: must be 0 or more")
    return f'"{node}"[{port}]'


def link_down(name: str, node: str, port: int, *, timeout: float = SETTLE_TIMEOUT) -> str:
    """Unplug the cable on ``node`` ``port`` (console Unlink; OpenSM gets a trap and resweeps).
    Returns once the port is down and OpenSM has finished the sweep that trap started (none when
    the cable was the SM's own), so what is read next sees the fabric as it is after the change
    (LabError after ``timeout`` s)."""
    mark = _sm_log_size(name)
    before = port_line(name, node, port)
    sm_cut_off = before.is_sm or (before.far is not None and port_line(name, *before.far).is_sm)
    reply = console(name, f"Unlink {_node_port(node, port)}")
    _settle(name, node, port, mark, up=False, sweep=not sm_cut_off, timeout=timeout)
    return reply


def link_up(name: str, node: str, port: int, *, timeout: float = SETTLE_TIMEOUT) -> str:
    """Plug back the cable that link_down removed (console ReLink). Returns once both ends are
    Active again and OpenSM has finished sweeping after the ports' traps (LabError after
    ``timeout`` s): the counters and routes read next are those of the replugged link."""
    mark = _sm_log_size(name)
    reply = console(name, f"ReLink {_node_port(node, port)}")
    _settle(name, node, port, mark, up=True, sweep=True, timeout=timeout)
    return reply


@dataclass(frozen=True, slots=True)
class PortLine:
    state: str | None  # Active, Down, Init... (None: no such port)
    far: tuple[str, int] | None  # the far end's node and port, when linked
    is_sm: bool  # the subnet manager's own port (its LID is the SM LID)


# A port line of the console's Dump: GUID, [port], "far node"[far port] when linked, the LID and
# SM LID on an HCA port, width, speed, state/physical state.
_DUMP_PORT = re.compile(
    r'^\S+\t\[(\d+)\]\t(?:"(.*)"\[(\d+)\])?(?:.*?\slid (\d+) lmc \d+ smlid (\d+))?.*\s(\w+)/\w+\s*$',
    re.MULTILINE,
)
_TRAP = "Received Generic Notice"
_SWEPT = "SUBNET UP"


def _sm_log_size(name: str) -> int:
    try:
        return _paths(name).osm_log.stat().st_size
    except OSError:
        return 0


def port_line(name: str, node: str, port: int) -> PortLine:
    """``node`` ``port`` as the simulator has it (the console's Dump)."""
    for m in _DUMP_PORT.finditer(console(name, f"Dump {_node_port(node, None)}")):
        if int(m.group(1)) == port:
            far = (m.group(2), int(m.group(3))) if m.group(2) is not None else None
            return PortLine(m.group(6), far, m.group(4) is not None and m.group(4) == m.group(5))
    return PortLine(None, None, False)


def _sm_swept_since(name: str, mark: int) -> bool:
    """OpenSM finished a sweep after ``mark`` (a log offset) and after every trap it has logged since."""
    with _paths(name).osm_log.open("rb") as fh:
        fh.seek(mark)
        text = fh.read().decode(errors="replace")
    last_sweep = text.rfind(_SWEPT)
    return last_sweep >= 0 and text.rfind(_TRAP) < last_sweep


def _settle(name: str, node: str, port: int, mark: int, *, up: bool, sweep: bool, timeout: float) -> None:
    """Wait for the observable end of a link change: the port (and, plugged back, its far end)
    in the state the change leads to and, with ``sweep``, OpenSM's sweep after the change's
    traps done. Polled, not slept: it returns as soon as the fabric shows it."""
    deadline = time.monotonic() + timeout
    want = "Active" if up else "Down"
    while True:
        line = port_line(name, node, port)
        ends = line.state == want and (
            not up or (line.far is not None and port_line(name, *line.far).state == want)
        )
        if ends and (not sweep or _sm_swept_since(name, mark)):
            return
        if time.monotonic() > deadline:
            raise LabError(
                f"lab {name}: {node}[{port}] not {want.lower()}"
                + (" with OpenSM's sweep done" if sweep else "")
                + f" within {timeout:g} s (port {line.state or 'not found'}; see {_paths(name).osm_log})"
            )
        time.sleep(0.02)


def set_counter(name: str, node: str, port: int, field: str, value: int) -> str:
    """Set a PMA counter: ``field`` is a PortCounters field (``SymbolErrorCounter``), an
    ``Attribute.Field`` (``PortCountersExtended.PortXmitData``) or an ibfab counter name
    (``symbol_errors``). The simulator clamps values to the counter width."""
    from fabric.core.fields import COUNTERS

    if field in COUNTERS:
        bits, pma = COUNTERS[field]
        field = f"PortCountersExtended.{pma}" if bits == 64 else pma
    if not re.fullmatch(r"[A-Za-z0-9]+(\.[A-Za-z0-9]+)?", field):
        raise UsageError(f"counter field {field!r}: expected e.g. SymbolErrorCounter")
    if value < 0:
        raise UsageError(f"counter value {value}: must be 0 or more")
    attr_field = field if "." in field else f"PortCounters.{field}"
    return console(name, f"PerformanceSet {_node_port(node, port)} {attr_field}={value}")


def set_error_rate(
    name: str, node: str, rate: int, port: int | None = None, attribute: int | None = None
) -> str:
    """Drop ``rate`` % of the MADs arriving at ``node`` [``port``] (all ports if None); 0 turns it off."""
    if not 0 <= rate <= 100:
        raise UsageError(f"error rate {rate}: must be 0 to 100 (percent)")
    tail = f" {attribute}" if attribute is not None else ""
    return console(name, f"Error {_node_port(node, port)} {rate}{tail}")


def resweep(name: str = "default") -> None:
    """Force an OpenSM heavy sweep (SIGHUP to the lab's own opensm)."""
    state = status(name)
    if not state.opensm_alive:
        raise LabError(f"lab {name!r}: opensm (pid {state.opensm_pid}) is not running")
    os.kill(state.opensm_pid, signal.SIGHUP)
