"""The lab's door: a :class:`LabDriver` reaches a running lab fabric as every driver reaches its
fabric, and the labs' lifecycle (up, down, status, list; ``check`` and ``restart`` from
:mod:`fabric.lab.check`) for ``ibfab lab``, the demo and the twin (``up_sim`` brings a
:class:`SimFabric` up: a discovered fabric's copy, its record in ``TWIN_FILE``).

Nothing outside the lab imports its simulator module; this module is what the rest of ibfab sees
of it. The simulator's own operations (unplug and replug a cable, set a counter, drop MADs, the
console, planted slow nodes) are :class:`probes.driver.FabricDriver` operations that a real
fabric's driver refuses in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fabric.lab import simulator
from fabric.lab.check import CLIENT_SLOTS, LabHealth, LabProblem, Trouble, check, restart
from fabric.lab.simulator import (
    SETTLE_TIMEOUT,
    TWIN_FILE,
    LabState,
    SimFabric,
    design_of,
    down,
    lab_dir,
    labs_root,
    list_labs,
    status,
    up,
    up_sim,
)
from probes.driver import FabricDriver, SimulatedPort
from probes.labnccl import FAULT_KINDS, PlantedNode, format_planted, parse_planted
from topology.errors import LabError, UsageError
from topology.textfile import read_input_text

if TYPE_CHECKING:
    from probes.labtraffic import PortKey
    from probes.transport import Transport
    from topology.design import Design
    from topology.lft import Lfts
    from topology.model import Guid

# Simulated slow nodes planted in a lab (``ibfab triage plant``): JSON in the lab's directory, read
# by the lab's simulated nccl-tests. A lab host has no GPU; these are the simulation's.
PLANTED_FILE = "simulated-nodes.json"


class LabDriver(FabricDriver):
    """Lab ``name``: the real infiniband-diags tools run on this machine with the simulator's
    environment; the simulator's console does what no tool can (unplug, set counters, relink)."""

    simulated = True
    reads_tables_unasked = True

    def __init__(self, name: str) -> None:
        super().__init__(f"lab {name}")
        self.name = name

    def transport(self) -> Transport:
        return simulator.transport(self.name)

    def check_ready(self) -> None:
        if not simulator.status(self.name).running:
            raise LabError(
                f"lab {self.name!r} is not running (start it with 'ibfab lab up --name {self.name}')"
            )

    # -- changing the fabric ------------------------------------------------------------------
    def resweep(self) -> None:
        simulator.resweep(self.name)  # ibsim sends no trap on disable; a real switch does

    def relink_commands(self, guid: Guid, port: int) -> tuple[str, ...]:
        # ibsim keeps a port disabled by ibportstate down until the console relinks it.
        node = self.node_id(guid)  # a twin's S-/H- id, a generated lab's name
        return (f'Unlink "{node}"[{port}]', f'ReLink "{node}"[{port}]')

    # -- the subnet manager -------------------------------------------------------------------
    def sm_log(self) -> str:
        return simulator.opensm_log(self.name)

    def lft_dump(self) -> Path | None:
        dump = Path(simulator.opensm_dump_dir(self.name)) / "opensm-lfts.dump"
        return dump if dump.is_file() else None

    def forwarding_tables(self) -> Lfts:
        """OpenSM's opensm-lfts.dump, else dump_fts run against the lab (as arrays)."""
        from topology.lft import parse_lfts, read_lfts

        dump = Path(simulator.opensm_dump_dir(self.name)) / "opensm-lfts.dump"
        if dump.is_file() and dump.stat().st_size:
            return read_lfts(dump)
        return parse_lfts(self.run_tool(["dump_fts"], timeout=300).stdout, f"lab {self.name} dump_fts")

    # -- locks --------------------------------------------------------------------------------
    def host_lock_prefix(self) -> str:
        return f"lab {self.name}"

    def fabric_lock_name(self) -> str:
        return f"lab-{self.name}"

    # -- the simulator ------------------------------------------------------------------------
    def console(self, command: str) -> str:
        return simulator.console(self.name, command)

    def error_rates(self) -> dict[PortKey, int]:
        from probes.labtraffic import parse_error_rates

        return parse_error_rates(simulator.console(self.name, "Dump"))

    def design(self) -> Design:
        return simulator.design_of(self.name)

    def node_id(self, guid: Guid) -> str:
        return simulator.console_node(self.name, guid)

    def unplug(self, node: str, port: int, *, timeout: float | None = None) -> str:
        return simulator.link_down(
            self.name, node, port, timeout=SETTLE_TIMEOUT if timeout is None else timeout
        )

    def replug(self, node: str, port: int, *, timeout: float | None = None) -> str:
        return simulator.link_up(
            self.name, node, port, timeout=SETTLE_TIMEOUT if timeout is None else timeout
        )

    def port_state(self, node: str, port: int) -> SimulatedPort:
        line = simulator.port_line(self.name, node, port)
        return SimulatedPort(line.state, line.far is not None)

    def set_counter(self, node: str, port: int, field: str, value: int) -> str:
        return simulator.set_counter(self.name, node, port, field, value)

    def set_error_rate(
        self, node: str, rate: int, port: int | None = None, attribute: int | None = None
    ) -> str:
        return simulator.set_error_rate(self.name, node, rate, port, attribute)

    # -- simulated slow nodes -----------------------------------------------------------------
    def _planted_path(self) -> Path:
        simulator.status(self.name)  # a LabError naming the lab when it does not exist
        return simulator.lab_dir(self.name) / PLANTED_FILE

    def planted_nodes(self) -> dict[str, PlantedNode]:
        """The slow nodes planted in the lab (none when nothing was planted)."""
        path = self._planted_path()
        if not path.exists():
            return {}
        return parse_planted(read_input_text(path, "planted nodes"), str(path))

    def plant_node(self, host: str, kind: str, factor: float = 0.5, from_round: int = 1) -> PlantedNode:
        """Make ``host`` of the lab a slow node: its GPUs (``gpu``) or its GPU-to-HCA path
        (``pcie``) reach ``factor`` of their healthy rate in the simulation; or a node ``lost``
        from round ``from_round`` of a triage on."""
        if kind not in FAULT_KINDS:
            raise UsageError(f"slow node kind must be one of {', '.join(FAULT_KINDS)}, not {kind!r}")
        if kind == "lost":
            if from_round < 1:
                raise UsageError(f"a node is lost from round 1 or later, not {from_round}")
            factor = 1.0
        elif not 0.0 < factor < 1.0:
            raise UsageError(f"factor must be between 0 and 1 (the share of its healthy rate), not {factor}")
        nodes = self.planted_nodes()
        node = PlantedNode(host, kind, factor, from_round)
        nodes[host] = node
        self._planted_path().write_text(format_planted(nodes), encoding="utf-8")
        return node

    def clear_nodes(self) -> int:
        """Remove every planted slow node; how many there were."""
        nodes = self.planted_nodes()
        self._planted_path().unlink(missing_ok=True)
        return len(nodes)


__all__ = [
    "CLIENT_SLOTS",
    "PLANTED_FILE",
    "TWIN_FILE",
    "LabDriver",
    "LabHealth",
    "LabProblem",
    "LabState",
    "SimFabric",
    "Trouble",
    "check",
    "design_of",
    "down",
    "lab_dir",
    "labs_root",
    "list_labs",
    "restart",
    "status",
    "up",
    "up_sim",
]
