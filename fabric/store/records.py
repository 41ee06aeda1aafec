"""The frozen records the store takes and hands back."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from topology.errors import UsageError
from topology.model import Fabric, LinkKey, PortRef

DAY_S = 86400.0

# A link as topology.model.Link.key spells it: ((guid, port), (guid, port)), lower end first.


@dataclass(frozen=True, slots=True)
class RawCapture:
    """Tool output as it came, to be kept beside what was parsed from it.

    ``raw`` is kept byte-exact: a ``str`` comes back as the same ``str``, ``bytes`` as ``bytes``.
    ``parser_version`` names the parser that read it (e.g. ``"perfquery/3"``) so that a parser fix
    can find and re-read old captures.
    """

    kind: str  # what it is for: "topology", "counters", "probe", ...
    tool: str  # "ibnetdiscover", "perfquery", "ib_write_bw", ...
    raw: str | bytes
    taken_at: float
    source: str = ""  # host or file it came from
    argv: tuple[str, ...] = ()
    parser_version: str = ""


@dataclass(frozen=True, slots=True)
class Capture:
    """A stored capture, with its text."""

    id: int
    kind: str
    tool: str
    argv: tuple[str, ...]
    source: str
    taken_at: float
    parser_version: str
    raw: str | bytes
    size: int  # bytes before compression

    @property
    def text(self) -> str:
        """The raw output as text (bytes are decoded as UTF-8, undecodable bytes kept as escapes)."""
        return self.raw if isinstance(self.raw, str) else self.raw.decode("utf-8", "surrogateescape")


@dataclass(frozen=True, slots=True)
class CaptureInfo:
    """A stored capture without its text (for listings)."""

    id: int
    kind: str
    tool: str
    source: str
    taken_at: float
    parser_version: str
    size: int


@dataclass(frozen=True, slots=True)
class TopologySummary:
    id: int
    capture_id: int | None
    taken_at: float
    source: str
    label: str | None
    nodes: int
    switches: int
    hcas: int
    links: int


@dataclass(frozen=True, slots=True)
class StoredTopology:
    summary: TopologySummary
    fabric: Fabric

    @property
    def id(self) -> int:
        return self.summary.id


@dataclass(frozen=True, slots=True)
class PortCounterRow:
    """One port read in a counter snapshot.

    ``counters`` maps COUNTER_NAMES entries to values; a name that is absent was not read.
    """

    time: float
    guid: str
    port: int
    lid: int | None = None
    peer_guid: str | None = None
    peer_port: int | None = None
    reachable: bool = True
    unreachable_reason: str | None = None
    counters: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CounterSnapshotInfo:
    id: int
    taken_at: float
    source: str
    topology_id: int | None
    ports: int
    state: str


@dataclass(frozen=True, slots=True)
class ProbeSweep:
    id: int
    started: float
    finished: float | None
    pattern: str
    source: str


@dataclass(frozen=True, slots=True)
class ProbeResultRow:
    """One pair measured in a sweep (client sends to server)."""

    client_host: str
    client_device: str
    server_host: str
    server_device: str
    gbps: float | None
    line_rate_gbps: float | None
    ok: bool
    error: str | None = None
    capture_id: int | None = None


@dataclass(frozen=True, slots=True)
class StoredSweep:
    sweep: ProbeSweep
    results: tuple[ProbeResultRow, ...]


def link_subject(link: LinkKey) -> str:
    """The text that names a link in findings_history (its key there, beside the typed ends).

    >>> link_subject((("0x0000000000000001", 3), ("0x0000000000000002", 1)))
    '0x0000000000000001/3-0x0000000000000002/1'
    """
    (a_guid, a_port), (b_guid, b_port) = link
    return f"{a_guid}/{a_port}-{b_guid}/{b_port}"


@dataclass(frozen=True, slots=True)
class FindingSubject:
    """What a finding is about: one link (both ends) or one node (its GUID)."""

    link: LinkKey | None = None
    node: str | None = None

    def __post_init__(self) -> None:
        if (self.link is None) == (self.node is None):
            raise ValueError("a finding is about one link or one node")

    @classmethod
    def of_link(cls, link: LinkKey) -> FindingSubject:
        return cls(link=link)

    @classmethod
    def of_node(cls, guid: str) -> FindingSubject:
        return cls(node=guid)

    @property
    def key(self) -> str:
        """Its text in the store's key (``GUID/PORT-GUID/PORT`` or the node's GUID)."""
        return link_subject(self.link) if self.link is not None else str(self.node)


@dataclass(frozen=True, slots=True)
class FindingRecord:
    """What health found about one link or node on one day (for repeat offenders across days).

    ``subject`` is its key text (see :func:`link_subject`); ``about`` is what it names, typed.
    """

    day: str  # YYYY-MM-DD
    subject: str
    kind: str  # "ber", "flapping", "congestion", ...
    status: str  # "warning", "error", "ok", ...
    about: FindingSubject | None = None


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One change an operator or the daemon made (or tried), as the audit log keeps it: the
    text for people (``target``, ``command``, ``result``) and, typed, what ran (``argv``), on
    which switch ports or Slurm nodes (and their fabric hosts), and where (the source's kind and
    target: ``lab``/``demo``, ``local``/``""``; empty when an old entry did not say)."""

    id: int
    time: float
    user: str
    action: str  # "isolate", "deisolate", "drain", "resume", ...
    target: str
    command: str
    result: str
    undo_of: int | None
    argv: tuple[str, ...] = ()
    ports: tuple[PortRef, ...] = ()
    nodes: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    source_kind: str = ""
    source_target: str = ""


