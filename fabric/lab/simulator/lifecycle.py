"""A lab's lifecycle: generate its fabric (or take a twin's), start ibsim and OpenSM over it and
wait for SUBNET UP (``up``, ``up_sim``); stop them by their recorded PIDs and clean up (``down``).
One lock per lab directory, so two commands never bring up one lab twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fabric.lab.simulator.console import PROMPT
from fabric.lab.simulator.processes import clean_litter, start_process, stop_process, wait_for
from fabric.lab.simulator.state import (
    TWIN_FILE,
    UMAD2SIM,
    LabPaths,
    LabState,
    locked,
    paths_of,
    read_state,
    status,
)
from topology.errors import LabError, UsageError
from topology.generate import (
    DEFAULT_PRESET,
    Design,
    design_to_dict,
    generate,
    ibsim_limits,
    to_ibsim_net,
)


def up(
    spec: str = DEFAULT_PRESET,
    faults: Sequence[str] = (),
    name: str = "default",
    *,
    routing: str | None = None,
    lfts_file: str | None = None,
    qos: bool = False,
) -> LabState:
    """Generate the fabric, start ibsim and OpenSM, wait for SUBNET UP; LabError on any failure.

    ``routing`` is OpenSM's ``-R`` (an engine or a comma list: ``minhop``, ``updn``, ``ftree``,
    ``dfsssp``, ``file``; default minhop); ``lfts_file`` is the dump the ``file`` engine loads
    (``-U``), copied into the lab so that an edited table can be planted; ``qos`` runs OpenSM
    with QoS (``-Q``): it then writes its SL2VL tables to every port (its default ``qos_sl2vl``;
    without QoS it sets none and the ports keep ibsim's SL n to VL n)."""
    # UsageError before anything is touched: the spec and faults (generate), and faults only
    # ibnetdiscover text shows (no-lid, dup-lid, dup-guid: the net file, built by designed)
    sim = designed(generate(spec, faults))
    return up_sim(sim, name, routing=routing, lfts_file=lfts_file, qos=qos)


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


def designed(design: Design) -> SimFabric:
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
    sim: SimFabric,
    name: str,
    *,
    routing: str | None = None,
    lfts_file: str | None = None,
    qos: bool = False,
) -> LabState:
    """Start ibsim on ``sim`` and OpenSM over it (``routing``, ``lfts_file``, ``qos`` as :func:`up`), wait
    for SUBNET UP; LabError on any failure. How a twin of a discovered fabric is brought up, and
    the second half of :func:`up`."""
    paths = paths_of(name)
    paths.root.mkdir(parents=True, exist_ok=True)
    with locked(paths.root / "lab.lock"):
        old = read_state(paths)
        if old is not None:
            if old.ibsim_alive or old.opensm_alive:
                raise LabError(
                    f"lab {name!r} is already running (ibsim pid {old.ibsim_pid}); run 'ibfab lab down'"
                    f" first, or 'ibfab lab restart --name {name}' if it is sick"
                )
            teardown(paths, old)
        return bring_up(paths, name, sim, _routing_args(paths, routing, lfts_file, qos))


def _routing_args(
    paths: LabPaths, routing: str | None, lfts_file: str | None, qos: bool = False
) -> tuple[str, ...]:
    qos_args = ("-Q",) if qos else ()
    if routing is None and lfts_file is None:
        return qos_args
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
    return args + qos_args


def bring_up(paths: LabPaths, name: str, sim: SimFabric, routing: tuple[str, ...] = ()) -> LabState:
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
            ibsim_pid = start_process(ibsim_argv, base_env, paths.root, paths.ibsim_out, paths.ibsim_err, fd)
        finally:
            os.close(fd)
        try:
            wait_for(paths.ibsim_out, PROMPT, ibsim_pid, "ibsim", timeout, "ibsim ready")
        except LabError as exc:
            raise LabError(f"{exc}: {_tail(paths.ibsim_err) or _tail(paths.ibsim_out)}") from None
        osm_env = dict(base_env, LD_PRELOAD=UMAD2SIM, OSM_TMP_DIR=str(paths.osm_dir))
        osm_env["OSM_CACHE_DIR"] = str(paths.osm_dir)
        # -d 2 flushes the log after every message; -D 0x43 adds the routing dumps (LFTs).
        flags = "0x43" if nodes <= 4096 else "0x03"
        osm_argv = ["opensm", "-d", "2", "-D", flags, "-f", str(paths.osm_log), *routing]
        opensm_out = paths.root / "opensm.out"
        opensm_pid = start_process(
            osm_argv, osm_env, paths.scratch, opensm_out, opensm_out, subprocess.DEVNULL
        )
        try:
            wait_for(paths.osm_log, "SUBNET UP", opensm_pid, "opensm", timeout, "SUBNET UP")
        except LabError as exc:
            detail = _tail(paths.osm_log, 4) or _tail(opensm_out) or _tail(paths.ibsim_err)
            raise LabError(f"{exc}: {detail}") from None
        _refuse_unknown_engines(paths.osm_log, routing)
    except BaseException:
        for pid, program in ((opensm_pid, "opensm"), (ibsim_pid, "ibsim")):
            with contextlib.suppress(LabError):
                stop_process(pid, program)
        paths.fifo.unlink(missing_ok=True)
        clean_litter(paths.scratch, only_dead=False)
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
        "sm_options": list(routing),  # a restart brings OpenSM up with the same
    }
    paths.state.write_text(json.dumps(record, indent=1))
    return status(name)


def down(name: str = "default") -> LabState:
    """Stop lab ``name`` (OpenSM, then ibsim) and clean up; returns the state it had."""
    paths = paths_of(name)
    with locked(paths.root / "lab.lock"):
        state = read_state(paths)
        if state is None:
            raise LabError(f"no lab named {name!r}")
        teardown(paths, state)
        return state


def teardown(paths: LabPaths, state: LabState) -> None:
    stop_process(state.opensm_pid, "opensm")
    stop_process(state.ibsim_pid, "ibsim")
    paths.fifo.unlink(missing_ok=True)
    clean_litter(paths.scratch, only_dead=False)
    paths.state.unlink(missing_ok=True)


# OpenSM's words for an -R name it has no engine of (osm_opensm.c); it then routes with minhop
_NO_ENGINE = re.compile(r"cannot find or setup routing engine '([^']*)'")


def _refuse_unknown_engines(osm_log: Path, routing: tuple[str, ...]) -> None:
    """UsageError when OpenSM says it has no engine of a name given with -R: it comes up anyway
    (on minhop), and a lab believed to run another engine would mislead every routes check."""
    if "-R" not in routing:
        return
    try:
        text = osm_log.read_text(errors="replace")
    except OSError:
        return
    missing = list(dict.fromkeys(_NO_ENGINE.findall(text)))
    if missing:
        names = ", ".join(repr(m) for m in missing)
        raise UsageError(
            f"OpenSM has no routing engine {names} (its log: cannot find or setup routing engine); "
            "give engines it has, such as minhop, updn, ftree, dfsssp, lash"
        )


def _tail(path: Path, lines: int = 8) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return " | ".join(ln.strip() for ln in text.splitlines()[-lines:] if ln.strip())
