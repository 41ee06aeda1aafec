"""Detail of a switch, an HCA (its host's other HCAs listed) or a cable: ports and peers,
counter history as sparklines, findings, probe results and recommended actions."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Sparkline, Static

from fabric.app.views import Advice, CounterSeries, LinkRow, Unavailable
from topology.errors import IbfabError
from topology.model import LinkKey
from tui.messages import OpenDetail
from tui.screens.base import DataScreen

MAX_SPARK_PORTS = 6
SPARK_LABEL = {"symbol_errors": "symbol errors", "link_downed": "link downs", "xmit_data": "xmit Gb/s"}


class DetailScreen(DataScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "back"),
        Binding("a", "open_end(0)", "end A"),
        Binding("b", "open_end(1)", "end B"),
    ]
    DEFAULT_CSS = "DetailScreen Sparkline { height: 1; width: 1fr; } DetailScreen .spark-label { width: 34; } DetailScreen .spark-row { height: 1; layout: horizontal; } #detail-ports { height: auto; max-height: 16; }"

    def __init__(self, guid: str | None = None, link: LinkKey | None = None) -> None:
        super().__init__()
        self.guid = guid
        self.link = link
        self.history: list[tuple[str, CounterSeries]] | None = None
        self.advice: list[Advice] | Unavailable | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        with VerticalScroll(id="detail-body"):
            yield Static("", id="detail-head", classes="panel")
            yield DataTable(id="detail-ports", cursor_type="row", zebra_stripes=True)
            yield Static("counter history: loading…", id="detail-history-title", classes="panel")
            yield VerticalScroll(id="detail-sparks")
            yield Static("", id="detail-findings", classes="panel")
            yield Static("", id="detail-probes", classes="panel")
            yield Static("", id="detail-actions", classes="panel")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.load_history()

    def link_row(self) -> LinkRow | None:
        app = self.ibfab
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
        app = self.ibfab
        if app.view is None:
            return
        head = self.query_one("#detail-head", Static)
        ports = self.query_one("#detail-ports", DataTable)
        ports.clear(columns=True)
        findings: list[str] = []
        host: str | None = None
        if self.link is not None:
            row = self.link_row()
            if row is None:
                head.update(f"cable {self.link} is not in the latest topology")
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
                f"{row.a_name} port {row.a_port}  <->  {row.b_name} port {row.b_port}\n"
                f"{row.tiers}  rail {row.rail if row.rail is not None else '-'}  group {row.group if row.group is not None else '-'}"
                f"  {row.width}x{row.speed}\nstatus {row.status.upper()}  score {row.score if row.score is not None else '-'}"
                f"  BER {ber}  flaps/h {row.flaps_per_hour:.2f}"
            )
            ports.add_columns("END", "NODE", "PORT", "COUNTERS THAT MOVED")
            if lh is not None:
                for label, end in zip(("A", "B"), lh.ends, strict=True):
                    moved = ", ".join(f"{k} {v}" for k, v in end.counters.items()) or "none"
                    ports.add_row(label, app.view.name(end.ref.guid), end.ref.port, moved)
            else:
                ports.add_row("A", row.a_name, row.a_port, "no health data")
                ports.add_row("B", row.b_name, row.b_port, "no health data")
            findings = list(row.reasons)
            findings += [
                a.message
                for a in app.view.discovery.anomalies
                if any((p.guid, p.port) in self.link for p in a.ports)
            ]
        elif self.guid is not None:
            try:
                d = app.service.node_detail(app.view, self.guid, app.health)
            except KeyError:
                head.update(f"node {self.guid} is not in the latest topology")
                return
            head.border_title = d.kind.upper()
            host = app.view.discovery.classification.nodes[self.guid].host  # type: ignore[index]
            extra = f"\nhost {host}: HCAs {', '.join(app.view.name(g) for g in d.hcas)}" if host else ""
            head.update(
                f"{d.name}  ({d.description})\nGUID {d.guid}  tier {d.tier_name or '-'}  rail {d.rail if d.rail is not None else '-'}"
                f"  group {d.group if d.group is not None else '-'}  {len(d.ports)} cabled ports{extra}"
            )
            ports.add_columns("PORT", "PEER", "PEER PORT", "STATUS", "SCORE", "LINK", "WHY")
            for p in d.ports:
                ports.add_row(
                    p.port,
                    p.peer_name,
                    p.peer_port,
                    p.link.status.upper(),
                    "-" if p.link.score is None else p.link.score,
                    f"{p.link.width}x{p.link.speed}",
                    "; ".join(p.link.reasons)[:60],
                    key=str(p.port),
                )
            findings = list(d.anomalies) + [
                f"port {p.port}: {'; '.join(p.link.reasons)}" for p in d.ports if p.link.reasons
            ]
        f = self.query_one("#detail-findings", Static)
        f.border_title = f"FINDINGS ({len(findings)})"
        f.update("\n".join(findings) or "none")
        self._draw_probes(host)
        self._draw_actions()
        self._draw_history()

    def _draw_probes(self, host: str | None) -> None:
        panel = self.query_one("#detail-probes", Static)
        panel.border_title = "PROBE RESULTS"
        try:
            sweeps = self.ibfab.service.sweeps_of(host=host, limit=5) if host else []
        except IbfabError as exc:
            panel.update(exc.one_line())
            return
        lines = []
        for s in sweeps:
            for r in s.results[:6]:
                rate = "-" if r.gbps is None else f"{r.gbps:.0f} Gb/s"
                lines.append(
                    f"sweep #{s.sweep.id} {r.client_host}/{r.client_device} -> {r.server_host}/{r.server_device}: {rate}{'' if r.ok else ' FAILED ' + (r.error or '')}"
                )
        panel.update(
            "\n".join(lines)
            or ("no sweep measured this host" if host else "probe results are per host: open an HCA")
        )

    def _draw_actions(self) -> None:
        panel = self.query_one("#detail-actions", Static)
        panel.border_title = "RECOMMENDED ACTIONS"
        advice = self.advice
        if advice is None:
            panel.update("working out recommendations…")
        elif isinstance(advice, Unavailable):
            panel.update(str(advice))
        else:
            guids = set(self.guids())
            mine = [a for a in advice if a.action.port is not None and a.action.port.guid in guids]
            panel.update(
                "\n".join(f"{a.kind}: {a.target}: {a.reason}" for a in mine) or "none for this element"
            )

    @work(thread=True, exclusive=True, group="detail-history", exit_on_error=False)
    def load_history(self) -> None:
        app = self.ibfab
        try:
            series = [(g, s) for g in self.guids() for s in app.service.counter_history(g)]
        except IbfabError as exc:
            self.app.call_from_thread(self.query_one("#detail-history-title", Static).update, exc.one_line())
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
            label = Static(
                f"port {s.port:>3} {SPARK_LABEL.get(s.counter, s.counter):14} max {peak:.3g}",
                classes="spark-label",
            )
            row = _SparkRow(label, Sparkline(list(s.values), summary_function=max))
            box.mount(row)

    def _wanted_ports(self) -> set[tuple[str, int]]:
        """A cable's two ends; a node's worst-scored ports (at most MAX_SPARK_PORTS)."""
        if self.link is not None:
            return set(self.link)
        app = self.ibfab
        if app.view is None or self.guid is None:
            return set()
        try:
            d = app.service.node_detail(app.view, self.guid, app.health)
        except KeyError:
            return set()
        bad = sorted(d.ports, key=lambda p: (p.link.score if p.link.score is not None else 101, p.port))
        return {(self.guid, p.port) for p in bad[:MAX_SPARK_PORTS]}

    def action_open_end(self, which: int) -> None:
        if self.link is not None:
            self.post_message(OpenDetail(guid=self.link[which][0]))


class _SparkRow(VerticalScroll):
    DEFAULT_CSS = "_SparkRow { height: 1; layout: horizontal; overflow: hidden hidden; }"

    def __init__(self, label: Static, spark: Sparkline) -> None:
        super().__init__(label, spark)
