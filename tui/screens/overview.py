"""The overview: what is wrong (``ibfab status``: one ranked list per cable and host, every source's
evidence, the action; enter opens the element), fabric summary (side groups too), links by status,
worst links (enter opens one), last runs, alerts counted by severity with the worst of each."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from fabric.app.status import StatusReport
from fabric.app.status.records import Element, detail_node
from fabric.present.overview import overview_sections
from fabric.present.routes_tui import route_alerts
from fabric.present.status import entry_text, status_row, status_title
from fabric.present.table import ellipsis
from tui.messages import OpenDetail
from tui.screens.base import DataScreen, plain

PANELS = ("fabric", "health", "runs", "alerts")


class OverviewScreen(DataScreen):
    NAME = "overview"
    HELP = (
        "WHAT IS WRONG is ibfab status: one entry per cable (both ends) or host, worst first, with\n"
        "the evidence of every source (counter history, the newest reading, the newest sweep, wiring),\n"
        "how sure it is and the one action ibfab recommend gives; the highlighted entry is shown whole\n"
        "below it. enter on an entry or a worst link opens its detail; e lists every anomaly and finding;\n"
        "r the recommendations with their commands."
    )
    DEFAULT_CSS = (
        "#ov-worst { height: auto; max-height: 12; } #ov-worst-title { padding: 0 1; }"
        " #ov-status { height: auto; max-height: 10; } #ov-status-title { padding: 0 1; }"
        " #ov-status-why { height: auto; max-height: 14; }"
    )

    def __init__(self) -> None:
        super().__init__()
        self.report: StatusReport | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        with VerticalScroll(id="ov-body"):
            yield Static("WHAT IS WRONG", id="ov-status-title")
            yield DataTable(id="ov-status", cursor_type="row", zebra_stripes=True)
            yield Static("", id="ov-status-why", classes="panel")
            yield Static("", id="ov-fabric", classes="panel")
            yield Static("", id="ov-health", classes="panel")
            yield Static("WORST LINKS", id="ov-worst-title")
            yield DataTable(id="ov-worst", cursor_type="row", zebra_stripes=True)
            yield Static("", id="ov-runs", classes="panel")
            yield Static("", id="ov-alerts", classes="panel")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.set_focus(self.query_one("#ov-status", DataTable))

    def draw(self) -> None:
        app = self.data
        table = self.query_one("#ov-worst", DataTable)
        table.clear()
        if not table.columns:
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
            self.query_one("#ov-status-title", Static).update("WHAT IS WRONG: computing health…")
            return
        self.draw_status()
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

    def draw_status(self) -> None:
        """ibfab status on the view and health on screen, computed as they were loaded."""
        app = self.data
        table = self.query_one("#ov-status", DataTable)
        table.clear()
        if not table.columns:
            table.add_columns("SEVERITY", "WHAT", "ELEMENT", "EVIDENCE FROM", "ACTION")
        title = self.query_one("#ov-status-title", Static)
        got = app.status_report
        self.report = got if isinstance(got, StatusReport) else None
        if app.view is None:
            title.update("WHAT IS WRONG: no topology stored yet (run: ibfab discover --save)")
            return
        if isinstance(got, str):
            title.update(plain(f"WHAT IS WRONG: {got}"))
            return
        if got is None:
            title.update("WHAT IS WRONG: reading every source…")
            return
        title.update(status_title(got))
        for i, entry in enumerate(got.entries):
            sev, kind, name, sources, action = status_row(entry)
            table.add_row(sev, kind, plain(name), sources, action, key=str(i))
        why = self.query_one("#ov-status-why", Static)
        why.update("" if got.entries else plain(self._sources()))

    def _sources(self) -> str:
        from fabric.present.status import source_line

        report = self.report
        return "\n".join(source_line(s).strip() for s in report.sources) if report is not None else ""

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id != "ov-status" or self.report is None or event.row_key.value is None:
            return
        entry = self.report.entries[int(event.row_key.value)]
        self.query_one("#ov-status-why", Static).update(plain(entry_text(entry, dict(self.report.names))))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key is None:
            return
        if event.data_table.id == "ov-status":
            if self.report is not None:
                self._open(self.report.entries[int(key)].element)
        elif self.data.rows:
            self.post_message(OpenDetail(link=self.data.rows[int(key)].key))

    def _open(self, element: Element) -> None:
        """A cable's detail, else the node the entry is about (a host's first HCA, a switch)."""
        view = self.data.view
        if view is None:
            return
        if element.kind == "cable" and len(element.ends) == 2:
            a, b = element.ends
            self.post_message(OpenDetail(link=((a.guid, a.port), (b.guid, b.port))))
            return
        guid = detail_node(view.discovery.classification, element)
        if guid is not None:
            self.post_message(OpenDetail(guid=guid))

    def _cheap_fabric(self) -> str:
        """Before the topology is classified: the counts the store keeps with the snapshot."""
        state = self.data.state
        t = state.topology if state is not None else None
        if t is None:
            return "no topology stored yet (run: ibfab discover --save)"
        return f"{t.switches} switches, {t.hcas} HCAs, {t.links} links (source {t.source}); classifying…"
