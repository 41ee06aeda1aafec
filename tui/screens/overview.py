"""The overview: fabric summary (side groups too), links by status, worst links (enter opens one),
last runs, alerts counted by severity with the worst of each."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from fabric.present.overview import overview_sections
from fabric.present.routes_tui import route_alerts
from fabric.present.table import ellipsis
from tui.messages import OpenDetail
from tui.screens.base import DataScreen, plain

PANELS = ("fabric", "health", "runs", "alerts")


class OverviewScreen(DataScreen):
    HELP = "enter on a worst link opens its detail; e lists every anomaly and finding."
    DEFAULT_CSS = "#ov-worst { height: auto; max-height: 12; } #ov-worst-title { padding: 0 1; }"

    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        with VerticalScroll(id="ov-body"):
            yield Static("", id="ov-fabric", classes="panel")
            yield Static("", id="ov-health", classes="panel")
            yield Static("WORST LINKS", id="ov-worst-title")
            yield DataTable(id="ov-worst", cursor_type="row", zebra_stripes=True)
            yield Static("", id="ov-runs", classes="panel")
            yield Static("", id="ov-alerts", classes="panel")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.set_focus(self.query_one("#ov-worst", DataTable))

    def draw(self) -> None:
        app = self.data
        table = self.query_one("#ov-worst", DataTable)
        table.clear(columns=True)
        table.add_columns("STATUS", "SCORE", "CABLE", "WHY")
        if app.state is None:
            self.query_one("#ov-fabric", Static).update("reading the store…")
            return
        routes = route_alerts(app.service.routes_known(app.view)) if app.view is not None else ()
        ov = app.service.overview(app.view, app.health, app.state, app.rows, routes)
        sections = dict(
            zip(("fabric", "health", "worst", "runs", "alerts"), overview_sections(ov), strict=True)
        )
        for name in PANELS:
            title, body = sections[name]
            if name == "fabric" and app.view is None and app.loading["topology"]:
                body = self._cheap_fabric()
            if name == "health" and app.loading["health"] and app.view is not None:
                body = "computing health…"
            panel = self.query_one(f"#ov-{name}", Static)
            panel.border_title = plain(title)
            panel.update(plain(body))
        if app.loading["health"] and app.view is not None:
            self.query_one("#ov-worst-title", Static).update("WORST LINKS: computing health…")
            return
        self.query_one("#ov-worst-title", Static).update(
            f"WORST LINKS ({len(ov.worst)})" if ov.worst else "WORST LINKS: none at watch or worse"
        )
        for r in ov.worst:
            table.add_row(
                r.status.upper(),
                "-" if r.score is None else r.score,
                plain(r.cable),
                plain(ellipsis("; ".join(r.reasons), self.room(58))),
                key=str(r.index),
            )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key is not None and self.data.rows:
            self.post_message(OpenDetail(link=self.data.rows[int(key)].key))

    def _cheap_fabric(self) -> str:
        """Before the topology is classified: the counts the store keeps with the snapshot."""
        state = self.data.state
        t = state.topology if state is not None else None
        if t is None:
            return "no topology stored yet (run: ibfab discover --save)"
        return f"{t.switches} switches, {t.hcas} HCAs, {t.links} links (source {t.source}); classifying…"
