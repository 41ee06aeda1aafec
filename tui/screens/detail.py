"""Detail of a switch, an HCA (its host's other HCAs listed) or a cable: ports and peers, a
cable's inventory (the module at each end as the newest kept ibdiagnet run read it, or that there
is none), counter history as sparklines, findings (whole, wrapped), probe results and recommended
actions.

Every row that names something opens it: a node's port row opens its cable, a cable's end row
opens that node, a host's HCA row opens the HCA; ``a``/``b`` open the ends of a cable as shown
(lower tier first, whichever order the cable's GUIDs are in)."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Sparkline, Static

from fabric.app.discovery.cables import CableDetail
from fabric.app.readmodel.views import Advice, CounterSeries, LinkRow, Unavailable, status_order
from fabric.present.cables import SERIES_LABEL_WIDTH, render_cable, series_label
from fabric.present.health import flaps_text
from fabric.present.table import ellipsis
from topology.errors import IbfabError
from topology.model import LinkKey
from tui.messages import OpenDetail
from tui.screens.base import DataScreen, plain

MAX_SPARK_PORTS = 6


class DetailScreen(DataScreen):
    NAME = "detail"
    HELP = "enter on a row opens what it names: a port's cable, a cable's end, a host's HCA."
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "open_end(0)", "end A"),
        Binding("b", "open_end(1)", "end B"),
    ]
    DEFAULT_CSS = (
        "DetailScreen Sparkline { height: 1; width: 1fr; } "
        f"DetailScreen .spark-label {{ width: {SERIES_LABEL_WIDTH + 1}; }} "
        "DetailScreen .spark-row { height: 1; layout: horizontal; } #detail-ports { height: auto; "
        "max-height: 16; } #detail-hcas { height: auto; max-height: 10; }"
    )

    def __init__(self, guid: str | None = None, link: LinkKey | None = None) -> None:
        super().__init__()
        self.guid = guid
        self.link = link
        self.history: list[tuple[str, CounterSeries]] | None = None
        self.advice: list[Advice] | Unavailable | None = None
        self.cable: CableDetail | str | None = None  # str: why it could not be read

    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        with VerticalScroll(id="detail-body"):
            yield Static("", id="detail-head", classes="panel")
            yield DataTable(id="detail-ports", cursor_type="row", zebra_stripes=True)
            yield DataTable(id="detail-hcas", cursor_type="row", zebra_stripes=True)
            yield Static("", id="detail-cable", classes="panel")
            yield Static("counter history: loading…", id="detail-history-title", classes="panel")
            yield VerticalScroll(id="detail-sparks")
            yield Static("", id="detail-findings", classes="panel")
            yield Static("", id="detail-probes", classes="panel")
            yield Static("", id="detail-actions", classes="panel")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.set_focus(self.query_one("#detail-ports", DataTable), scroll_visible=False)
        if self.link is not None:
            self.load_cable()
        self.load_history()

    def link_row(self) -> LinkRow | None:
        app = self.data
        if self.link is None or app.view is None or self.link not in app.view.row_of:
            return None
        return (
            app.rows[app.view.row_of[self.link]] if app.rows else app.view.links[app.view.row_of[self.link]]
        )

    def guids(self) -> list[str]:
        if self.link is not None:
            return [self.link[0][0], self.link[1][0]]
        return [self.guid] if self.guid else []

    def draw(self) -> None:
        app = self.data
        if app.view is None:
            return
        head = self.query_one("#detail-head", Static)
        ports = self.query_one("#detail-ports", DataTable)
        ports.clear(columns=True)
        hcas = self.query_one("#detail-hcas", DataTable)
        hcas.clear(columns=True)
        hcas.display = False
        self._draw_cable()
        findings: list[str] = []
        host: str | None = None
        if self.link is not None:
            row = self.link_row()
            if row is None:
                head.update(plain(f"cable {self.link} is not in the latest topology"))
                return
            head.border_title = "CABLE"
            lh = app.health.by_key.get(self.link) if app.health else None
            ber = (
                "-"
                if lh is None or lh.ber.value is None
                else f"{lh.ber.value:.2e} (upper {lh.ber.upper:.2e})"
                if lh.ber.upper
                else f"{lh.ber.value:.2e}"
            )
            head.update(
                plain(
                    f"{row.a_name} port {row.a_port}  <->  {row.b_name} port {row.b_port}\n"
                    f"{row.tiers}  rail {row.rail if row.rail is not None else '-'}  group {row.group if row.group is not None else '-'}"
                    f"  {row.width}x{row.speed}\nstatus {row.status.upper()}  score {row.score if row.score is not None else '-'}"
                    f"  BER {ber}  flaps/h {flaps_text(row.flaps_per_hour)}"
                )
            )
            ports.add_columns("END", "NODE", "PORT", "COUNTERS THAT MOVED")
            moved_at = {} if lh is None else {(str(e.ref.guid), e.ref.port): e.counters for e in lh.ends}
            for label, guid, name, port in (
                ("A", row.a_guid, row.a_name, row.a_port),
                ("B", row.b_guid, row.b_name, row.b_port),
            ):
                counters = moved_at.get((guid, port))
                moved = (
                    "no health data"
                    if counters is None
                    else ", ".join(f"{k} {v}" for k, v in counters.items()) or "none"
                )
                ports.add_row(label, plain(name), port, plain(moved), key=f"node:{guid}")
            findings = list(row.reasons)
            findings += [
                a.message
                for a in app.view.discovery.anomalies
                if any((p.guid, p.port) in self.link for p in a.ports)
            ]
        elif self.guid is not None:
            try:
                d = app.service.node_detail(app.view, self.guid, app.health, app.rows)
            except KeyError:
                head.update(plain(f"node {self.guid} is not in the latest topology"))
                return
            head.border_title = plain(d.kind.upper())
            host = d.host
            head.update(
                plain(
                    f"{d.name}  ({d.description})\nGUID {d.guid}  tier {d.tier_name}  in {d.section}"
                    f"  rail {d.rail if d.rail is not None else '-'}"
                    f"  group {d.group if d.group is not None else '-'}  {len(d.ports)} cabled ports"
                    + (f"  role {d.role}" if d.role else "")
                    + (f"  pod {d.pod}" if d.pod is not None else "")
                    + (f"\n{d.board} board of chassis {d.chassis}" if d.chassis else "")
                    + (f"\nhost {host}: {len(d.hcas)} HCAs (listed below)" if host else "")
                    + (f"\n{d.role} host ({d.role_reason})" if d.role_reason else "")
                )
            )
            ports.add_columns("PORT", "PEER", "PEER PORT", "STATUS", "SCORE", "LINK", "WHY")
            for p in d.ports:
                ports.add_row(
                    p.port,
                    plain(p.peer_name),
                    p.peer_port,
                    p.link.status.upper(),
                    "-" if p.link.score is None else p.link.score,
                    f"{p.link.width}x{p.link.speed}",
                    plain(ellipsis("; ".join(p.link.reasons), self.room(64))),
                    key=f"link:{p.link.index}",
                )
            if host:
                hcas.display = True
                hcas.add_columns(plain(f"HCAS OF {host}"), "RAIL", "WORST CABLE")
                for g in d.hcas:
                    hcas.add_row(
                        plain(app.view.name(g)),
                        _dash(app.view.rail(g)),
                        self._worst_status(g),
                        key=f"node:{g}",
                    )
            findings = list(d.anomalies) + [
                f"port {p.port}: {'; '.join(p.link.reasons)}" for p in d.ports if p.link.reasons
            ]
        f = self.query_one("#detail-findings", Static)
        f.border_title = f"FINDINGS ({len(findings)})"
        f.update(plain("\n".join(findings) or "none"))
        self._draw_probes(host)
        self._draw_actions()
        self._draw_history()

    def _draw_cable(self) -> None:
        panel = self.query_one("#detail-cable", Static)
        panel.display = self.link is not None
        if self.link is None:
            return
        panel.border_title = "CABLE INVENTORY"
        if self.cable is None:
            panel.update("reading the cable inventory…")
        elif isinstance(self.cable, str):
            panel.update(plain(self.cable))
        else:  # both ends side by side where they fit, else one under the other
            panel.update(plain(render_cable(self.cable, width=self.app.size.width - 6)))

    @work(thread=True, exclusive=True, group="detail-cable", exit_on_error=False)
    def load_cable(self) -> None:
        """The modules at both ends of the cable, the end shown as A first."""
        row, app = self.link_row(), self.data
        if row is None or app.view is None:
            return
        cable: CableDetail | str
        try:
            cable = app.service.cable_detail(app.view, row.a_guid, row.a_port, app.cable_inventory())
        except IbfabError as exc:
            cable = f"cable inventory: {exc.one_line()}"
        self.app.call_from_thread(self._set_cable, cable)

    def _set_cable(self, cable: CableDetail | str) -> None:
        self.cable = cable
        if self.is_mounted:
            self._draw_cable()

    def _draw_probes(self, host: str | None) -> None:
        panel = self.query_one("#detail-probes", Static)
        panel.border_title = "PROBE RESULTS"
        try:
            sweeps = self.data.service.sweeps_of(host=host, limit=5) if host else []
        except IbfabError as exc:
            panel.update(plain(exc.one_line()))
            return
        lines = []
        for s in sweeps:
            for r in s.results[:6]:
                rate = "-" if r.gbps is None else f"{r.gbps:.0f} Gb/s"
                lines.append(
                    f"sweep #{s.sweep.id} {r.client_host}/{r.client_device} -> {r.server_host}/{r.server_device}: {rate}{'' if r.ok else ' FAILED ' + (r.error or '')}"
                )
        panel.update(
            plain(
                "\n".join(lines)
                or ("no sweep measured this host" if host else "probe results are per host: open an HCA")
            )
        )

    def _draw_actions(self) -> None:
        panel = self.query_one("#detail-actions", Static)
        panel.border_title = "RECOMMENDED ACTIONS"
        advice = self.advice
        if advice is None:
            panel.update("working out recommendations…")
        elif isinstance(advice, Unavailable):
            panel.update(plain(str(advice)))
        else:
            guids = set(self.guids())
            mine = [a for a in advice if a.action.port is not None and a.action.port.guid in guids]
            panel.update(
                plain("\n".join(f"{a.kind}: {a.target}: {a.reason}" for a in mine) or "none for this element")
            )

    @work(thread=True, exclusive=True, group="detail-history", exit_on_error=False)
    def load_history(self) -> None:
        app = self.data
        try:
            series = [(g, s) for g in self.guids() for s in app.service.counter_history(g)]
        except IbfabError as exc:
            self.app.call_from_thread(
                self.query_one("#detail-history-title", Static).update, plain(exc.one_line())
            )
            return
        self.app.call_from_thread(self._set_history, series)
        advice: list[Advice] | Unavailable
        try:
            advice = (
                app.service.recommendations(app.view, app.health)
                if app.view
                else Unavailable("recommendations", "no topology")
            )
        except IbfabError as exc:
            advice = Unavailable("recommendations", exc.one_line())
        self.app.call_from_thread(self._set_advice, advice)

    def _set_advice(self, advice: list[Advice] | Unavailable) -> None:
        self.advice = advice
        if self.is_mounted:
            self._draw_actions()

    def _set_history(self, series: list[tuple[str, CounterSeries]]) -> None:
        self.history = series
        self._draw_history()

    def _draw_history(self) -> None:
        if self.history is None or not self.is_mounted:
            return
        wanted = self._wanted_ports()
        shown = [s for g, s in self.history if (g, s.port) in wanted]
        title = self.query_one("#detail-history-title", Static)
        box = self.query_one("#detail-sparks", VerticalScroll)
        box.remove_children()
        if not shown:
            title.update("counter history: no samples in the store for these ports")
            return
        title.update(f"counter history: per-sample deltas, oldest left ({len(shown[0].values)} samples)")
        for s in shown:
            peak = max(s.values, default=0.0)
            label = Static(plain(series_label(s.port, s.counter, peak)), classes="spark-label")
            row = _SparkRow(label, Sparkline(list(s.values), summary_function=max))
            box.mount(row)

    def _wanted_ports(self) -> set[tuple[str, int]]:
        """A cable's two ends; a node's worst-scored ports (at most MAX_SPARK_PORTS)."""
        if self.link is not None:
            return set(self.link)
        app = self.data
        if app.view is None or self.guid is None:
            return set()
        try:
            d = app.service.node_detail(app.view, self.guid, app.health, app.rows)
        except KeyError:
            return set()
        bad = sorted(d.ports, key=lambda p: (p.link.score if p.link.score is not None else 101, p.port))
        return {(self.guid, p.port) for p in bad[:MAX_SPARK_PORTS]}

    def action_open_end(self, which: int) -> None:
        """``a`` opens the end shown as A (the lower tier), ``b`` the end shown as B."""
        row = self.link_row()
        if row is not None:
            self.post_message(OpenDetail(guid=row.a_guid if which == 0 else row.b_guid))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "open_end":
            return self.link is not None  # a node has no ends: a and b are not shown
        return True

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        key = str(event.row_key.value)
        kind, _, what = key.partition(":")
        rows = self.data.rows or (self.data.view.links if self.data.view else ())
        if kind == "node":
            self.post_message(OpenDetail(guid=what))
        elif kind == "link" and what.isdigit() and int(what) < len(rows):
            self.post_message(OpenDetail(link=rows[int(what)].key))

    def _worst_status(self, guid: str) -> str:
        app = self.data
        if app.view is None:
            return "-"
        try:
            d = app.service.node_detail(app.view, guid, app.health, app.rows)
        except KeyError:
            return "-"
        statuses = sorted((p.link for p in d.ports), key=lambda r: (status_order(r.status), r.index))
        return statuses[0].status.upper() if statuses else "-"


def _dash(value: object) -> str:
    return "-" if value is None else str(value)


class _SparkRow(VerticalScroll):
    DEFAULT_CSS = "_SparkRow { height: 1; layout: horizontal; overflow: hidden hidden; }"

    def __init__(self, label: Static, spark: Sparkline) -> None:
        super().__init__(label, spark)
