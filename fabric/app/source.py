"""Where a use case gets its fabric: one typed :class:`Source`, and how SSH reaches a host.

A source is a saved file or stdin (its text read when the session was built), an ibdiagnet output
directory, a stored topology snapshot (read from the session's store), this machine, a management
host over SSH (host keys verified against known_hosts by default; an unknown or changed key is an
error naming the host), or a lab fabric (``ibfab lab``). Which one the command line chose is
decided once, where the session is built (:func:`fabric.app.session.choose_source`); how tools
run for it is its driver's business (:func:`fabric.app.drivers.driver_for`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the inventory is read only for SSH: a file's discovery never imports it
    from probes.inventory import HostEntry


# The options that choose a source, as the command line spells them (one error names them all).
SOURCE_OPTIONS = ("--input", "--ssh", "--lab", "--ibdiagnet", "--snapshot")


class SourceKind(StrEnum):
    """Where the fabric comes from."""

    FILE = "file"  # a saved ibnetdiscover output
    STDIN = "stdin"  # the same, piped in
    IBDIAGNET = "ibdiagnet"  # an ibdiagnet output directory
    SNAPSHOT = "snapshot"  # a topology snapshot in the session's store
    LOCAL = "local"  # this machine's HCA
    SSH = "ssh"  # a management host over SSH
    LAB = "lab"  # a lab fabric (ibsim + OpenSM)


# Sources whose text the caller hands in, and sources read from what was kept: nothing runs for them.
TEXT_KINDS = (SourceKind.FILE, SourceKind.STDIN)
KEPT_KINDS = (SourceKind.IBDIAGNET, SourceKind.SNAPSHOT)


@dataclass(frozen=True)
class Source:
    """Where the fabric comes from: its kind and target (a path, a snapshot reference, a host, a
    lab's name); ``text`` is a saved file's or stdin's ibnetdiscover text, read once."""

    kind: SourceKind
    target: str = ""
    text: str | None = field(default=None, repr=False, compare=False)

    @classmethod
    def file(cls, path: str, text: str) -> Source:
        return cls(SourceKind.FILE, path, text)

    @classmethod
    def stdin(cls, text: str) -> Source:
        return cls(SourceKind.STDIN, "", text)

    @classmethod
    def ibdiagnet(cls, directory: str) -> Source:
        return cls(SourceKind.IBDIAGNET, directory)

    @classmethod
    def snapshot(cls, ref: str) -> Source:
        """A stored topology snapshot: an id, ``latest`` or a label."""
        return cls(SourceKind.SNAPSHOT, ref)

    @classmethod
    def local(cls) -> Source:
        return cls(SourceKind.LOCAL)

    @classmethod
    def ssh(cls, host: str) -> Source:
        return cls(SourceKind.SSH, host)

    @classmethod
    def lab(cls, name: str) -> Source:
        return cls(SourceKind.LAB, name)

    @property
    def label(self) -> str:
        return {
            SourceKind.FILE: self.target,
            SourceKind.STDIN: "<stdin>",
            SourceKind.IBDIAGNET: f"ibdiagnet {self.target}",
            SourceKind.SNAPSHOT: f"snapshot {self.target}",
            SourceKind.LOCAL: "local ibnetdiscover",
            SourceKind.SSH: f"ssh {self.target}",
            SourceKind.LAB: f"lab {self.target}",
        }[self.kind]

    @property
    def runs_tools(self) -> bool:
        """Whether tools run for this source (not a saved text, ibdiagnet run or stored snapshot)."""
        return self.kind not in TEXT_KINDS + KEPT_KINDS


@dataclass(frozen=True)
class SshOptions:
    inventory: str | None = None
    known_hosts: str | None = None
    accept_new_host_key: bool = False
    identity: str | None = None
    connect_timeout: float = 10.0


def host_entry(spec: str, opts: SshOptions) -> HostEntry:
    """``[user@]host[:port]`` or a name from the inventory (which can carry user, port, key and
    jump host; ``~/.ssh/config`` applies as well)."""
    from probes.inventory import parse_host_spec, read_inventory

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
    from probes.inventory import HostEntry

    return HostEntry(entry.name, entry.address, entry.user, entry.port, str(Path(identity)), entry.jump)
