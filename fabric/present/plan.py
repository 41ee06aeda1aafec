"""Cable-plan checks for people: what differs from the plan, grouped by kind, with both ends."""

from __future__ import annotations

from topology.plancheck import PlanCheck, PlanFinding, Verdict

_TITLES = (
    ("miswired", "Miswired"),
    ("missing", "Missing in the fabric"),
    ("not_in_plan", "In the fabric, not in the plan"),
    ("below_plan", "Slower than planned"),
)


def render_check(check: PlanCheck, source: str, limit: int | None = 40) -> str:

    lines = [
        f"Fabric from {source} against {', '.join(check.sources)}",
        f"  {check.planned} planned cables: {check.matched} as planned, "
        + ", ".join(f"{check.count(Verdict(k))} {k.replace('_', ' ')}" for k, _ in _TITLES)
        + f", {len(check.unchecked)} unchecked",
    ]
    notes = []
    if check.not_covered:
        notes.append(f"{check.not_covered} fabric cables of a kind the plan does not list were not checked")
    if check.internal:
        notes.append(f"{check.internal} director backplane / aggregation-node links left out")
    if check.rate_unknown:
        notes.append(f"{check.rate_unknown} cables' speed unknown (the tool could not read it)")
    if check.absent_devices:
        shown = ", ".join(check.absent_devices[:8]) + (" …" if len(check.absent_devices) > 8 else "")
        notes.append(f"{len(check.absent_devices)} planned devices are not in the fabric: {shown}")
    if check.absent_ports:
        n = len(check.absent_ports)
        shown = ", ".join(f"{a.end} ({a.reason})" for a in check.absent_ports[:8])
        more = " …" if n > 8 else ""
        notes.append(
            f"{n} planned port{'s' if n > 1 else ''} not in the fabric, on devices that are: {shown}{more}"
        )
    lines += [f"  {n}" for n in notes]
    for key, title in _TITLES:
        items = [f for f in check.findings if f.verdict.value == key]
        lines += _section(title, items, limit)
    lines += _section("Could not check", list(check.unchecked), limit)
    if not check.findings and not check.unchecked:
        lines += ["", "The fabric matches the plan."]
    return "\n".join(lines)


def _section(title: str, items: list[PlanFinding], limit: int | None) -> list[str]:
    if not items:
        return []
    out = ["", f"{title} ({len(items)}):"]
    shown = items if limit is None else items[:limit]
    for f in shown:
        out.append(f"  {f.message}")
        out += [f"      {e}" for e in f.evidence]
    if len(shown) < len(items):
        out.append(f"  … {len(items) - len(shown)} more (--all or --json)")
    return out
