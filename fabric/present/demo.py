"""The demo for people: each step's title, what it did, its findings as the CLI prints them, and
whether that matches what was planted."""

from __future__ import annotations

from fabric.advise.recommend import Recommendations
from fabric.app.discovery.discover import Discovery
from fabric.app.lab.demo import DemoStep, HealthDemo, PlanDemo, SweepDemo
from fabric.app.status import StatusReport
from fabric.app.triage.bisect import TriageReport
from fabric.present.advice import render_actions
from fabric.present.counters import snapshot_line
from fabric.present.discovery import render_discovery
from fabric.present.health import render_health
from fabric.present.plan import render_check
from fabric.present.sweep import render_suspects


def render_step(step: DemoStep) -> str:
    """The step's block of text (without its title)."""
    parts = list(step.facts)
    r = step.result
    if isinstance(r, Discovery):
        parts.append(render_discovery(r))
    elif isinstance(r, HealthDemo):
        parts += [f"{snapshot_line(outcome)}   ({what})" for outcome, what in r.collections]
        parts += ["", render_health(r.health, limit=8)]
    elif isinstance(r, SweepDemo):
        parts.append(render_suspects(r.outcome.suspects, r.names, limit=6))
    elif isinstance(r, PlanDemo):
        parts += ["", render_check(r.check, r.source, limit=6)]
    elif isinstance(r, TriageReport):
        from fabric.present.triage_rounds import render_triage

        parts.append(render_triage(r))
    elif isinstance(r, StatusReport):
        from fabric.present.status import render_status

        parts.append(render_status(r))
    elif isinstance(r, Recommendations):
        parts.append(render_actions(r.actions))
        parts += [f"- {n}" for n in r.notes]
    if step.verdict:
        parts += ["", step.verdict]
    return "\n".join(parts)
