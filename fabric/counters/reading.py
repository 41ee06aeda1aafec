"""Fabric-wide port-counter collection: command lines, and tool runs turned into samples.

DECISION (measured by bench/bench_collect_choice.py; numbers below): collect with two fabric-wide
``ibqueryerrors`` passes, and keep per-node ``perfquery`` as the fallback for nodes that pass missed.

* pass 1 ``ibqueryerrors --counters -r``: every port of every node it reaches, with the 64-bit
  data counters (PortCountersExtended), the node GUID, the port's LID and its far end's LID (how
  CAs, which have no LID in the model, get one for the fallback). No error counters in this mode.
* pass 2 ``ibqueryerrors --threshold-file /dev/null -r``: the error counters of every port whose
  counters are above 0 (``/dev/null`` pins every threshold to 0 whatever the site's
  error_thresholds says). A port the pass checked but did not list has all its error counters at
  0; we only infer that when pass 2 checked at least as many nodes as pass 1, otherwise those
  error counters stay NA. ``-r`` adds the port's LID, which maps the port GUIDs this mode prints
  for CAs back to their node.
* Never ``-k``/``-K`` (they clear counters) and never ``perfquery -r/-R``: the store keeps deltas.

Why not per-switch ``perfquery -x``: it needs one process per node and attribute (ibsim's ``-x``,
like that of any PMA advertising CapMask2 0, carries no error counters, so ``perfquery -x -l`` plus
``perfquery -l`` per node), it needs every CA's LID (the model keeps none for CAs), and reading
the HCA end of every host cable costs one pair of runs per HCA. Per-switch runs alone are as
fast as ibqueryerrors but leave the 1,024 HCA-side ports unread.

Measured with bench/bench_collect_choice.py on a 1,024-HCA fat tree in ibsim (32 leaves x 32
hosts, 16 spines, 48 switches, 2,048 cables, 4,096 cabled ports), 2-core machine shared with
other work (load average 3.5), two runs with the argv above:

    approach        wall s        tool runs  ports read  64-bit data  all error counters  planted read
    ibqueryerrors   1.07 / 2.54       2        4096        4096          4096                4/4
    perfquery      32.97 / 40.95   2144        4096        4096          4096                4/4
      of which per-switch runs 1.37 / 4.76 s (3,072 switch ports), per-HCA runs 30.2 / 34.6 s
    ratio perfquery / ibqueryerrors: 30.7x / 16.2x
    pass times: --counters -r 0.51 / 1.17 s (1.9 MB of text); error pass 0.29 / 1.14 s
    peak RSS: bench process 40 MiB; largest child (ibsim/opensm/a tool) 39 MiB

``run_tool`` is injected (local, SSH or lab); it must return a CommandResult for any exit code
(ibqueryerrors exits 1 when it finds errors) and raise CommandFailed only when the tool could not
run to completion (not found, killed, timed out, connection lost).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from fabric.core import fields
from fabric.counters import ibqueryerrors as iqe
from fabric.counters.merge import (
    ERROR_COUNTERS,
    REACHABLE,
    MergedPorts,
    Row,
    merge_passes,
    sample_row,
    unreachable_row,
)
from fabric.counters.parse import IbqueryerrorsReport, parse_ibqueryerrors, parse_perfquery
from fabric.counters.samples import PortSample, Unreachable
from probes.transport import CommandResult
from topology._speed import gc_paused
from topology.errors import CommandFailed, ParseError
from topology.model import Fabric, Guid, Node, PortRef

if TYPE_CHECKING:
    import pandas as pd

RunTool = Callable[[Sequence[str]], CommandResult]
FALLBACK_NODE_LIMIT = 64
Key = tuple[Guid, int]


class _Samples:
    """The samples of a collection, made only when someone asks (the store takes the rows)."""

    __slots__ = ("_done", "fallback", "merged", "order")

    def __init__(self, order: Sequence[Key], merged: MergedPorts | None, fallback: dict[Key, PortSample]):
        self.order = order
        self.merged = merged
        self.fallback = fallback
        self._done: tuple[PortSample, ...] | None = None

    def get(self) -> tuple[PortSample, ...]:
        if self._done is None:
            with gc_paused():
                got = self.merged.samples() if self.merged is not None else {}
                got.update(self.fallback)
                self._done = tuple(got[key] for key in self.order if key in got)
            self.merged = None  # its accumulators are no longer needed
        return self._done


@dataclass(frozen=True, slots=True)
class CollectionResult:
    """One fabric-wide read: port rows, ports that did not answer, and every tool run as it came back.

    ``rows`` are the ports read, as the store takes them (``fabric.store.PORT_COUNTER_FIELDS``
    order, ``reachable`` 1, counters None where not read), sorted by (guid, port); ``samples``
    are the same ports as PortSample records, built on first use.
    """

    time: float
    rows: tuple[Row, ...]
    unreachable: tuple[Unreachable, ...]
    raw: Mapping[tuple[str, ...], CommandResult]
    peers: Mapping[tuple[Guid, int], PortRef]
    problems: tuple[ParseError, ...] = ()
    notes: tuple[str, ...] = ()
    _samples: _Samples = field(default_factory=lambda: _Samples((), None, {}), repr=False, compare=False)

    @property
    def samples(self) -> tuple[PortSample, ...]:
        """The ports read as PortSample records, sorted by (guid, port) like ``rows``."""
        return self._samples.get()


# -- command lines -------------------------------------------------------------------------------
def ibqueryerrors_argv() -> list[list[str]]:
    """The two fabric-wide passes (data counters of every port; error counters above 0).

    ``-r`` adds each port's LID and its far end's LID: how CAs (no LID in the model) get one for
    the perfquery fallback, even when the CA itself does not answer.
    """
    return [
        ["ibqueryerrors", "--counters", "-r"],
        ["ibqueryerrors", "--threshold-file", "/dev/null", "-r"],
    ]


def perfquery_argv(lid: int, ports: Sequence[int]) -> list[list[str]]:
    """Per-node reads: 64-bit data counters (``-x``) and the PortCounters error counters."""
    plist = _port_list(ports)
    return [["perfquery", "-x", "-l", str(lid), plist], ["perfquery", "-l", str(lid), plist]]


def _port_list(ports: Sequence[int]) -> str:
    """``1-4,7`` style list, as perfquery takes it."""
    out: list[str] = []
    ps = sorted(set(ports))
    i = 0
    while i < len(ps):
        j = i
        while j + 1 < len(ps) and ps[j + 1] == ps[j] + 1:
            j += 1
        out.append(str(ps[i]) if i == j else f"{ps[i]}-{ps[j]}")
        i = j + 1
    return ",".join(out)


# -- turning runs into samples -------------------------------------------------------------------
def _run(run_tool: RunTool, argv: Sequence[str], raw: dict[tuple[str, ...], CommandResult]) -> CommandResult:
    try:
        result = run_tool(argv)
    except CommandFailed as exc:
        raw[tuple(argv)] = CommandResult(
            "local", tuple(argv), exc.returncode if exc.returncode is not None else -1, "", exc.stderr, 0.0
        )
        raise
    raw[tuple(argv)] = result
    return result


def _failure_reason(result: CommandResult | None, default: str) -> str:
    if result is None:
        return default
    # iberror lands on stdout under umad2sim and on stderr on real hosts: look at both
    lines = [ln.strip() for ln in (result.stderr + "\n" + result.stdout).splitlines()]
    failures = [
        ln
        for ln in lines
        if ("failed" in ln or "No SM" in ln or "timed out" in ln) and "sim_connect" not in ln
    ]
    # the tool's own verdict (iberror) says more than the transport warning before it
    return next((ln for ln in failures if "iberror" in ln), failures[0] if failures else default)


def samples_from_run(
    result: CommandResult, guid: Guid | None = None, problems: list[ParseError] | None = None
) -> list[PortSample] | IbqueryerrorsReport:
    """Parse one tool run by its argv: perfquery -> samples (of node ``guid``), ibqueryerrors -> report.

    Lenient: bad lines go to ``problems`` and the rest of the output still counts.
    """
    problems = [] if problems is None else problems
    source = " ".join(result.argv)
    tool = result.argv[0].rsplit("/", 1)[-1] if result.argv else ""
    if tool == "ibqueryerrors":
        return parse_ibqueryerrors(result.stdout + "\n" + result.stderr, source, problems=problems)
    if tool == "perfquery":
        return parse_perfquery(result.stdout, source, guid, problems=problems)
    raise ValueError(f"no parser for {tool!r}")


def _peers(fabric: Fabric) -> dict[Key, PortRef]:
    """The far end of every cabled port, by (guid, port) in (guid, port) order: what a collection
    must account for."""
    peers: dict[Key, PortRef] = {}
    for guid in fabric.nodes:  # sorted by GUID
        ends = fabric.neighbours(guid)
        if ends:
            for port, far, _ in sorted(ends, key=lambda e: e[0]) if len(ends) > 1 else ends:
                peers[(guid, port)] = far
    return peers


def _expected_ports(peers: Mapping[Key, PortRef]) -> dict[Guid, list[int]]:
    out: dict[Guid, list[int]] = {}
    for guid, port in peers:
        out.setdefault(guid, []).append(port)
    return out


def collect_fabric(
    run_tool: RunTool,
    fabric: Fabric,
    now: float,
    *,
    approach: str = "ibqueryerrors",
    lids: Mapping[Guid, int] | None = None,
) -> CollectionResult:
    """Read every cabled port of ``fabric``; ports that do not answer come back as unreachable.

    ``approach`` is ``"ibqueryerrors"`` (the default, see the module docstring) or ``"perfquery"``.
    ``lids`` adds LIDs the model lacks (it keeps none for CAs); perfquery needs one per node.
    """
    raw: dict[tuple[str, ...], CommandResult] = {}
    problems: list[ParseError] = []
    notes: list[str] = []
    peers = _peers(fabric)
    expected = _expected_ports(peers)
    got: dict[Key, Row] = {}
    fallback_samples: dict[Key, PortSample] = {}
    reasons: dict[Guid, str] = {}
    merged: MergedPorts | None = None
    with gc_paused():
        if approach == "ibqueryerrors":
            learned: dict[Guid, int] = {}
            merged, missing = _collect_ibqueryerrors(
                run_tool, fabric, peers, expected, now, reasons, raw, problems, notes, learned
            )
            got = merged.rows
            lids = {**learned, **(lids or {})}
            if len(missing) > FALLBACK_NODE_LIMIT:
                notes.append(
                    f"{len(missing)} nodes missed by ibqueryerrors; perfquery fallback limited to {FALLBACK_NODE_LIMIT}"
                )
            fallback = missing[:FALLBACK_NODE_LIMIT]
        elif approach == "perfquery":
            fallback = [fabric.nodes[g] for g in expected]
        else:
            raise ValueError(f"unknown approach {approach!r}")
        known = dict(lids or {})
        _collect_perfquery(run_tool, fallback, expected, fallback_samples, reasons, raw, problems, known)
        for key, sample in fallback_samples.items():
            got[key] = sample_row(sample, peers[key], now)
        unreachable = [
            Unreachable(
                guid,
                port,
                reasons.get(guid, "no counters returned"),
                fabric.nodes[guid].lid or known.get(guid),
            )
            for guid, port in peers
            if (guid, port) not in got
        ]
        # merge rows come in peers order, (guid, port) order; fallback rows were added after them
        rows = tuple(got.values()) if not fallback_samples else tuple(got[k] for k in peers if k in got)
    return CollectionResult(
        time=now,
        rows=rows,
        unreachable=tuple(unreachable),
        raw=MappingProxyType(raw),
        peers=MappingProxyType(peers),
        problems=tuple(problems),
        notes=tuple(notes),
        _samples=_Samples(tuple(peers), merged, fallback_samples),
    )


def _collect_ibqueryerrors(
    run_tool: RunTool,
    fabric: Fabric,
    peers: Mapping[Key, PortRef],
    expected: Mapping[Guid, list[int]],
    now: float,
    reasons: dict[Guid, str],
    raw: dict[tuple[str, ...], CommandResult],
    problems: list[ParseError],
    notes: list[str],
    learned: dict[Guid, int],
) -> tuple[MergedPorts, list[Node]]:
    counters_argv, errors_argv = ibqueryerrors_argv()
    data: iqe.Scan | None = None
    errors: iqe.Scan | None = None
    reason = "not reached by ibqueryerrors"
    try:
        data = _scan(_run(run_tool, counters_argv, raw), problems)
        if not data.checked_anything:
            reason = data.failures[0] if data.failures else "ibqueryerrors checked nothing (no SM?)"
            notes.append(f"ibqueryerrors --counters checked nothing: {reason}")
    except CommandFailed as exc:
        reason = exc.one_line()
        notes.append(reason)
    try:
        errors = _scan(_run(run_tool, errors_argv, raw), problems)
    except CommandFailed as exc:
        notes.append(exc.one_line())
    if data is not None and data.failures and data.checked_anything:
        reason = f"not in ibqueryerrors output; it reported: {data.failures[0]}"
    merged = merge_passes(fabric, peers, data, errors, now, notes)
    got = merged.rows
    if len(got) == len(peers):
        return merged, []
    missing = [fabric.nodes[g] for g, ports in expected.items() if not any((g, p) in got for p in ports)]
    for node in missing:
        reasons[node.guid] = reason
    if data is not None:
        for (guid, port), (lid, _, peer_lid, _) in data.links.items():
            learned.setdefault(guid, lid)
            far = peers.get((guid, port))
            if far is not None and peer_lid is not None:
                learned.setdefault(far.guid, peer_lid)
    return merged, missing


def _scan(result: CommandResult, problems: list[ParseError]) -> iqe.Scan:
    text = result.stdout if not result.stderr else result.stdout + "\n" + result.stderr
    return iqe.scan_ibqueryerrors(text, " ".join(result.argv), problems)


def _collect_perfquery(
    run_tool: RunTool,
    nodes: Iterable[Node],
    expected: Mapping[Guid, list[int]],
    got: dict[Key, PortSample],
    reasons: dict[Guid, str],
    raw: dict[tuple[str, ...], CommandResult],
    problems: list[ParseError],
    lids: Mapping[Guid, int],
) -> None:
    for node in nodes:
        ports = expected.get(node.guid, [])
        lid = node.lid if node.lid is not None else lids.get(node.guid)
        if not ports:
            continue
        if lid is None:
            reasons.setdefault(node.guid, "no LID known for perfquery")
            continue
        merged: dict[int, list[PortSample]] = {}
        failed: str | None = None
        for argv in perfquery_argv(lid, ports):
            try:
                result = _run(run_tool, argv, raw)
            except CommandFailed as exc:
                failed = exc.one_line()
                continue
            parsed = samples_from_run(result, node.guid, problems)
            assert isinstance(parsed, list)
            for s in parsed:
                merged.setdefault(s.port, []).append(s)
            if result.exit_code != 0:
                failed = _failure_reason(result, f"perfquery exit {result.exit_code}")
        if failed is not None:
            # keep why the fabric-wide pass missed the node (the first, concrete symptom, e.g. an
            # SMP timeout) and add what the direct PMA query said: both tools tried, both failed
            first = reasons.get(node.guid)
            reasons[node.guid] = f"{first}; perfquery fallback (LID {lid}): {failed}" if first else failed
        for port, parts in merged.items():
            if port in ports:
                got[(node.guid, port)] = _combine(parts, node)


def _combine(parts: list[PortSample], node: Node) -> PortSample:
    """One sample from the -x and the plain read of a port (64-bit data counters win)."""
    values: dict[str, int] = {}
    other: dict[str, int] = {}
    extended = any(p.extended for p in parts)
    for p in sorted(parts, key=lambda p: p.extended):
        for k, v in p.values.items():
            if k in {"xmit_data", "rcv_data", "xmit_pkts", "rcv_pkts"} and extended and not p.extended:
                continue
            values[k] = v
        other.update(p.other)
    first = parts[0]
    return PortSample(
        guid=node.guid,
        port=first.port,
        lid=first.lid,
        values=MappingProxyType({n: values[n] for n in fields.COUNTER_NAMES if n in values}),
        node_description=node.description,
        extended=extended,
        other=MappingProxyType(other),
    )


# -- the counter table ---------------------------------------------------------------------------
def to_frame(result: CollectionResult, snapshot_id: int) -> pd.DataFrame:
    """The counter table of :mod:`fabric.core.fields`: one row per port, unreachable ones included."""
    import pandas as pd

    rows: list[tuple[object, ...]] = [
        (snapshot_id, r[7], r[0], r[1], r[2], r[3], r[4], True, *r[8:]) for r in result.rows
    ]
    for u in result.unreachable:
        peer = result.peers.get((u.guid, u.port)) if u.guid is not None and u.port is not None else None
        r = unreachable_row(u, peer, result.time)
        rows.append((snapshot_id, r[7], r[0], r[1], r[2], r[3], r[4], False, *r[8:]))
    frame = pd.DataFrame.from_records(rows, columns=list(fields.FRAME_COLUMNS))
    frame = frame.astype(
        {
            "snapshot": "int64",
            "time": "float64",
            "guid": "object",
            "port": "int64",
            "lid": "Int64",
            "peer_guid": "object",
            "peer_port": "Int64",
            "reachable": "bool",
            **{name: "Int64" for name in fields.COUNTER_NAMES},
        }
    )
    return frame.sort_values(["guid", "port"], ignore_index=True)


__all__ = [
    "ERROR_COUNTERS",
    "REACHABLE",
    "CollectionResult",
    "collect_fabric",
    "ibqueryerrors_argv",
    "perfquery_argv",
    "samples_from_run",
    "to_frame",
]
