"""``ibfab status`` for people: what is wrong, worst first, each element with every source's
evidence (each line says its source), how sure that is and why, and the one action to take.

A clean fabric is one line, then the sources read, so an empty list never hides a source that
had nothing to say because it was never there (no sweep stored, no plan given).
"""

from __future__ import annotations

from fabric.app.status import Entry, Evidence, SourceState, StatusReport
from fabric.app.status.records import Basis
from fabric.present.routes import sentence

_SEVERITY = {"critical": "CRITICAL", "error": "ERROR", "warning": "WARNING", "info": "info"}
_NO_ACTION = {
    "watch": "none yet: health watches it (recommend acts from warn up); ibfab health follows it",
    "tie": "none on a guess: the sweep cannot tell these cables apart; re-test with probes that cross "
    "one of them (ibfab sweep run)",
    "none": "ibfab has no repair for this: the evidence says what to check",
}


def basis_text(basis: Basis, count: int = 0, sources: int = 0) -> str:
    """Why a confidence: what it rests on, in words."""
    if basis is Basis.OBSERVED:
        return "the fabric shows it as it is now"
    if basis is Basis.SIGNIFICANT:
        return "a statistical test: over the error budget, or the BER's 95% lower bound above target"
    if basis is Basis.COUNTED:
        return f"counted {count} times on the cable"
    if basis is Basis.ONE_DOWN:
        return "one link-down: often maintenance (a reboot, a reseat)"
    if basis is Basis.NOT_SIGNIFICANT:
        return "some errors, not yet enough to be sure"
    if basis is Basis.SOLE_CAUSE:
        pairs = f"all {count} probe pairs" if count != 1 else "the one probe pair"
        return f"{pairs} crossing it were slow, and no other cable explains them"
    if basis is Basis.TIE:
        return f"a tie: the same slow pairs cross {count} cables"
    if basis is Basis.SATURATED:
        return "a counter at its maximum: errors happened, how many and when is unknown"
    if basis is Basis.TOTAL:
        return "a total since the counters were last cleared, over a time not known"
    return f"{sources} independent sources point at it"


def evidence_line(e: Evidence, names: dict[str, str]) -> str:
    text = sentence(e.route, names) if e.route is not None else e.text
    return f"[{e.source.value}] {text}"


def render_entry(i: int, entry: Entry, names: dict[str, str], detail: int = 3) -> list[str]:
    el = entry.element
    lines = [f"{i}. {_SEVERITY.get(entry.severity, entry.severity)}  {el.name}  ({el.kind})"]
    why = basis_text(
        entry.basis,
        max((e.count for e in entry.evidence if e.basis is entry.basis), default=0),
        len(entry.sources),
    )
    lines.append(f"   confidence: {entry.confidence.value} ({why})")
    for e in entry.evidence:
        lines.append(f"   - {evidence_line(e, names)}")
        shown = e.detail[:detail]
        lines += [f"       {d}" for d in shown]
        if len(e.detail) > len(shown):
            lines.append(f"       … {len(e.detail) - len(shown)} more (--json)")
    a = entry.action
    if a is not None:
        lines.append(f"   action: {a.kind.value}: {a.target}")
        lines.append(f"     why: {a.reason}")
        # UFM's REST calls and every undo are in ibfab recommend (and in --json here)
        lines += [
            f"     [{c.manager} {c.purpose}] {c.text.splitlines()[0]}"
            for c in a.commands
            if c.purpose == "apply" and c.manager != "ufm"
        ]
        if entry.also:
            lines.append("     then: " + "; ".join(f"{x.kind.value}: {x.target}" for x in entry.also))
    else:
        lines.append(f"   action: {_NO_ACTION.get(entry.no_action, entry.no_action)}")
    lines += [f"   note: {n}" for n in entry.notes]
    return lines


def source_line(s: SourceState) -> str:
    if s.read:
        return f"  {s.source.value}: {s.read}; {s.items} listed"
    return f"  {s.source.value}: nothing read: {s.missing}"


def render_status(report: StatusReport, limit: int | None = None) -> str:
    names = dict(report.names)
    entries = report.entries if limit is None else report.entries[:limit]
    if not report.entries:
        head = [f"Nothing is wrong in {report.fabric}: no source reports anything."]
    else:
        worst = {s: sum(1 for e in report.entries if e.severity == s) for s in _SEVERITY}
        counts = ", ".join(f"{n} {s}" for s, n in worst.items() if n)
        head = [f"{len(report.entries)} things wrong in {report.fabric} ({counts}), worst first:", ""]
    lines = list(head)
    for i, entry in enumerate(entries, 1):
        lines += render_entry(i, entry, names)
        lines.append("")
    if len(entries) < len(report.entries):
        lines += [f"… {len(report.entries) - len(entries)} more (--all or --json)", ""]
    lines.append("Sources:")
    lines += [source_line(s) for s in report.sources]
    return "\n".join(lines)


def status_row(entry: Entry) -> tuple[str, str, str, str, str]:
    """One entry as a table row: severity, what (kind), its name, its sources, its action's kind
    (its target is the element; the highlighted entry shows it whole)."""
    a = entry.action
    action = a.kind.value if a is not None else f"none ({entry.no_action or 'none'})"
    return (
        _SEVERITY.get(entry.severity, entry.severity).upper(),
        entry.element.kind,
        entry.element.name,
        "+".join(s.value for s in entry.sources),
        action,
    )


def status_title(report: StatusReport) -> str:
    if not report.entries:
        return "WHAT IS WRONG: nothing, by every source read"
    return f"WHAT IS WRONG ({len(report.entries)}, worst first; enter opens it)"


def entry_text(entry: Entry, names: dict[str, str]) -> str:
    """The highlighted entry whole: evidence, confidence, action (what ibfab status prints)."""
    return "\n".join(render_entry(1, entry, names)[1:])
