"""Run one command on one named host over SSH: the service behind ``--ssh HOST`` options.

Host keys are verified against known_hosts by default; an unknown or changed key is an error
naming the host. A host may be given as ``[user@]host[:port]`` or as a name from an inventory
file (which can carry the user, port, key and jump host); ``~/.ssh/config`` applies as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from probes.inventory import HostEntry, parse_host_spec, read_inventory
from probes.transport import HostError, HostResult
from topology.errors import CommandFailed


@dataclass(frozen=True)
class SshOptions:
    inventory: str | None = None
    known_hosts: str | None = None
    accept_new_host_key: bool = False
    identity: str | None = None
    connect_timeout: float = 10.0


def host_entry(spec: str, opts: SshOptions) -> HostEntry:
    entry: HostEntry | None = None
    if opts.inventory:
        inv = read_inventory(opts.inventory)
        if spec in inv.names():
            entry = inv.get(spec)
    if entry is None:
        entry = parse_host_spec(spec, "--ssh")
    return with_identity(entry, opts.identity)


def with_identity(entry: HostEntry, identity: str | None) -> HostEntry:
    """``entry`` with the private key given by ``--identity`` (it overrides the inventory's)."""
    if not identity:
        return entry
    return HostEntry(entry.name, entry.address, entry.user, entry.port, str(Path(identity)), entry.jump)


def run_on_host(
    spec: str,
    argv: Sequence[str],
    timeout: float,
    opts: SshOptions | None = None,
    ok_codes: Sequence[int] = (0,),
) -> HostResult:
    """Run ``argv`` on ``spec``; transport failures raise HostError, an exit code outside
    ``ok_codes`` CommandFailed (ibqueryerrors exits 1 when it finds errors: pass ``(0, 1)``)."""
    from probes.ssh import SshTransport

    opts = opts or SshOptions()
    entry = host_entry(spec, opts)
    with SshTransport(
        entry,
        known_hosts=opts.known_hosts,
        accept_new=opts.accept_new_host_key,
        connect_timeout=opts.connect_timeout,
    ) as transport:
        result = transport.run(argv, timeout)
    if result.failure is not None:
        raise HostError(entry.name, result.failure, result.message)
    if result.exit_code not in ok_codes:
        raise CommandFailed(argv, result.exit_code, result.stderr, f"ssh {entry.name}")
    return result
