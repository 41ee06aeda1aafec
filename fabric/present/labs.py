"""Labs for people: what `ibfab lab status` says of each lab, and how to reach it."""

from __future__ import annotations

from fabric.lab.driver import CLIENT_SLOTS, LabHealth, LabProblem, Trouble


def render_lab_health(health: LabHealth) -> list[str]:
    """The lab's line (running, SICK or DEAD, with its PIDs and fabric), then one line per problem
    and what to do, or what the checks found on a working lab."""
    s = health.state
    word = "running" if health.healthy else "DEAD" if not (s.ibsim_alive and s.opensm_alive) else "SICK"
    lines = [
        f"{s.name}: {word} (ibsim pid {s.ibsim_pid} {'up' if s.ibsim_alive else 'gone'}, "
        f"opensm pid {s.opensm_pid} {'up' if s.opensm_alive else 'gone'}); "
        f"{s.switches} switches, {s.hcas} HCAs; {s.spec}"
        + (f"; faults: {' '.join(s.faults)}" if s.faults else "")
    ]
    if health.healthy:
        lines.append(f"  checked: a new client attached and was answered; {health.sm}; {_slots(health)}")
        return lines
    lines += [f"  problem: {_problem(p, health)}" for p in health.problems]
    lines.append(
        f"  to fix: ibfab lab restart --name {s.name} (stops both by PID and brings the same fabric up;"
        " what was injected into it is lost)"
    )
    return lines


def _slots(health: LabHealth) -> str:
    if health.clients is None:
        return "client slots unknown (the console did not answer)"
    gone = sum(not c.alive for c in health.clients)
    held = f"{len(health.clients)} of {CLIENT_SLOTS} client slots held"
    return held + (f", {gone} by processes that are gone" if gone else "")


def _problem(p: LabProblem, health: LabHealth) -> str:
    if p.trouble is Trouble.IBSIM_GONE:
        return f"ibsim ({p.detail}) is not running: no fabric"
    if p.trouble is Trouble.OPENSM_GONE:
        return f"opensm ({p.detail}) is not running: no subnet manager"
    if p.trouble is Trouble.CONSOLE_SILENT:
        return f"the simulator does not answer its console: {p.detail}"
    if p.trouble is Trouble.CLIENTS_REFUSED:
        return f"ibsim refuses new clients ({_slots(health)}): {p.detail}"
    if p.trouble is Trouble.MAD_FAILED:
        return f"a new client attached but the simulator did not answer it: {p.detail}"
    if p.trouble is Trouble.SM_SILENT:
        return f"the subnet manager does not answer sminfo: {p.detail}"
    return f"the subnet manager is not the master: {p.detail}"


def lab_problem_line(health: LabHealth) -> str:
    """One line for stderr: which lab is not working and its first problem."""
    return f"lab {health.state.name} is not working: {_problem(health.problems[0], health)}"
