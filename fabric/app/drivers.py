"""The fabric driver of each source: the one place that tells this machine, an SSH host and a lab
apart (:func:`driver_for`). Every use case runs its tools, changes ports and asks the SM through
the driver its session holds (:class:`probes.driver.FabricDriver`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fabric.app.source import Source, SourceKind, SshOptions, host_entry
from probes.driver import FabricDriver

if TYPE_CHECKING:
    from probes.transport import CommandResult, Transport


class LocalDriver(FabricDriver):
    """This machine's HCA: the tools run here."""

    here = True

    def __init__(self) -> None:
        super().__init__("local ibnetdiscover")

    def transport(self) -> Transport:
        from probes.runner import LocalTransport

        return LocalTransport("local")


class SshDriver(FabricDriver):
    """A management host over SSH (host keys verified; the inventory's user, port, key and jump host)."""

    def __init__(self, host: str, opts: SshOptions | None = None) -> None:
        super().__init__(f"ssh {host}")
        self.host = host
        self.opts = opts or SshOptions()

    def transport(self) -> Transport:
        from probes.ssh import SshTransport

        return SshTransport(
            host_entry(self.host, self.opts),
            known_hosts=self.opts.known_hosts,
            accept_new=self.opts.accept_new_host_key,
            connect_timeout=self.opts.connect_timeout,
        )


def driver_for(src: Source, ssh: SshOptions | None = None) -> FabricDriver:
    """The driver that reaches ``src``'s fabric (one that runs nothing for a saved text, an
    ibdiagnet run or a stored snapshot)."""
    if src.kind is SourceKind.LOCAL:
        return LocalDriver()
    if src.kind is SourceKind.SSH:
        return SshDriver(src.target, ssh)
    if src.kind is SourceKind.LAB:
        from fabric.lab.driver import LabDriver

        return LabDriver(src.target)
    return FabricDriver(src.label)


def run_on_host(
    spec: str,
    argv: Sequence[str],
    timeout: float,
    opts: SshOptions | None = None,
    ok_codes: Sequence[int] = (0,),
) -> CommandResult:
    """One tool on the SSH host ``spec`` (a head host, a job's first host)."""
    return SshDriver(spec, opts).run_tool(argv, timeout, ok_codes)


__all__ = ["LocalDriver", "SshDriver", "driver_for", "run_on_host"]
