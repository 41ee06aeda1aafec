"""Probes: stored sweeps; for the highlighted one each pair once with its re-test history (slow
and failed first) and the suspect cables localization ranks; enter on a suspect lists the pairs
that accuse it. ``s`` starts a sweep (lab backend with --lab) in a thread worker, its progress
coalesced so a fast sweep cannot flood the screen."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, ProgressBar, Static

from fabric.app.readmodel.operations import PairHistory
from fabric.app.sweeps.bandwidth import run_sweep
from fabric.app.sweeps.sweep import ShownSweep
from fabric.present.overview import when
from fabric.present.probes import attempts_text, pair_counts, pair_verdict, suspect_row
from fabric.present.table import ellipsis
from probes.sweep import SweepStep
from topology.errors import IbfabError
from topology.model import Guid
from tui.messages import OpenAccusers, OpenDetail, SweepFinished, SweepProgressed
from tui.progress import Coalescer
from tui.screens.base import DataScreen, plain


class ProbesScreen(DataScreen):
    NAME = "probes"
    HELP = (
        "A pair is judged against what its own route should give in its round (its share of each\n"
        "cable it crosses), shown beside its line rate: slow when its last attempt failed or measured\n"
        "under 93 % of that (re-tests, with fewer pairs at once, replace the first verdict). A suspect\n"
        "cable is one every pair crossing it was slow on. enter on a suspect lists the pairs accusing\n"
        "it; enter on a pair opens its client HCA."
    )
    BINDINGS: ClassVar[list[BindingType]] = [Binding("s", "start_sweep", "start sweep")]
    DEFAULT_CSS = (
        "#sweeps { height: auto; max-height: 8; } #sweep-bar { height: 1; } #sweep-bar.hidden { display: none; }"
        " #pairs { height: auto; max-height: 14; } #suspects { height: auto; max-height: 10; }"
        " .probe-title { padding: 0 1; text-style: bold; }"
    )

    def __init__(self) -> None:
        super().__init__()
        self.progress = Coalescer[SweepStep](lambda: self.post_message(SweepProgressed()))
        self.running = False
        self.progress_seen: list[SweepStep] = []
        self.shown: ShownSweep | None = None
        self.pairs: list[PairHistory] = []
        self._sweep_ids: list[int] = []

    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        with VerticalScroll(id="probes-body"):
            yield Static("", id="sweep-backend", classes="panel")
            yield ProgressBar(id="sweep-bar", show_eta=False, classes="hidden")
            yield Static("", id="sweep-progress")
            yield DataTable(id="sweeps", cursor_type="row")
            yield Static("", id="sweep-results", classes="probe-title")
            yield DataTable(id="pairs", cursor_type="row", zebra_stripes=True)
            yield Static("SUSPECT CABLES", id="suspects-title", classes="probe-title")
            yield DataTable(id="suspects", cursor_type="row", zebra_stripes=True)
        yield from self.compose_footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.set_focus(self.query_one("#sweeps", DataTable))

    def draw(self) -> None:
        svc = self.data.service
        blocked = svc.sweep_unavailable()
        where = svc.sweep_backend()
        self.query_one("#sweep-backend", Static).update(
            plain(
                str(blocked) if blocked is not None else f"sweep backend: {where}; press s to start a sweep"
            )
        )
        table = self.query_one("#sweeps", DataTable)
        table.clear(columns=True)
        table.add_columns("SWEEP", "STARTED", "FINISHED", "PATTERN", "RESULTS")
        try:
            sweeps = svc.sweeps_of(limit=20)
        except IbfabError as exc:
            self.query_one("#sweep-results", Static).update(plain(exc.one_line()))
            return
        self._sweep_ids = [s.sweep.id for s in sweeps]
        for s in sweeps:
            table.add_row(
                s.sweep.id,
                when(s.sweep.started),
                when(s.sweep.finished) if s.sweep.finished else "running",
                plain(s.sweep.pattern),
                len(s.results),
                key=str(s.sweep.id),
            )
        self.show_sweep(self._sweep_ids[0] if self._sweep_ids else None)

    def show_sweep(self, sweep_id: int | None) -> None:
        title = self.query_one("#sweep-results", Static)
        pairs = self.query_one("#pairs", DataTable)
        suspects = self.query_one("#suspects", DataTable)
        pairs.clear(columns=True)
        suspects.clear(columns=True)
        pairs.add_columns(
            "VERDICT", "CLIENT", "SERVER", "LAST Gb/s", "ATTEMPTS Gb/s (re-tests after →) OF EXPECTED"
        )
        suspects.add_columns("END A", "END B", "SCORE", "SLOW", "FAST", "WHY")
        if sweep_id is None:
            title.update("PAIRS: no sweeps stored yet")
            self.shown, self.pairs = None, []
            return
        try:
            shown = self.data.service.show_sweep(sweep_id)
        except IbfabError as exc:
            title.update(plain(f"sweep #{sweep_id}: {exc.one_line()}"))
            return
        self.shown, self.pairs = shown, self.data.service.sweep_pairs(shown)
        title.update(plain(f"SWEEP #{shown.id} PAIRS: {pair_counts(shown, self.pairs)}"))
        for i, p in enumerate(self.pairs):
            pairs.add_row(
                plain(pair_verdict(p)),
                plain(p.client),
                plain(p.server),
                _gbps(p.final.gbps),
                plain(attempts_text(p)),
                key=str(i),
            )
        self.query_one("#suspects-title", Static).update(
            f"SUSPECT CABLES ({len(shown.suspects)}): enter lists the pairs accusing one"
            if shown.suspects
            else "SUSPECT CABLES: none (no slow pair)"
        )
        for i, s in enumerate(shown.suspects):
            a, b, score, slow, fast, why = suspect_row(s, self.names())
            suspects.add_row(plain(a), plain(b), score, slow, fast, plain(ellipsis(why, 60)), key=str(i))

    def names(self) -> dict[Guid, str]:
        """The names the sweep stored, else the latest topology's (a sweep may store none)."""
        shown, view = self.shown, self.data.view
        names = dict(shown.names) if shown is not None else {}
        if shown is not None and view is not None:
            for s in shown.suspects:
                for end in (s.link.a, s.link.b):
                    names.setdefault(end.guid, view.name(end.guid))
        return names

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "sweeps" and event.row_key.value is not None:
            sweep_id = int(event.row_key.value)
            if self.shown is None or self.shown.id != sweep_id:
                self.show_sweep(sweep_id)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key is None:
            return
        if event.data_table.id == "suspects" and self.shown is not None:
            self.open_accusers(int(key))
        elif event.data_table.id == "pairs":
            self.post_message(OpenDetail(guid=self.pairs[int(key)].final.client.guid))

    def open_accusers(self, index: int) -> None:
        shown = self.shown
        assert shown is not None
        s = shown.suspects[index]
        by_key = {p.final.key: p for p in self.pairs}
        slow = tuple(by_key[r.key] for r in s.slow_pairs if r.key in by_key)
        fast = tuple(by_key[r.key] for r in s.fast_pairs if r.key in by_key)
        a, b, *_ = suspect_row(s, self.names())
        self.post_message(OpenAccusers(shown.id, f"{a} - {b}", s.link.key, slow, fast))

    def action_start_sweep(self) -> None:
        blocked = self.data.service.sweep_unavailable()
        if blocked is not None:
            self.notify(str(blocked), severity="warning", markup=False)
            return
        if self.running:
            self.notify("a sweep is already running")
            return
        self.running = True
        self.query_one(ProgressBar).remove_class("hidden")
        self.run_sweep()

    @work(thread=True, exclusive=True, group="sweep", exit_on_error=False)
    def run_sweep(self) -> None:
        try:
            # a change, not a read: the sweeps room's use case, with the UI's session
            sweep_id = run_sweep(self.data.service.session, self.progress_callback)
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
            plain(
                f"round {p.round}/{p.rounds}  pairs {p.pairs_done}/{p.pairs}  slow {p.slow_pairs}  {p.note}"
            )
        )

    def on_sweep_finished(self, msg: SweepFinished) -> None:
        self.running = False
        self.query_one(ProgressBar).add_class("hidden")
        self.query_one("#sweep-progress", Static).update(plain(msg.text))
        self.refresh_data()


def _gbps(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"
