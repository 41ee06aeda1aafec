"""Where a use case gets its fabric and runs its tools: one :class:`Source`, one transport.

A source is a saved file or stdin (text handed in by the caller), an ibdiagnet output directory,
a stored topology snapshot, this machine, a management host over SSH (host keys verified against
known_hosts by default; an unknown or changed key is an error naming the host), or a lab fabric
(``ibfab lab``: this machine with the simulator's environment). :func:`read_source` is the one
place that turns the command line's choice into a :class:`Source` (and picks the newest stored
snapshot when a command that only reads is given none); :func:`transport_for` is the only place
that tells them apart for running a command; every use case calls :func:`run_tool` or holds the
transport it returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from probes.inventory import HostEntry, parse_host_spec, read_inventory
from probes.runner import LocalTransport
from probes.transport import CommandResult, Transport
from topology.errors import LabError, UsageError
from topology.textfile import read_input_text

# Sources whose text the caller hands in (nothing runs for them).
TEXT_KINDS = ("file", "stdin")
# Sources read from what was kept: an ibdiagnet run's directory, a stored topology snapshot.
KEPT_KINDS = ("ibdiagnet", "snapshot")
# The options that choose a source, as the command line spells them (one error names them all).
SOURCE_OPTIONS = ("--input", "--ssh", "--lab", "--ibdiagnet", "--snapshot")


@dataclass(frozen=True)
class Source:
    """Where the fabric comes from: ``file``, ``stdin``, ``ibdiagnet`` (an output directory),
    ``snapshot`` (an id, ``latest`` or a label in the store ``db``), ``local``, ``ssh`` or ``lab``."""

    kind: str
    target: str = ""
    db: str | None = None  # the store of a ``snapshot`` source (None: the default store)

    @property
    def label(self) -> str:
        return {
            "file": self.target,
            "stdin": "<stdin>",
            "ibdiagnet": f"ibdiagnet {self.target}",
            "snapshot": f"snapshot {self.target}",
            "local": "local ibnetdiscover",
            "ssh": f"ssh {self.target}",
            "lab": f"lab {self.target}",
        }.get(self.kind, self.kind)

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


def transport_for(src: Source, ssh: SshOptions | None = None) -> Transport:
    """The transport that runs tools for ``src`` (close it when done)."""
    if src.kind == "local":
        return LocalTransport("local")
    if src.kind == "lab":
        from fabric import lab

        return lab.transport(src.target)
    if src.kind == "ssh":
        from probes.ssh import SshTransport

        opts = ssh or SshOptions()
        return SshTransport(
            host_entry(src.target, opts),
            known_hosts=opts.known_hosts,
            accept_new=opts.accept_new_host_key,
            connect_timeout=opts.connect_timeout,
        )
    raise UsageError(f"nothing runs for {src.label}: use --lab, --ssh or this machine")


def run_tool(
    src: Source,
    argv: Sequence[str],
    timeout: float,
    ssh: SshOptions | None = None,
    ok_codes: Sequence[int] = (0,),
) -> CommandResult:
    """Run one tool for ``src``: HostError when the host could not run it, CommandFailed for an
    exit code outside ``ok_codes`` (ibqueryerrors exits 1 when it finds errors: pass ``(0, 1)``)."""
    transport = transport_for(src, ssh)
    try:
        return transport.require(transport.run(argv, timeout), ok_codes)
    finally:
        transport.close()


def run_on_host(
    spec: str,
    argv: Sequence[str],
    timeout: float,
    opts: SshOptions | None = None,
    ok_codes: Sequence[int] = (0,),
) -> CommandResult:
    """:func:`run_tool` on the SSH host ``spec``."""
    return run_tool(Source("ssh", spec), argv, timeout, opts, ok_codes)


def read_source(
    input_path: str | None,
    ssh: str | None,
    lab: str | None,
    *,
    ibdiagnet: str | None = None,
    snapshot: str | None = None,
    db: str | None = None,
    stored_default: bool = False,
) -> tuple[Source, str | None]:
    """The source chosen by ``--input FILE|-``, ``--ssh HOST``, ``--lab NAME``, ``--ibdiagnet DIR``
    or ``--snapshot latest|ID|LABEL``, with the text of a saved file or stdin read here.

    With none of them: the newest snapshot in the store ``db`` when ``stored_default`` (a command
    that only reads) and the store holds one, else this machine (the local ibnetdiscover)."""
    chosen = [x for x in (input_path, ssh, lab, ibdiagnet, snapshot) if x]
    if len(chosen) > 1:
        raise UsageError("choose one of " + ", ".join(SOURCE_OPTIONS))
    if snapshot:
        return Source("snapshot", snapshot, db), None
    if ibdiagnet:
        return Source("ibdiagnet", ibdiagnet), None
    # Bytes, decoded by the parser's rule: line ends as saved (a terminal log's CR CR LF), UTF-16.
    # Bounded: a device or a wrong file is refused (size, line length) before it is read whole.
    if input_path == "-":
        return Source("stdin"), read_input_text("-", "ibnetdiscover")
    if input_path:
        return Source("file", input_path), read_input_text(input_path, "ibnetdiscover")
    if ssh:
        return Source("ssh", ssh), None
    if lab:
        return Source("lab", lab), None
    if stored_default:
        newest = newest_snapshot(db)
        if newest is not None:
            return Source("snapshot", str(newest), db), None
    return Source("local"), None


def require_running_lab(name: str) -> None:
    """A LabError naming the command that starts lab ``name`` when it is not running."""
    from fabric import lab

    if not lab.status(name).running:
        raise LabError(f"lab {name!r} is not running (start it with 'ibfab lab up --name {name}')")


def newest_snapshot(db: str | None) -> int | None:
    """The id of the newest topology snapshot in the store ``db``, None when there is no store or
    it holds none (an unreadable store is an error: it is not silently passed over)."""
    from fabric.store import Store, store_path

    path = store_path(db)
    if not path.exists():
        return None
    with Store.open(path, create=False) as store:
        rows = store.list_topologies()
    return rows[-1].id if rows else None
