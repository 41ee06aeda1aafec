"""The store for people: what `ibfab store check` found and what `store repair` set aside."""

from __future__ import annotations

import time

from fabric.app.storecare.check import StoreCheck, StoreRepair
from fabric.core.units import duration_spec
from fabric.present.table import table
from fabric.store import CompactResult, Damage, Retention
from fabric.store.records import Span, StoreInfo


def _when(epoch: float | None) -> str:
    if not isinstance(epoch, int | float):  # None, or what a damaged row holds instead of a time
        return "-" if epoch is None else repr(epoch)[:20]
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))
    except (OverflowError, OSError, ValueError):
        return repr(epoch)[:20]


def _damage_table(damage: tuple[Damage, ...]) -> str:
    return table(
        ("what", "id", "where", "taken", "why"),
        [
            (d.kind, "-" if d.ref is None else d.ref, d.table or "-", _when(d.taken_at), d.reason)
            for d in damage
        ],
    )


# What `ibfab store repair` does about each kind of damage.
_REPAIR_DOES = {
    "header": "rewrites the header's damaged fields (every ibfab store holds the same there)",
    "schema": "rewrites the schema's damaged rows from the schema of the store's version",
    "file": "builds a damaged index anew; for damaged table pages it copies every row that reads"
    " into a new file (the damaged file is kept beside it)",
    "value": "puts back a blob read as text; other bad values are kept in the quarantine",
}


def check_report(check: StoreCheck) -> str:
    lines = []
    if check.ok:
        lines.append(f"{check.path}: every page, snapshot, topology and capture reads back as stored")
    else:
        lines.append(f"{check.path}: {len(check.damage)} damaged")
        lines.append(_damage_table(check.damage))
        kinds = {d.kind for d in check.damage}
        for kind, does in _REPAIR_DOES.items():
            if kind in kinds:
                lines.append(f"`ibfab store repair` {does}")
        if kinds - set(_REPAIR_DOES) - {"wal"}:
            lines.append(
                "`ibfab store repair` sets the damaged rows aside (kept in the quarantine, never read again)"
            )
        if "wal" in kinds:
            lines.append(
                "commits lost from the WAL cannot be brought back: restore them from a copy if needed"
            )
    if check.closed_runs:
        lines.append(f"{check.closed_runs} run(s) of processes that were killed closed as killed")
    if check.quarantine:
        lines.append(f"{len(check.quarantine)} set aside earlier (quarantine)")
    return "\n".join(lines)


def repair_report(repair: StoreRepair) -> str:
    if not repair.damage:
        return f"{repair.path}: nothing damaged, nothing to do"
    lines = [_damage_table(repair.damage)]
    if repair.dry_run:
        rows = [d for d in repair.damage if d.ref is not None]
        lines.append(f"dry run: would mend the file ({len(repair.file_damage)}) and set aside {len(rows)}")
        return "\n".join(lines)
    lines += [f"mended: {what}" for what in repair.mended]
    lines += [f"lost: {what}" for what in repair.lost]
    lines.append(f"{repair.path}: set aside {repair.moved} (kept in the quarantine table)")
    if repair.kept is not None:
        lines.append(f"the damaged file is kept as {repair.kept}")
    if repair.left:
        lines.append(f"still damaged after the repair ({len(repair.left)}):")
        lines.append(_damage_table(repair.left))
        lines.append("restore the store from a copy, or export what reads")
    return "\n".join(lines)


def _size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def policy_line(policy: Retention) -> str:
    return (
        f"raw snapshots {duration_spec(policy.raw_s)}, hourly points {duration_spec(policy.hourly_s)}, "
        f"findings {duration_spec(policy.findings_s)}, raw tool output {duration_spec(policy.captures_s)}"
    )


def _span(name: str, span: Span) -> tuple[str, str, str, str, str]:
    return (name, str(span.count), _when(span.oldest), _when(span.newest), _size(span.bytes))


def info_report(info: StoreInfo) -> str:
    lines = [
        f"{info.path}: {_size(info.file_bytes)} on disk ({_size(info.free_bytes)} free inside, reused first)",
        table(
            ("history", "snapshots", "oldest", "newest", "size"),
            [_span("raw snapshots", info.raw), _span("hourly points", info.hourly)],
        ),
        f"raw tool output: {info.capture_count} captures, {_size(info.capture_bytes)}; "
        f"topologies: {info.topologies}, {_size(info.topology_bytes)}; port sets {_size(info.port_set_bytes)}",
        f"findings: {info.findings} rows"
        + (f" ({info.findings_days[0]} to {info.findings_days[1]})" if info.findings else "")
        + f"; link events: {info.link_events}"
        + (f"; quarantined: {info.quarantined}" if info.quarantined else ""),
        f"retention: {policy_line(info.policy)}",
    ]
    if info.snapshots_per_day:
        lines.append(
            f"rate: {info.snapshots_per_day:.0f} snapshots a day, {_size(info.bytes_per_snapshot)} each "
            f"(block and raw output); projected: {_size(info.projected_horizon_bytes)} after "
            f"{duration_spec(info.horizon_s)}, {_size(info.projected_steady_bytes)} once every span is full"
        )
    else:
        lines.append("rate: not enough raw snapshots yet to project the size")
    return "\n".join(lines)


def compact_report(result: CompactResult, policy: Retention) -> str:
    parts = [
        f"{result.hours} hours into {result.points} hourly points",
        f"{result.snapshots_deleted} snapshots removed",
        f"{result.captures_deleted} raw captures",
        f"{result.link_events_deleted} link events",
        f"{result.findings_deleted} findings",
        f"{result.runs_deleted} runs",
    ]
    tail = "" if result.done else "; stopped at its time budget (run it again to go on)"
    return f"compacted ({policy_line(policy)}): " + ", ".join(parts) + tail
