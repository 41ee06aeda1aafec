"""The demo's last step: ``ibfab status`` over the demo's store (its stored topology, the health
collections, the sweep) and the cable plan exported from the clean lab: every fault planted is
one entry, with every source that saw it, and nothing else is listed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fabric.app.demo import DemoStep
from topology.model import LinkKey


def status_step(db: str, design: object, planted_links: Sequence[LinkKey], plan: Path) -> DemoStep:
    from fabric.app.discover import discover
    from fabric.app.source import read_source
    from fabric.app.status import fabric_status
    from fabric.app.status.evidence import Elements, wiring_elements
    from topology.design import Design

    assert isinstance(design, Design)
    src, text = read_source(None, None, None, snapshot="latest", db=db)
    d = discover(src, text)
    plans = [str(plan)] if plan.is_file() else []
    report = fabric_status(d, db=db, plans=plans)
    el = Elements(d.fabric, d.classification)
    expected = {
        element.key
        for an, element in zip(d.anomalies, wiring_elements(el, d.anomalies), strict=True)
        if any(an.kind == p.kind and set(an.nodes) & set(p.guids) for p in design.planted)
    } | {el.cable_of(key).key for key in planted_links}
    listed = {e.element.key for e in report.entries}
    unplanned = [e.element.name for e in report.entries if e.element.key not in expected]
    missed = sorted(expected - listed)
    without = [e.element.name for e in report.entries if e.action is None]
    ok = not unplanned and not missed and not without
    if ok:
        verdict = (
            f"every planted fault is one entry ({len(listed)}), each with its action; nothing else listed"
        )
    else:
        verdict = "MISSED: " + "; ".join(
            part
            for part in (
                f"listed but not planted: {', '.join(unplanned)}" if unplanned else "",
                f"planted but not listed: {', '.join(missed)}" if missed else "",
                f"no action for: {', '.join(without)}" if without else "",
            )
            if part
        )
    return DemoStep(
        "8. What is wrong, one list (ibfab status --plan demo-plan.csv: health, sweep, wiring, plan)",
        (),
        report,
        verdict,
        ok=ok,
    )
