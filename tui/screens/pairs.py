"""The pairs of a sweep that accuse one suspect cable: the slow ones crossing it and the fast ones
that partly clear it, each with its re-test history. enter opens a pair's client HCA, ``d`` the
cable itself, escape goes back to the probes screen."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from fabric.app.readmodel.operations import PairHistory
from fabric.present.probes import attempts_text, pair_verdict
from tui.messages import OpenAccusers, OpenDetail
from tui.screens.base import DataScreen, plain


class AccusersScreen(DataScreen):
    NAME = "accusing pairs"
    HELP = "enter opens a pair's client HCA; d opens the suspect cable; esc goes back."
    BINDINGS: ClassVar[list[BindingType]] = [Binding("d", "open_cable", "cable detail")]
    DEFAULT_CSS = "#accusers { height: 1fr; }"

    def __init__(self, msg: OpenAccusers) -> None:
        super().__init__()
        self.sweep_id = msg.sweep_id
        self.cable = msg.cable
        self.link = msg.link
        self.listed: list[PairHistory] = [*msg.slow, *msg.fast]
        self.slow = len(msg.slow)

    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        yield Static("", id="accusers-title", classes="panel")
        yield DataTable(id="accusers", cursor_type="row", zebra_stripes=True)
        yield from self.compose_footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.set_focus(self.query_one("#accusers", DataTable))

    def draw(self) -> None:
        self.query_one("#accusers-title", Static).update(
            plain(
                f"sweep #{self.sweep_id}: suspect cable {self.cable}\n"
                f"{self.slow} slow pair(s) cross it; {len(self.listed) - self.slow} fast pair(s) cross it too"
            )
        )
        table = self.query_one("#accusers", DataTable)
        table.clear(columns=True)
        table.add_columns("CROSSES IT", "VERDICT", "CLIENT", "SERVER", "ATTEMPTS (Gb/s)")
        for i, p in enumerate(self.listed):
            table.add_row(
                "slow pair" if i < self.slow else "fast pair",
                plain(pair_verdict(p)),
                plain(p.client),
                plain(p.server),
                plain(attempts_text(p)),
                key=str(i),
            )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.post_message(OpenDetail(guid=self.listed[int(event.row_key.value)].final.client.guid))

    def action_open_cable(self) -> None:
        if self.link is not None and self.data.view is not None and self.link in self.data.view.row_of:
            self.post_message(OpenDetail(link=self.link))
        else:
            self.notify("that cable is not in the latest topology", severity="warning")
