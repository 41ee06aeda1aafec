"""The overview: fabric summary, health counts, worst links, last runs, alerts."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from fabric.present.overview import overview_sections
from tui.screens.base import DataScreen

SECTIONS = ("fabric", "health", "worst", "runs", "alerts")


class OverviewScreen(DataScreen):
    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        with VerticalScroll():
            for name in SECTIONS:
                yield Static("", id=f"ov-{name}", classes="panel")
        yield from self.compose_footer()

    def draw(self) -> None:
        app = self.ibfab
        if app.state is None:
            self.query_one("#ov-fabric", Static).update("reading the store…")
            return
        ov = app.service.overview(app.view, app.health, app.state, app.rows)
        for name, (title, body) in zip(SECTIONS, overview_sections(ov), strict=True):
            if name == "fabric" and app.view is None and app.loading["topology"]:
                body = _cheap_fabric(app)
            if name in ("health", "worst") and app.loading["health"] and app.view is not None:
                body = "computing health…"
            panel = self.query_one(f"#ov-{name}", Static)
            panel.border_title = title
            panel.update(body)


def _cheap_fabric(app: object) -> str:
    """Before the topology is classified: the counts the store keeps with the snapshot."""
    from tui.app import IbfabApp

    assert isinstance(app, IbfabApp) and app.state is not None
    t = app.state.topology
    if t is None:
        return "no topology stored yet (run: ibfab discover --save)"
    return f"{t.switches} switches, {t.hcas} HCAs, {t.links} links (source {t.source}); classifying…"
