"""The lab: a simulated fabric (ibsim + OpenSM) that the real infiniband-diags tools run against.

One directory per lab name holds everything: the net file, the design, the console FIFO, ibsim's
stdout/stderr, OpenSM's log and dumps, a scratch directory for clients (umad2sim writes
``./sys-<pid>`` there) and ``state.json`` with the PIDs and the socket name. ibsim and OpenSM run
in their own sessions so that they outlive the CLI; ``down`` stops only the recorded PIDs.

One job a module: state (where labs live, what each records), processes (start, check, stop by
PID), lifecycle (up, down), console (the simulator console), faults (unplug, counters, MAD
drops, sweeps) and tools (real tools pointed at a lab). Nothing outside :mod:`fabric.lab`
imports this package (its door is :mod:`fabric.lab.driver`); this module is the package's face
for the driver, the lab check and the tests.

>>> state = up("rail-small", ["degraded-width:leaf-su01-r0:3"])        # doctest: +SKIP
>>> run_tool("default", ["ibnetdiscover"]).stdout                        # doctest: +SKIP
"""

from __future__ import annotations

from fabric.lab.simulator.console import PROMPT, console
from fabric.lab.simulator.faults import (
    SETTLE_TIMEOUT,
    PortLine,
    link_down,
    link_up,
    port_line,
    resweep,
    set_counter,
    set_error_rate,
)
from fabric.lab.simulator.lifecycle import SimFabric, down, up, up_sim
from fabric.lab.simulator.processes import alive
from fabric.lab.simulator.state import (
    TWIN_FILE,
    UMAD2SIM,
    LabState,
    console_node,
    design_of,
    lab_dir,
    labs_root,
    list_labs,
    status,
)
from fabric.lab.simulator.tools import opensm_dump_dir, opensm_log, run_tool, tool_cwd, tool_env, transport

__all__ = [
    "PROMPT",
    "SETTLE_TIMEOUT",
    "TWIN_FILE",
    "UMAD2SIM",
    "LabState",
    "PortLine",
    "SimFabric",
    "alive",
    "console",
    "console_node",
    "design_of",
    "down",
    "lab_dir",
    "labs_root",
    "link_down",
    "link_up",
    "list_labs",
    "opensm_dump_dir",
    "opensm_log",
    "port_line",
    "resweep",
    "run_tool",
    "set_counter",
    "set_error_rate",
    "status",
    "tool_cwd",
    "tool_env",
    "transport",
    "up",
    "up_sim",
]
