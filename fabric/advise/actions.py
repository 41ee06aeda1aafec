"""Recommended actions with the exact commands to carry them out (and undo them).

Every action names its target, why, the evidence, what it costs and the commands for both subnet
managers an operator may run: upstream OpenSM (``ibportstate``) and NVIDIA UFM (the unhealthy
ports REST call that NVIDIA's own PDR isolator uses). Nothing here runs anything.

>>> ufm_port_name(PortRef(Guid("0x0c42a10300a00000"), 5))
'0c42a10300a00000_5'
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from topology.model import Guid, Lid, PortRef

UFM_UNHEALTHY_PORTS = "/ufmRestV2/app/unhealthy_ports"


class ActionKind(StrEnum):
    ISOLATE_PORT = "isolate_port"
    DRAIN_NODE = "drain_node"
    REPLACE_CABLE = "replace_cable"
    SWAP_CABLES = "swap_cables"
    CONNECT_CABLE = "connect_cable"
    MOVE_CABLES = "move_cables"
    SET_NODE_DESCRIPTION = "set_node_description"
    ENABLE_AR = "enable_ar"
    DISABLE_AR = "disable_ar"
    SET_ROUTING_ENGINE = "set_routing_engine"
    SET_NCCL_ENV = "set_nccl_env"
    CLEAR_COUNTERS = "clear_counters"


@dataclass(frozen=True, slots=True)
class Command:
    manager: str  # opensm | ufm | slurm | nccl | operator
    purpose: str  # apply | undo | check
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"manager": self.manager, "purpose": self.purpose, "text": self.text}


@dataclass(frozen=True, slots=True)
class Action:
    kind: ActionKind
    target: str
    reason: str
    evidence: tuple[str, ...] = ()
    impact: str = ""
    commands: tuple[Command, ...] = ()
    port: PortRef | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind.value,
            "target": self.target,
            "reason": self.reason,
            "evidence": list(self.evidence),
            "impact": self.impact,
            "commands": [c.to_dict() for c in self.commands],
            "port": None if self.port is None else {"guid": self.port.guid, "port": self.port.port},
        }

    def commands_for(self, manager: str, purpose: str = "apply") -> list[str]:
        return [c.text for c in self.commands if c.manager == manager and c.purpose == purpose]


# -- command text ---------------------------------------------------------------------------------
def ufm_port_name(ref: PortRef) -> str:
    """UFM's port name: node GUID without ``0x`` + ``_`` + port number."""
    return f"{ref.guid.removeprefix('0x')}_{ref.port}"


def ibportstate_argv(ref: PortRef, lid: Lid | int | None, state: str, dr: str | None = None) -> list[str]:
    """``ibportstate <lid> <port> disable|enable``; by directed route (``-D 0,1,6``) when one is
    given (see topology.routes.dr_path), by GUID (``-G``) when the LID is unknown."""
    if state not in ("disable", "enable", "query", "reset"):
        raise ValueError(f"ibportstate state {state!r}")
    if dr is not None:
        return ["ibportstate", "-D", dr, str(ref.port), state]
    if lid is None:
        return ["ibportstate", "-G", ref.guid, str(ref.port), state]
    return ["ibportstate", str(lid), str(ref.port), state]


def ufm_isolate_body(refs: list[PortRef], healthy: bool = False) -> dict[str, object]:
    body: dict[str, object] = {"ports": [ufm_port_name(r) for r in refs]}
    if healthy:
        body["ports_policy"] = "HEALTHY"
    else:
        body["ports_policy"] = "UNHEALTHY"
        body["action"] = "isolate"
    return body


def ufm_curl(refs: list[PortRef], healthy: bool = False, host: str = "<ufm-host>") -> str:
    body = json.dumps(ufm_isolate_body(refs, healthy), separators=(",", ":"))
    return (
        f"curl -k -u <user>:<password> -X PUT -H 'Content-Type: application/json' "
        f"https://{host}{UFM_UNHEALTHY_PORTS} -d {shlex.quote(body)}"
    )


def resweep_command(sm_guid: str | None = None) -> str:
    """Ask the SM for a heavy sweep by its service name or PID file, never by process name: a
    second OpenSM on the host (a standby, another subnet's SM) must not be signalled too."""
    debian = f"opensm@{sm_guid}" if sm_guid else "opensm@<SM port GUID>"
    return (
        "systemctl kill --signal=HUP opensm   # resweep now: the unit that runs the master SM "
        f'(Debian: {debian}; without systemd: kill -HUP "$(cat /var/run/opensm.pid)")'
    )


