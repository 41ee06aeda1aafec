"""How a use case reaches a fabric: one :class:`FabricDriver` per place the fabric is.

A driver runs the diagnostic tools (``ibnetdiscover``, ``perfquery``, ``ibportstate``...), changes
a port's state and asks the subnet manager to sweep again; this machine, a management host over
SSH and a lab fabric (ibsim + OpenSM) each have theirs, and a source that runs nothing (a saved
file, an ibdiagnet run, a stored snapshot) has one that says so. What only a simulated fabric can
do (unplug a cable, set a counter, plant a slow node, read the simulator's error rates) is asked
of the same driver: on a real fabric it refuses in one line. A use case never asks which kind of
fabric it holds; it asks the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from topology.errors import UsageError

if TYPE_CHECKING:
    from probes.labnccl import PlantedNode
    from probes.labtraffic import PortKey
    from probes.transport import CommandResult, Transport
    from topology.design import Design
    from topology.lft import Lfts
    from topology.model import Guid


@dataclass(frozen=True, slots=True)
class SimulatedPort:
    """A port as the simulator has it (its console's Dump)."""

    state: str | None  # Active, Down, Init... (None: no such port)
    linked: bool  # a cable is plugged in (the simulator knows its far end)


class FabricDriver:
    """The operations every driver answers. This base is a fabric nothing runs on: a driver for a
    real or simulated fabric overrides :meth:`transport`; the simulator's operations refuse here."""

    #: Whether the fabric is a simulation (its traffic, counters and cables are the simulator's).
    simulated: bool = False
    #: Whether the tools run on this machine as it is (its own OpenSM and UFM files are the fabric's).
    here: bool = False
    #: Whether the fabric's forwarding tables are read without being asked for (to name the jobs
    #: a change touches): a simulation's dump_fts answers in seconds; a real fabric's walks every
    #: switch by directed route (minutes) and runs only when the operator asks for it.
    reads_tables_unasked: bool = False

    def __init__(self, label: str) -> None:
        self.label = label  # "local ibnetdiscover", "ssh mgmt01", "lab demo", "snapshot 3"...

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label!r})"

    # -- running tools ------------------------------------------------------------------------
    def transport(self) -> Transport:
        """The transport that runs tools on this fabric (close it when done)."""
        raise UsageError(f"nothing runs for {self.label}: use --lab, --ssh or this machine")

    def run_tool(self, argv: Sequence[str], timeout: float, ok_codes: Sequence[int] = (0,)) -> CommandResult:
        """Run one tool: HostError when the host could not run it, CommandFailed for an exit code
        outside ``ok_codes`` (ibqueryerrors exits 1 when it finds errors: pass ``(0, 1)``)."""
        transport = self.transport()
        try:
            return transport.require(transport.run(argv, timeout), ok_codes)
        finally:
            transport.close()

    def check_ready(self) -> None:
        """A one-line error when the fabric cannot be reached at all (a lab that is not running)."""

    # -- changing the fabric ------------------------------------------------------------------
    def change_port(self, argv: Sequence[str], timeout: float = 30.0) -> CommandResult:
        """Run a port change (``ibportstate ... disable|enable``)."""
        return self.run_tool(argv, timeout)

    def resweep(self) -> None:
        """Ask the subnet manager to sweep again after port changes. A real switch sends a trap
        when a port goes down and the SM sweeps on its own: there is nothing to ask."""

    def relink_commands(self, guid: Guid, port: int) -> tuple[str, ...]:
        """What the simulator needs besides ``ibportstate enable`` to bring a disabled port back
        (a real port retrains by itself: nothing)."""
        return ()

    # -- what the driver knows of the subnet manager --------------------------------------------
    def sm_log(self) -> str | None:
        """The subnet manager's log when this driver knows where it is (None: look for it)."""
        return None

    def lft_dump(self) -> Path | None:
        """The SM's dump of the forwarding tables when this driver knows one (None: give --routes)."""
        return None

    def forwarding_tables(self) -> Lfts | None:
        """The fabric's forwarding tables when this driver can read them unasked (None: give --routes)."""
        return None

    # -- locks --------------------------------------------------------------------------------
    def host_lock_prefix(self) -> str | None:
        """The name space of this fabric's host locks when its hosts are not real machines (a
        simulation's hosts are its own: ``lab demo/dgx-0001``); None: hosts lock by their name."""
        return None

    def fabric_lock_name(self) -> str | None:
        """The fabric's name for its change lock when the driver knows it (a lab's name); None:
        the fabric is named by its lowest switch GUID."""
        return None

    # -- what only a simulated fabric does -----------------------------------------------------
    def _simulator_only(self, what: str) -> UsageError:
        return UsageError(f"{what} needs a lab fabric (ibfab lab up); {self.label} is not one")

    def console(self, command: str) -> str:
        """One command to the simulator's console; its reply."""
        raise self._simulator_only("the simulator console")

    def error_rates(self) -> dict[PortKey, int]:
        """The simulator's injected error rates per port (what its simulated traffic suffers)."""
        raise self._simulator_only("simulated traffic")

    def design(self) -> Design:
        """The simulated fabric's design (intended fabric and planted faults)."""
        raise self._simulator_only("a lab design")

    def node_id(self, guid: Guid) -> str:
        """The simulator's id of the node ``guid`` (what :meth:`unplug` and the console take)."""
        raise self._simulator_only("a simulated node")

    def unplug(self, node: str, port: int, *, timeout: float | None = None) -> str:
        """Unplug the cable on ``node`` ``port``; returns once the port is down and the SM has
        swept (within ``timeout`` s; None: the simulator's own settle time)."""
        raise self._simulator_only("unplugging a cable")

    def replug(self, node: str, port: int, *, timeout: float | None = None) -> str:
        raise self._simulator_only("plugging a cable back")

    def port_state(self, node: str, port: int) -> SimulatedPort:
        """``node`` ``port`` as the simulator has it."""
        raise self._simulator_only("a simulated port")

    def set_counter(self, node: str, port: int, field: str, value: int) -> str:
        raise self._simulator_only("setting a counter")

    def set_error_rate(
        self, node: str, rate: int, port: int | None = None, attribute: int | None = None
    ) -> str:
        raise self._simulator_only("dropping MADs")

    def planted_nodes(self) -> dict[str, PlantedNode]:
        """The simulated slow nodes planted in the fabric."""
        raise self._simulator_only("a simulated slow node")

    def plant_node(self, host: str, kind: str, factor: float, from_round: int = 1) -> PlantedNode:
        raise self._simulator_only("planting a slow node")

    def clear_nodes(self) -> int:
        raise self._simulator_only("clearing planted nodes")


__all__ = ["FabricDriver", "SimulatedPort"]
