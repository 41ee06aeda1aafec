"""The routes: the verdict on the forwarding tables stored with the topology on screen (which
snapshot's, the engine they look like and the SM's word where known), every finding worst first
with the highlighted one's evidence below (a credit loop link by link), then the balance per tier
and direction and the hottest cables. Without tables it says so, and how to store them.

The verdict is judged for the app in a child process once per what it rests on
(:meth:`fabric.app.readmodel.service.FabricService.routes`); this screen only reads the last one."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from fabric.app.readmodel.routes import RoutesVerdict
from fabric.present.routes_tui import balance_text, finding_detail, finding_row, routes_head
from fabric.present.table import ellipsis
from topology.route_findings import RouteFinding
from tui.messages import OpenDetail
from tui.screens.base import DataScreen, plain


class RoutesScreen(DataScreen):
    HELP = (
        "The forwarding tables stored with the topology on screen ('ibfab routes --save'), judged as\n"
        "'ibfab routes check' judges them, with the health on screen for the flagged cables. Findings\n"
        "come worst first; the highlighted one's evidence is shown below the table; enter opens the\n"
        "switch it names. On the map (m), h colours each cable by its share of the routes."
    )
    DEFAULT_CSS = (
        "#routes-findings { height: auto; max-height: 12; } #routes-findings-title { padding: 0 1; }"
    )

    def __init__(self, focus: RouteFinding | None = None) -> None:
        super().__init__()
        self.focus_finding = focus  # opened from a route alert: the cursor starts on it
        self.shown: dict[str, RouteFinding] = {}
        self.verdict: RoutesVerdict | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        with VerticalScroll(id="routes-body"):
            yield Static("", id="routes-head", classes="panel")
            yield Static("", id="routes-findings-title")
            yield DataTable(id="routes-findings", cursor_type="row", zebra_stripes=True)
            yield Static("", id="routes-evidence", classes="panel")
            yield Static("", id="routes-balance", classes="panel")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.set_focus(self.query_one("#routes-findings", DataTable), scroll_visible=False)
        if self.focus_finding is not None:  # opened for one finding: its row and evidence in view
            self.call_after_refresh(self._findings_to_top)

    def _findings_to_top(self) -> None:
        self.query_one("#routes-findings-title").scroll_visible(top=True, animate=False, immediate=True)

    def draw(self) -> None:
        app = self.data
        head = self.query_one("#routes-head", Static)
        head.border_title = "ROUTES"
        table: DataTable[Any] = self.query_one("#routes-findings", DataTable)
        table.clear(columns=True)
        table.add_columns("SEVERITY", "KIND", "FINDING")
        self.shown = {}
        verdict = app.service.routes_known(app.view) if app.view is not None else None
        self.verdict = verdict
        judged = verdict is not None and verdict.judged is not None
        for wid in ("#routes-findings-title", "#routes-findings", "#routes-evidence", "#routes-balance"):
            self.query_one(wid).display = judged
        if app.view is None:
            head.update(
                "loading topology…"
                if app.loading["topology"]
                else "no topology stored (ibfab discover --save)"
            )
            return
        if verdict is None:
            waiting = "waiting for health, then " if app.loading["health"] else ""
            head.update(
                plain(
                    f"{waiting}judging the forwarding tables stored with topology snapshot {app.view.topology.id}…"
                )
            )
            return
        head.update(plain(routes_head(verdict)))
        if verdict.judged is None:
            return
        self._draw_findings(verdict, table)
        balance = self.query_one("#routes-balance", Static)
        balance.border_title = "BALANCE"
        balance.update(plain(balance_text(verdict)))

    def _draw_findings(self, verdict: RoutesVerdict, table: DataTable[Any]) -> None:
        findings = verdict.findings
        title = self.query_one("#routes-findings-title", Static)
        for shown in (title, table, self.query_one("#routes-evidence", Static)):
            shown.display = bool(findings)  # clean: the head's one line says so
        if not findings:
            return
        errors = len(verdict.errors)
        title.update(plain(f"FINDINGS ({len(findings)}, {errors} error-level: also alerts)"))
        cursor = 0
        for i, f in enumerate(findings):
            key = f"finding#{i}"
            self.shown[key] = f
            severity, kind, what = finding_row(verdict, f)
            table.add_row(severity, plain(kind), plain(ellipsis(what, self.room(34))), key=key)
            if self.focus_finding is not None and f == self.focus_finding:
                cursor = i
        table.move_cursor(row=cursor)
        self._show_evidence(findings[cursor])

    def _show_evidence(self, f: RouteFinding) -> None:
        panel = self.query_one("#routes-evidence", Static)
        if self.verdict is None:
            return
        panel.border_title = f"{f.severity.value.upper()} {f.kind}"
        panel.update(plain(finding_detail(self.verdict, f)))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        f = self.shown.get(str(event.row_key.value))
        if f is not None:
            self._show_evidence(f)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        f = self.shown.get(str(event.row_key.value))
        app = self.data
        view = app.view
        if (
            f is not None
            and f.switch is not None
            and view is not None
            and f.switch in view.discovery.fabric.nodes
        ):
            self.post_message(OpenDetail(guid=f.switch))
