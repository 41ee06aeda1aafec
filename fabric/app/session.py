"""One :class:`Session` per entry point: where the fabric is and everything a use case needs to
reach it, built once (each CLI command in :mod:`fabric.cli.options`, the TUI in :mod:`tui.cli`,
the daemon per job, the exporter once) and handed to the use cases.

A session holds the :class:`~fabric.app.source.Source` (typed, never a bare lab name), the store
(:class:`StoreAccess`: the one place a store is opened, read-only or writable), the site's health
thresholds, the Slurm node map, the SSH options and the fabric driver of its source
(:mod:`fabric.app.drivers`). No use case opens a store or asks whether its fabric is a lab.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from fabric.app.source import SOURCE_OPTIONS, Source, SshOptions
from fabric.core.paths import store_path
from topology.errors import StoreError, UsageError

if TYPE_CHECKING:
    from fabric.app.slurm import NodeMap
    from fabric.health.thresholds import HealthThresholds
    from fabric.store import Store
    from probes.driver import FabricDriver


@dataclass(frozen=True)
class StoreAccess:
    """The store at ``path``: :meth:`read` never creates one (looking leaves no stray file after a
    typo in --db), :meth:`write` creates it when it is not there yet. Each call opens a new
    :class:`~fabric.store.Store` for a with-block (one per thread: sqlite3 connections stay in the
    thread that made them)."""

    path: Path

    @classmethod
    def at(cls, db: Path | None = None) -> StoreAccess:
        """The store ``--db`` names, else the default store (the user's data directory)."""
        return cls(store_path(db))

    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> Store | None:
        """The store opened to read, None when there is none."""
        from fabric.store import Store

        return Store.existing(self.path)

    def require(self, hint: str = "") -> Store:
        """The store opened to read; a StoreError naming it (and what to do: ``hint``) when there is none."""
        from fabric.store import Store

        if not self.path.exists():
            raise StoreError(f"{self.path}: no ibfab store there" + (f"; {hint}" if hint else ""))
        return Store.open(self.path, create=False)

    def write(self) -> Store:
        """The store opened to write, created (and its directory) when it is not there yet."""
        from fabric.store import Store

        return Store.open(self.path)

    def mend(self) -> Store:
        """The store opened by ``ibfab store repair`` to mend it (its header, schema and pages);
        only :mod:`fabric.app.storecare` asks for this."""
        from fabric.store import Store

        return Store.open(self.path, create=False, mend=True)


@dataclass(frozen=True)
class Session:
    """Where the fabric is and how to reach it, for one command, screen or job."""

    source: Source = field(default_factory=Source.local)
    store: StoreAccess = field(default_factory=StoreAccess.at)
    thresholds: HealthThresholds | None = None  # the site's (--thresholds); None: the defaults
    thresholds_file: Path | None = None  # where they were read (a child process reads it again)
    node_map: NodeMap | None = None  # fabric host -> Slurm node (--node-map); None: the same names
    ssh: SshOptions = field(default_factory=SshOptions)

    @cached_property
    def driver(self) -> FabricDriver:
        """The fabric driver of :attr:`source` (built when first asked for)."""
        from fabric.app.drivers import driver_for

        return driver_for(self.source, self.ssh)

    def on(self, source: Source) -> Session:
        """The same session on another fabric (the demo's own labs, a rediscovery elsewhere)."""
        return replace(self, source=source)


def choose_source(
    store: StoreAccess,
    input_path: str | None = None,
    ssh: str | None = None,
    lab: str | None = None,
    *,
    ibdiagnet: str | None = None,
    snapshot: str | None = None,
    stored_default: bool = False,
) -> Source:
    """The source chosen by ``--input FILE|-``, ``--ssh HOST``, ``--lab NAME``, ``--ibdiagnet DIR``
    or ``--snapshot latest|ID|LABEL``, with the text of a saved file or stdin read here.

    With none of them: the newest snapshot in ``store`` when ``stored_default`` (a command that
    only reads) and the store holds one, else this machine (the local ibnetdiscover)."""
    from topology.textfile import read_input_text

    chosen = [x for x in (input_path, ssh, lab, ibdiagnet, snapshot) if x]
    if len(chosen) > 1:
        raise UsageError("choose one of " + ", ".join(SOURCE_OPTIONS))
    if snapshot:
        return Source.snapshot(snapshot)
    if ibdiagnet:
        return Source.ibdiagnet(ibdiagnet)
    # Bytes, decoded by the parser's rule: line ends as saved (a terminal log's CR CR LF), UTF-16.
    # Bounded: a device or a wrong file is refused (size, line length) before it is read whole.
    if input_path == "-":
        return Source.stdin(read_input_text("-", "ibnetdiscover"))
    if input_path:
        return Source.file(input_path, read_input_text(input_path, "ibnetdiscover"))
    if ssh:
        return Source.ssh(ssh)
    if lab:
        return Source.lab(lab)
    if stored_default:
        newest = newest_snapshot(store)
        if newest is not None:
            return Source.snapshot(str(newest))
    return Source.local()


def newest_snapshot(store: StoreAccess) -> int | None:
    """The id of the newest topology snapshot in ``store``, None when there is no store or it
    holds none (an unreadable store is an error: it is not silently passed over)."""
    stored = store.read()
    if stored is None:
        return None
    with stored as s:
        rows = s.list_topologies()
    return rows[-1].id if rows else None


def open_session(
    source: Source | None = None,
    *,
    db: Path | None = None,
    thresholds_file: Path | None = None,
    node_map_file: Path | None = None,
    ssh: SshOptions | None = None,
) -> Session:
    """A session from an entry point's options: the thresholds and node map files read here (a
    bad file is a one-line UsageError before anything runs)."""
    thresholds = None
    if thresholds_file is not None:
        from fabric.health.thresholds import load_thresholds

        thresholds = load_thresholds(thresholds_file)
    node_map = None
    if node_map_file is not None:
        from fabric.app.slurm import read_node_map

        node_map = read_node_map(str(node_map_file))
    return Session(
        source or Source.local(),
        StoreAccess.at(db),
        thresholds,
        thresholds_file,
        node_map,
        ssh or SshOptions(),
    )


__all__ = ["Session", "StoreAccess", "choose_source", "newest_snapshot", "open_session"]
