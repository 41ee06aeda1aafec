"""``ibfab lab``: bring lab fabrics (ibsim + the real OpenSM) up and down and change them while
they run: unplug and replug cables, set counters, drop MADs, talk to the simulator console.

Parses the operator's ``NODE:PORT`` and ``FIELD=VALUE`` here, so that every front end gets the
same one-line errors; a running lab is changed through the session's driver (a real fabric's
refuses), its lifecycle through the lab's door (:mod:`fabric.lab.driver`)."""

from __future__ import annotations

from collections.abc import Sequence

from fabric.app.session import Session
from fabric.lab import driver as lab
from fabric.lab.driver import LabHealth, LabState
from topology import generate_text
from topology.errors import UsageError
from topology.generate import DEFAULT_PRESET


def node_port(text: str) -> tuple[str, int]:
    """``NODE:PORT`` (the node may hold spaces: ``dgx-0001 mlx5_0:1``) -> (node, port)."""
    node, sep, port = text.rpartition(":")
    if not sep or not node or not port.isdigit():
        raise UsageError(f"{text!r}: expected NODE:PORT, e.g. leaf-su01-r0:5 or 'dgx-0001 mlx5_0:1'")
    return node, int(port)


def up(
    spec: str | None,
    faults: Sequence[str],
    name: str,
    *,
    routing: str | None = None,
    lfts_file: str | None = None,
    qos: bool = False,
) -> LabState:
    """Generate the fabric ``spec`` (the default preset when None) with ``faults`` planted, start
    ibsim and OpenSM (routing with ``routing``, loading ``lfts_file`` for its file engine, with
    QoS when ``qos``: it sets the ports' SL2VL tables), and wait for SUBNET UP."""
    return lab.up(spec or DEFAULT_PRESET, faults, name, routing=routing, lfts_file=lfts_file, qos=qos)


def simulator_notes(name: str) -> tuple[str, ...]:
    """What the running lab's simulator does otherwise than its design (ibsim 0.10 has no NDR)."""
    return generate_text.simulator_notes(lab.design_of(name))


def status(name: str) -> LabState:
    return lab.status(name)


def list_labs() -> list[LabState]:
    return lab.list_labs()


def check(name: str) -> LabHealth:
    """Lab ``name`` asked now: its processes, a client attach and an SM query."""
    return lab.check(name)


def check_all() -> list[LabHealth]:
    return [lab.check(s.name) for s in lab.list_labs()]


def restart(name: str) -> LabState:
    """Stop the lab's OpenSM and ibsim by PID and bring the same fabric up again."""
    return lab.restart(name)


def down(name: str) -> LabState:
    """Stop the lab's OpenSM and ibsim (only the recorded PIDs) and clean up."""
    return lab.down(name)


def down_all() -> list[str]:
    """Stop every lab under the lab directory; the names stopped."""
    names = [s.name for s in lab.list_labs()]
    for n in names:
        lab.down(n)
    return names


def link_down(session: Session, port: str) -> str:
    """Unplug the cable on ``NODE:PORT``; the simulator's reply."""
    return session.driver.unplug(*node_port(port))


def link_up(session: Session, port: str) -> str:
    """Plug back the cable of ``NODE:PORT`` that :func:`link_down` removed; the simulator's reply."""
    return session.driver.replug(*node_port(port))


def set_counter(session: Session, port: str, assignment: str) -> str:
    """Set a port counter: ``NODE:PORT`` and ``FIELD=VALUE`` (e.g. ``SymbolErrorCounter=120``)."""
    node, number = node_port(port)
    field, sep, value = assignment.partition("=")
    if not sep or not value.isdigit():
        raise UsageError(f"{assignment!r}: expected FIELD=VALUE, e.g. SymbolErrorCounter=120")
    return session.driver.set_counter(node, number, field, int(value))


def set_error_rate(session: Session, node: str, rate: int, attribute: int | None = None) -> None:
    """Drop ``rate`` % of the MADs arriving at ``NODE[:PORT]`` (every port without ``:PORT``)."""
    node_id, port = node_port(node) if node.rpartition(":")[2].isdigit() else (node, None)
    session.driver.set_error_rate(node_id, rate, port, attribute)


def console(session: Session, command: str) -> str:
    """One command to the simulator console; its reply."""
    return session.driver.console(command)
