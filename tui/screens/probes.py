"""Probes: stored sweeps and their slow pairs; start a sweep (lab backend with --lab) in a thread
worker and watch its progress, coalesced so a fast sweep cannot flood the screen."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, ProgressBar, Static

from fabric.app.views import StoredSweep
from fabric.present.sweep import sweep_report
from probes.sweep import SweepStep
from topology.errors import IbfabError
from tui.messages import SweepFinished, SweepProgressed
from tui.progress import Coalescer
from tui.screens.base import DataScreen

SLOW_SHARE = 0.9  # a pair below 90 % of its line rate is slow


def slow_pairs(sweep: StoredSweep) -> list[str]:
    out = []
    for r in sweep.results:
        if not r.ok:
            out.append(
                f"FAILED {r.client_host}/{r.client_device} -> {r.server_host}/{r.server_device}: {r.error or 'no result'}"
            )
        elif r.gbps is not None and r.line_rate_gbps and r.gbps < SLOW_SHARE * r.line_rate_gbps:
            out.append(
                f"SLOW   {r.client_host}/{r.client_device} -> {r.server_host}/{r.server_device}:"
                f" {r.gbps:.0f} of {r.line_rate_gbps:.0f} Gb/s"
            )
    return out


class ProbesScreen(DataScreen):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("s", "start_sweep", "start sweep")]
    DEFAULT_CSS = "#sweeps { height: auto; max-height: 12; } #sweep-bar { height: 1; }"

    def __init__(self) -> None:
        super().__init__()
        self.progress = Coalescer[SweepStep](lambda: self.post_message(SweepProgressed()))
        self.running = False
        self.progress_seen: list[SweepStep] = []

    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        with VerticalScroll():
            yield Static("", id="sweep-backend", classes="panel")
            yield ProgressBar(id="sweep-bar", show_eta=False)
            yield Static("", id="sweep-progress")
            yield DataTable(id="sweeps", cursor_type="row")
            yield Static("", id="sweep-results", classes="panel")
        yield from self.compose_footer()

    def draw(self) -> None:
        svc = self.ibfab.service
        blocked = svc.sweep_unavailable()
        where = f"lab {svc.lab}" if svc.lab else "no --lab given"
        self.query_one("#sweep-backend", Static).update(
            str(blocked) if blocked is not None else f"sweep backend: {where}; press s to start a sweep"
        )
        table = self.query_one("#sweeps", DataTable)
        table.clear(columns=True)
        table.add_columns("SWEEP", "STARTED", "FINISHED", "PATTERN", "PAIRS", "SLOW/FAILED")
        try:
            sweeps = svc.sweeps_of(limit=20)
        except IbfabError as exc:
            self.query_one("#sweep-results", Static).update(exc.one_line())
            return
        for s in sweeps:
            table.add_row(
                s.sweep.id,
                _t(s.sweep.started),
                _t(s.sweep.finished) if s.sweep.finished else "running",
                s.sweep.pattern,
                len(s.results),
                len(slow_pairs(s)),
                key=str(s.sweep.id),
            )
        self._sweeps = {str(s.sweep.id): s for s in sweeps}
        self._show(sweeps[0] if sweeps else None)

    def _show(self, sweep: StoredSweep | None) -> None:
        panel = self.query_one("#sweep-results", Static)
        if sweep is None:
            panel.border_title = "RESULTS"
            panel.update("no sweeps stored yet")
            return
        panel.border_title = f"SWEEP #{sweep.sweep.id}: SLOW AND FAILED PAIRS, SUSPECT LINKS"
        text = "\n".join(slow_pairs(sweep)) or f"all {len(sweep.results)} pairs at line rate"
        try:
            text += "\n\n" + sweep_report(self.ibfab.service.show_sweep(sweep.sweep.id))
        except IbfabError as exc:
            text += f"\n\nlocalization: {exc}"
        panel.update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value if event.row_key else None
        if key and key in getattr(self, "_sweeps", {}):
            self._show(self._sweeps[key])

    def action_start_sweep(self) -> None:
        blocked = self.ibfab.service.sweep_unavailable()
        if blocked is not None:
            self.notify(str(blocked), severity="warning")
            return
        if self.running:
            self.notify("a sweep is already running")
            return
        self.running = True
        self.run_sweep()

    @work(thread=True, exclusive=True, group="sweep", exit_on_error=False)
    def run_sweep(self) -> None:
        try:
            sweep_id = self.ibfab.service.run_sweep(self.progress_callback)
            self.post_message(SweepFinished(sweep_id, f"sweep #{sweep_id} stored", True))
        except IbfabError as exc:
            self.post_message(SweepFinished(None, exc.one_line(), False))

    def progress_callback(self, p: SweepStep) -> None:
        self.progress.push(p)

    def on_sweep_progressed(self, _: SweepProgressed) -> None:
        p = self.progress.take()
        if p is None:
            return
        self.progress_seen.append(p)
        self.query_one(ProgressBar).update(total=max(1, p.pairs), progress=p.pairs_done)
        self.query_one("#sweep-progress", Static).update(
            f"round {p.round}/{p.rounds}  pairs {p.pairs_done}/{p.pairs}  slow {p.slow_pairs}  {p.note}"
        )

    def on_sweep_finished(self, msg: SweepFinished) -> None:
        self.running = False
        self.query_one("#sweep-progress", Static).update(msg.text)
        self.refresh_data()


def _t(t: float | None) -> str:
    import time

    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
