"""The link findings of the store's newest health assessment, for what rests on them: advice
(:mod:`fabric.app.advice.recommend`) and the routes over flagged cables
(:mod:`fabric.app.routes.check`)."""

from __future__ import annotations

from fabric.advise.candidates import LinkFinding, findings_from_report
from fabric.app.health.assess import assess_store
from fabric.app.session import Session
from topology.errors import StoreError


def stored_findings(session: Session) -> list[LinkFinding] | None:
    """Findings from the session's store (the same assessment as 'ibfab health', with the same
    thresholds), or None when the store has no topology or counters yet."""
    try:
        stored = session.store.read()
        if stored is None:
            return None
        with stored as store:
            view = assess_store(store, thresholds=session.thresholds, record=False)
    except StoreError:
        return None
    return findings_from_report(view.report)


__all__ = ["stored_findings"]
