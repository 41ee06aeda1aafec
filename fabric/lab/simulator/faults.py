"""Fault injection through the simulator console: unplug and replug a cable (and wait until the
fabric and OpenSM show the change), set a port counter, drop MADs, force a sweep.
"""

from __future__ import annotations

import os
import re
import signal
import time
from dataclasses import dataclass

from fabric.lab.simulator.console import console
from fabric.lab.simulator.state import paths_of, status
from topology.errors import LabError, UsageError

# How long link_down/link_up wait for the port and OpenSM to settle after the change.
SETTLE_TIMEOUT = 30.0


def node_port(node: str, port: int | None) -> str:
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
    reply = console(name, f"Unlink {node_port(node, port)}")
    _settle(name, node, port, mark, up=False, sweep=not sm_cut_off, timeout=timeout)
    return reply


def link_up(name: str, node: str, port: int, *, timeout: float = SETTLE_TIMEOUT) -> str:
    """Plug back the cable that link_down removed (console ReLink). Returns once both ends are
    Active again and OpenSM has finished sweeping after the ports' traps (LabError after
    ``timeout`` s): the counters and routes read next are those of the replugged link."""
    mark = _sm_log_size(name)
    reply = console(name, f"ReLink {node_port(node, port)}")
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
        return paths_of(name).osm_log.stat().st_size
    except OSError:
        return 0


def port_line(name: str, node: str, port: int) -> PortLine:
    """``node`` ``port`` as the simulator has it (the console's Dump)."""
    for m in _DUMP_PORT.finditer(console(name, f"Dump {node_port(node, None)}")):
        if int(m.group(1)) == port:
            far = (m.group(2), int(m.group(3))) if m.group(2) is not None else None
            return PortLine(m.group(6), far, m.group(4) is not None and m.group(4) == m.group(5))
    return PortLine(None, None, False)


def _sm_swept_since(name: str, mark: int) -> bool:
    """OpenSM finished a sweep after ``mark`` (a log offset) and after every trap it has logged since."""
    with paths_of(name).osm_log.open("rb") as fh:
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
                + f" within {timeout:g} s (port {line.state or 'not found'}; see {paths_of(name).osm_log})"
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
    return console(name, f"PerformanceSet {node_port(node, port)} {attr_field}={value}")


def set_error_rate(
    name: str, node: str, rate: int, port: int | None = None, attribute: int | None = None
) -> str:
    """Drop ``rate`` % of the MADs arriving at ``node`` [``port``] (all ports if None); 0 turns it off."""
    if not 0 <= rate <= 100:
        raise UsageError(f"error rate {rate}: must be 0 to 100 (percent)")
    tail = f" {attribute}" if attribute is not None else ""
    return console(name, f"Error {node_port(node, port)} {rate}{tail}")


def resweep(name: str = "default") -> None:
    """Force an OpenSM heavy sweep (SIGHUP to the lab's own opensm)."""
    state = status(name)
    if not state.opensm_alive:
        raise LabError(f"lab {name!r}: opensm (pid {state.opensm_pid}) is not running")
    os.kill(state.opensm_pid, signal.SIGHUP)
