"""Link health for people: the worst links first, with BER bounds, flaps and the first reason."""

from __future__ import annotations

from fabric.app.health.assess import AssessedHealth, OneReading
from fabric.core.units import human_duration, utc_time
from fabric.health import BerEstimate
from fabric.health.reading import ReadingFinding
from fabric.present.overview import when
from fabric.present.table import table

DEFAULT_LIMIT = 40


def flaps_text(per_hour: float | None) -> str:
    """A link's flaps per hour as a cell: ``-`` when too short a span of samples gave no rate
    (fabric.health.rates; the reason gives the count and the span)."""
    if per_hour is None:
        return "-"
    return f"{per_hour:.2f}" if per_hour else "0"


def _ber(b: BerEstimate) -> str:
    if b.value is None or b.lower is None or b.upper is None:
        return "-"
    at_least = ">=" if b.at_least else ""
    return f"{at_least}{b.value:.2g} [{b.lower:.2g}..{b.upper:.2g}]"


def render_health(view: AssessedHealth, limit: int | None = DEFAULT_LIMIT, show_all: bool = False) -> str:
    """The findings (worst first) and a summary; ok links, with those not yet certified and why,
    only with ``show_all`` (not yet certified is a state, not a finding: it is counted)."""
    report = view.report
    s = report.summary
    links = list(report.links) if show_all else [lk for lk in report.links if lk.status.value != "ok"]
    shown = links if limit is None else links[:limit]
    rows = [
        (
            lk.score,
            lk.status.value,
            view.link_label(lk),
            _ber(lk.ber),
            flaps_text(lk.flaps_per_hour),
            lk.reasons[0] if lk.reasons else (lk.pending or ""),
        )
        for lk in shown
    ]
    by_status = ", ".join(f"{n} {k}" for k, n in s.links_by_status.items())
    lines = []
    if view.one_reading is not None:  # no rate, so "ok" would be a guess: say what is missing first
        lines += [*one_reading_lines(view.one_reading), ""]
    if rows:
        lines.append(
            table(("score", "status", "link", "BER [95% bounds]", "flaps/h", "first reason"), rows, 110)
        )
        if len(links) > len(shown):
            lines.append(f"  … {len(links) - len(shown)} more (--all or --json)")
    elif view.one_reading is None:
        lines.append("No findings: every link is ok.")
    offenders = sum(1 for lk in report.links if lk.repeat_offender)
    if view.readings:
        lines += [*([""] if rows or view.one_reading is None else []), *reading_lines(view)]
    if view.one_reading is not None:
        found = len(links) + len(view.readings)
        lines += [
            *([""] if rows or view.readings else []),
            f"{s.links} links, 1 reading (topology {view.topology_id}): none judged on rates yet; "
            f"{found} finding{'' if found == 1 else 's'} from the reading alone",
        ]
    else:
        lines.append("")
        lines.append(f"{s.links} links over {span_text(view)}, topology {view.topology_id}): {by_status}")
    extra = []
    if offenders:
        extra.append(f"{offenders} repeat offenders")
    if s.uncertified:
        listed = "" if show_all else " (--all lists them)"
        extra.append(
            f"{s.uncertified} links not yet certified: too few bits carried to show BER < target{listed}"
        )
    if s.links_without_samples:
        extra.append(f"{s.links_without_samples} links without samples")
    if s.down_links_not_in_fabric:
        extra.append(f"{len(s.down_links_not_in_fabric)} links down (not in the latest topology)")
    if view.recorded:
        extra.append(f"{view.recorded} findings recorded for today")
    if extra:
        lines.append("; ".join(extra))
    lines += cable_note_lines(view)
    return "\n".join(lines)


def span_text(view: AssessedHealth) -> str:
    """The time the readings cover, never the window asked for: ``19 min of readings (20 snapshots
    from 2025-01-15 10:01:00 UTC to 10:20:00 UTC, window 24.0 h``; the caller closes it."""
    s = view.report.summary
    window = f"window {human_duration(s.seconds)}"
    if view.covered is None:
        return f"no readings ({window}"
    first, last = view.covered
    if last - first <= 0:
        return f"one moment ({s.snapshots} snapshots at {utc_time(last)}, {window}"
    return (
        f"{human_duration(last - first)} of readings ({s.snapshots} snapshots from {utc_time(first)} "
        f"to {utc_time(last)}, {window}"
    )


def reading_lines(view: AssessedHealth) -> list[str]:
    """The cables whose counters, read once or saturated, are findings on their own, and what to do."""
    rows = [
        ("saturated" if f.saturated else "large", view.link_label(f), counts_text(view, f))
        for f in view.readings
    ]
    one = view.one_reading is not None
    what = "the reading alone" if one else "the newest reading"
    return [
        f"Counters that say something from {what} ({len(rows)} cable{'' if len(rows) == 1 else 's'}):",
        table(("counters", "link", "read"), rows, 150),
        "  A saturated counter has stopped: the true count is unknown and new errors cannot show. "
        + (
            "A large first reading is a total since the counters were last cleared, time unknown. "
            if one
            else ""
        )
        + "Clear both ends (perfquery -R LID PORT, or ibclearcounters) and read again: the rate then judges the cable.",
    ]


def counts_text(view: AssessedHealth, f: ReadingFinding) -> str:
    """``dgx-0001 mlx5_0:1: symbol_errors 65,535 (max), rcv_errors 6,258``: per end, as read."""
    ends: dict[tuple[str, int], list[str]] = {}
    for c in f.counts:
        text = f"{c.counter} {c.value:,}{' (max)' if c.saturated else ''}"
        ends.setdefault((c.port.guid, c.port.port), []).append(text)
    return "; ".join(f"{view.end_label(g, p)}: {', '.join(t)}" for (g, p), t in ends.items())


def one_reading_lines(one: OneReading) -> list[str]:
    """The window's one counter reading (when, from where) and how to get the second one."""
    snap = one.snapshot
    if one.elsewhere:
        more = f"widen the window: --since all ({one.elsewhere} more readings stored)"
    elif one.ibdiagnet:
        more = "run ibdiagnet again, then `ibfab counters collect --ibdiagnet DIR`"
    else:
        more = "run `ibfab counters collect` again (or `ibfab daemon` on a schedule)"
    return [
        f"One counter reading only: snapshot {snap.id} at {when(snap.taken_at)} from {snap.source}.",
        "Error and traffic rates need two readings, so no link is judged on them yet "
        "(a counter read once is a total since its last reset, not a rate).",
        f"For a second reading: {more}.",
    ]


def cable_note_lines(view: AssessedHealth, show: int = 4) -> list[str]:
    """One note per cable trait the failing links share beyond chance, naming the links."""
    lines = []
    for note in view.cable_notes:
        share = note.population_with / note.population_known if note.population_known else 0.0
        ends = [" <-> ".join(view.end_label(g, p) for g, p in key) for key in note.links]
        named = ", ".join(ends[:show]) + (f" and {len(ends) - show} more" if len(ends) > show else "")
        chance = f"{note.chance:.2%}" if note.chance >= 0.0001 else "under 0.01%"
        lines.append(
            f"note: {len(note.links)} of {note.failing_known} failing links have {note.trait} "
            f"{note.value}, against {note.population_with} of the {note.population_known} cables the "
            f"inventory covers ({share:.0%}; as many by chance: {chance}): {named}"
        )
    if lines:
        lines.append(f"  (cable inventory from the ibdiagnet run {view.inventory})")
    return lines
