"""Pointing real infiniband-diags tools at a lab: the environment and working directory a client
needs (umad2sim), OpenSM's dumps and log, and the transport that runs a tool there.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fabric.lab.simulator.processes import clean_litter
from fabric.lab.simulator.state import UMAD2SIM, paths_of, running_lab
from probes.runner import LocalTransport
from probes.transport import ANY_EXIT_CODE, CommandResult


def tool_env(name: str = "default") -> dict[str, str]:
    """Environment for a client of the lab. Put it on the tool's subprocess only (it takes a slot)."""
    return {"LD_PRELOAD": UMAD2SIM, "IBSIM_SOCKNAME": running_lab(name)[1].sockname}


def tool_cwd(name: str = "default") -> str:
    """A writable scratch directory for clients (umad2sim writes ./sys-<pid> into the CWD)."""
    return str(paths_of(name).scratch)


def opensm_dump_dir(name: str = "default") -> str:
    """OpenSM's dump directory (OSM_TMP_DIR): opensm-lfts.dump, opensm.fdbs, guid2lid, ..."""
    return str(paths_of(name).osm_dir)


def opensm_log(name: str = "default") -> str:
    return str(paths_of(name).osm_log)


def transport(name: str = "default") -> LocalTransport:
    """The transport that runs real infiniband-diags tools against lab ``name``: this machine with
    the simulator's environment, its litter cleared after each command."""
    cwd = tool_cwd(name)
    return LocalTransport(f"lab {name}", env=tool_env(name), cwd=cwd, after=lambda: clean_litter(Path(cwd)))


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