def restart_sm_command(sm_guid: str | None = None) -> str:
    """Restart the SM by its service name so it reads opensm.conf again (a HUP only resweeps;
    the switches keep forwarding on their tables meanwhile, and a standby SM may take over)."""
    debian = f"opensm@{sm_guid}" if sm_guid else "opensm@<SM port GUID>"
    return (
        "systemctl restart opensm   # opensm.conf is read at start: the unit that runs the master SM "
        f"(Debian: {debian}; UFM: change it in UFM's SM configuration instead)"
    )


def slurm_drain(host: str, reason: str) -> str:
    clean = reason.replace('"', "'")
    return f'scontrol update NodeName={host} State=DRAIN Reason="ibfab: {clean}"'


def slurm_resume(host: str) -> str:
    return f"scontrol update NodeName={host} State=RESUME"


# -- actions --------------------------------------------------------------------------------------
def isolate_port(
    ref: PortRef,
    lid: Lid | int | None,
    target: str,
    reason: str,
    evidence: tuple[str, ...] = (),
    impact: str = "",
    dr: str | None = None,
) -> Action:
    argv = ibportstate_argv(ref, lid, "disable", dr)
    undo = ibportstate_argv(ref, lid, "enable", dr)
    return Action(
        ActionKind.ISOLATE_PORT,
        target,
        reason,
        evidence,
        impact,
        (
            Command("opensm", "apply", shlex.join(argv)),
            Command("opensm", "apply", resweep_command()),
            Command("opensm", "undo", shlex.join(undo)),
            Command("ufm", "apply", ufm_curl([ref])),
            Command("ufm", "undo", ufm_curl([ref], healthy=True)),
        ),
        ref,
    )


def drain_node(host: str, reason: str, evidence: tuple[str, ...] = (), impact: str = "") -> Action:
    return Action(
        ActionKind.DRAIN_NODE,
        host,
        reason,
        evidence,
        impact or f"{host} takes no new jobs until resumed",
        (Command("slurm", "apply", slurm_drain(host, reason)), Command("slurm", "undo", slurm_resume(host))),
    )


def replace_cable(
    target: str,
    a: PortRef,
    b: PortRef,
    reason: str,
    evidence: tuple[str, ...] = (),
    names: tuple[str, str] | None = None,
) -> Action:
    """Reseat, then replace: ``names`` are the two ends as people call them (``leaf-01 port 9``)."""
    first, second = names or (str(a), str(b))
    return Action(
        ActionKind.REPLACE_CABLE,
        target,
        reason,
        evidence,
        "the link is out of service while the cable or transceivers are swapped",
        (
            Command(
                "operator",
                "apply",
                f"reseat and clean both ends ({first} and {second}); if it recurs, replace the cable "
                "and its transceivers; watch the link for 30 min before returning it to service",
            ),
        ),
        a,
    )


def set_nccl_env(
    variable: str, value: str, reason: str, since: str, evidence: tuple[str, ...] = ()
) -> Action:
    return Action(
        ActionKind.SET_NCCL_ENV,
        variable,
        reason,
        (*evidence, f"applies to NCCL {since}"),
        "",
        (Command("nccl", "apply", f"export {variable}={shlex.quote(value)}"),),
    )


def routing_action(
    kind: ActionKind,
    target: str,
    reason: str,
    conf_lines: Mapping[str, str],
    evidence: tuple[str, ...] = (),
    files: Mapping[str, str] | None = None,
    impact: str = "",
    sm_guid: str | None = None,
) -> Action:
    """An opensm.conf change: the lines to set, files to write, then a restart of the SM."""
    cmds = [Command("opensm", "apply", f"{k} {v}  # in opensm.conf") for k, v in conf_lines.items()]
    for path, content in (files or {}).items():
        body = content if content.endswith("\n") else content + "\n"
        cmds.append(Command("opensm", "apply", f"cat > {path} <<'EOF'\n{body}EOF"))
    cmds.append(Command("opensm", "apply", restart_sm_command(sm_guid)))
    return Action(kind, target, reason, evidence, impact, tuple(cmds))


def port_target(name: str, ref: PortRef, far_name: str, far: PortRef) -> str:
    return f"{name}:{ref.port} ({ref.guid}) <-> {far_name}:{far.port}"


def guid_list(guids: list[Guid]) -> str:
    return "\n".join(guids)
