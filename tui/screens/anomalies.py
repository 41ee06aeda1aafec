"""Every finding in one list: discovery's anomalies (all severities), each cable at watch or
worse and the stored forwarding tables' error-level findings (credit loops, black holes...),
grouped by kind, worst first; filter as you type; enter opens the cable or node named, or a route
finding on the routes screen (its evidence)."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.widgets import DataTable, Input, Static

from fabric.app.readmodel.views import Alert
from fabric.present.routes_tui import route_alerts
from fabric.present.table import ellipsis
from tui.messages import OpenDetail, OpenRoutes
from tui.screens.base import FilterScreen, plain

GROUP = "group:"  # row keys of the group heading rows


def matches(alert: Alert, words: list[str]) -> bool:
    """Every word appears in the severity, kind, element or message (case-insensitive)."""
    text = f"{alert.severity.value} {alert.kind} {alert.element} {alert.message}".lower()
    return all(w in text for w in words)


class AnomaliesScreen(FilterScreen):
    NAME = "anomalies"
    HELP = (
        "The filter keeps findings whose severity, kind, element or message contain every word\n"
        "(e.g. 'critical', 'rail_miswire', 'dgx-0002', 'spine-01 symbol'). The full message of\n"
        "the highlighted row is shown below the table."
    )
    DEFAULT_CSS = "#anomalies { height: 1fr; } #anomaly-why { height: auto; max-height: 8; }"

    def __init__(self) -> None:
        super().__init__()
        self.shown: dict[str, Alert] = {}  # row key -> alert
        self._alerts: tuple[int, tuple[Alert, ...]] | None = None  # (data generation, alerts)

    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        yield Input(
            placeholder="filter: severity, kind, name or words  (/ to edit, esc to leave)", id="filter"
        )
        yield Static("", id="anomalies-count")
        yield DataTable(id="anomalies", cursor_type="row", zebra_stripes=True)
        yield Static("", id="anomaly-why", classes="panel")
        yield from self.compose_footer()

    def filtered(self) -> DataTable[Any]:
        return self.query_one("#anomalies", DataTable)

    def alerts(self) -> tuple[Alert, ...]:
        """Every finding, worked out once per data load (not per keystroke)."""
        app = self.data
        if app.view is None:
            return ()
        if self._alerts is None or self._alerts[0] != app.generation:
            routes = route_alerts(app.service.routes_known(app.view))
            self._alerts = (app.generation, app.service.alerts(app.view, app.rows, routes))
        return self._alerts[1]

    def draw(self) -> None:
        app = self.data
        table = self.query_one("#anomalies", DataTable)
        table.clear(columns=True)
        table.add_columns("SEVERITY", "ELEMENT", "MESSAGE")
        self.shown = {}
        if app.view is None:
            self.query_one("#anomalies-count", Static).update(
                "loading topology…"
                if app.loading["topology"]
                else "no topology stored (ibfab discover --save)"
            )
            return
        every = self.alerts()
        words = self.filter_text.lower().split()
        kept = [a for a in every if matches(a, words)]
        element_w = min(48, max(20, self.app.size.width // 3))
        # group by kind: the kind of the worst finding first (alerts come worst first)
        kinds: dict[str, list[Alert]] = {}
        for a in kept:
            kinds.setdefault(a.kind, []).append(a)
        for kind, group in kinds.items():
            table.add_row(plain(f"── {kind}"), plain(f"{len(group)} finding(s)"), "", key=f"{GROUP}{kind}")
            for i, a in enumerate(group):
                key = f"{kind}#{i}"
                self.shown[key] = a
                table.add_row(
                    a.severity.value.upper(),
                    plain(ellipsis(a.element, element_w)),
                    plain(ellipsis(a.message, self.room(element_w + 22))),
                    key=key,
                )
        if kept:
            table.move_cursor(row=1)  # the worst finding, under its kind's heading
        if app.loading["health"]:
            health = "; computing health…"
        elif app.health is None:
            health = "; no health yet: discovery anomalies only"
        else:
            health = ""
        if app.loading["routes"]:
            health += "; judging the stored routes…"
        self.query_one("#anomalies-count", Static).update(
            plain(
                f"{len(kept)} of {len(every)} findings in {len(kinds)} kind(s)"
                + (f"  filter: {self.filter_text}" if self.filter_text else "")
                + health
            )
        )
        if not every:
            self.query_one("#anomaly-why", Static).update("no anomaly and no cable at watch or worse")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        a = self.shown.get(str(event.row_key.value))
        why = self.query_one("#anomaly-why", Static)
        if a is None:
            why.border_title = ""
            why.update("a kind heading: the findings of this kind follow; enter on one opens what it names")
            return
        why.border_title = f"{a.severity.value.upper()} {a.kind}"
        why.update(plain(f"{a.element}\n{a.message}"))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        a = self.shown.get(str(event.row_key.value))
        if a is None:
            return
        if a.route is not None:
            self.post_message(OpenRoutes(a.route))
        elif a.link is not None:
            self.post_message(OpenDetail(link=a.link))
        elif a.guid is not None:
            self.post_message(OpenDetail(guid=a.guid))