@dataclass(frozen=True, slots=True)
class Schedule:
    id: int
    name: str
    kind: str  # "counters" or "sweep"
    interval_seconds: int | None
    cron: str | None
    args: Mapping[str, Any]
    enabled: bool
    last_run: float | None
    next_run: float | None


@dataclass(frozen=True, slots=True)
class Run:
    id: int
    schedule_id: int | None
    started: float
    finished: float | None
    ok: bool | None
    error: str | None


@dataclass(frozen=True, slots=True)
class Damage:
    """Something in the store that cannot be read back as it was stored."""

    # "counter snapshot", "port set", "topology", "capture"; "value" (a value of the wrong kind);
    # "file" (SQLite's pages), "schema" (the rows of sqlite_master), "header", "wal"
    kind: str
    ref: int | None  # its id, the value's rowid (None for the file, schema, header, WAL)
    taken_at: float | None
    reason: str
    table: str | None = None  # the table or index a damaged page or a bad value is in
    column: str | None = None  # a bad value's column


@dataclass(frozen=True, slots=True)
class QuarantineEntry:
    """A damaged row `ibfab store repair` set aside (its blob is kept in the quarantine table)."""

    id: int
    time: float  # when it was set aside
    kind: str
    ref: int  # its id where it was
    taken_at: float | None
    reason: str
    size: int | None  # bytes of its blob as stored


@dataclass(frozen=True, slots=True)
class CompactResult:
    """What one compaction did (``ibfab store compact``, or the daemon after a collection)."""

    hours: int  # hours of raw snapshots turned into hourly points
    points: int  # hourly points made
    snapshots_deleted: int  # raw snapshots folded into points, and snapshots past every span
    captures_deleted: int
    link_events_deleted: int
    findings_deleted: int
    runs_deleted: int
    done: bool  # False: stopped at its time budget, the next compaction goes on


@dataclass(frozen=True, slots=True)
class HourlyCounters:
    """What an hourly point keeps about its hour beyond its own values, per port (``ports`` order)."""

    snapshot_id: int
    hour: float  # start of the hour
    samples: int  # snapshots the hour had
    first_taken: float
    ports: tuple[tuple[str, int], ...]
    sums: Mapping[str, list[int]]  # increments summed, a reset counting from zero (not of 64-bit counters)
    maxima: Mapping[str, list[int]]  # the largest increment between two snapshots
    resets: list[int]  # counters that went down
    intervals: list[int]  # intervals with a reading


@dataclass(frozen=True, slots=True)
class Span:
    """A kind of counter history: how many snapshots, from when to when, how many bytes."""

    count: int
    oldest: float | None
    newest: float | None
    bytes: int


@dataclass(frozen=True, slots=True)
class StoreInfo:
    """What the store holds and what it will weigh (`ibfab store info`)."""

    path: str
    file_bytes: int  # the file and its WAL
    free_bytes: int  # pages free inside the file (reused before it grows)
    policy: Retention
    raw: Span
    hourly: Span
    capture_count: int
    capture_bytes: int
    port_set_bytes: int
    topologies: int
    topology_bytes: int
    findings: int
    findings_days: tuple[str | None, str | None]
    link_events: int
    quarantined: int
    snapshots_per_day: float  # the collection rate of the raw snapshots
    bytes_per_snapshot: float  # its block and raw captures
    horizon_s: float
    projected_horizon_bytes: float  # the store after horizon_s more of collecting at this rate
    projected_steady_bytes: float  # once every span is full


@dataclass(frozen=True, slots=True)
class Retention:
    """How long each kind of history is kept (seconds)."""

    raw_s: float = 7 * DAY_S  # every snapshot
    hourly_s: float = 90 * DAY_S  # hourly points and their aggregates; link events
    findings_s: float = 365 * DAY_S  # findings history (repeat offenders) and daemon runs
    captures_s: float = 1 * DAY_S  # raw tool output of counter snapshots

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not math.isfinite(value) or value <= 0:
                raise UsageError(f"retention {f.name[:-2]} must be a positive duration, not {value!r}")
        if self.hourly_s < self.raw_s:
            raise UsageError(
                f"retention: hourly points ({self.hourly_s:g} s) must be kept at least as long as raw "
                f"snapshots ({self.raw_s:g} s)"
            )
