"""Recommendations: the advice list; applying one shows the CLI's plan text in a modal, asks for
confirmation, then calls the same isolation service as ``ibfab isolate --apply --yes``."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Static

from fabric.app.isolate import IsolationPlan
from fabric.app.views import Advice, Unavailable
from fabric.present.advice import isolation_plan_text
from topology.errors import IbfabError
from tui.messages import ActionApplied
from tui.screens.base import DataScreen


class ConfirmScreen(ModalScreen[bool]):
    """The plan, then y (apply) or n/esc (cancel)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "apply"),
        Binding("n,escape", "answer(False)", "cancel"),
    ]
    DEFAULT_CSS = "ConfirmScreen { align: center middle; } #confirm { width: 100; max-width: 100%; height: auto; max-height: 90%; border: thick $warning; background: $surface; padding: 0 1; }"

    def __init__(self, plan_text: str) -> None:
        super().__init__()
        self.plan_text = plan_text

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield VerticalScroll(Static(self.plan_text, id="confirm-plan"))
            yield Static(
                "Apply this change to the fabric? It is recorded in the audit log.  y = apply, n = cancel"
            )
            with Horizontal():
                yield Button("Apply (y)", variant="error", id="yes")
                yield Button("Cancel (n)", id="no")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class RecommendationsScreen(DataScreen):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "apply", "apply…")]
    DEFAULT_CSS = "#advice { height: 1fr; }"

    def __init__(self) -> None:
        super().__init__()
        self.advice: list[Advice] = []
        self.last_plan = ""

    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        yield Static("", id="advice-note", classes="panel")
        yield DataTable(id="advice", cursor_type="row")
        yield Static("", id="advice-why", classes="panel")
        yield from self.compose_footer()

    def draw(self) -> None:
        app = self.ibfab
        note = self.query_one("#advice-note", Static)
        table = self.query_one("#advice", DataTable)
        table.clear(columns=True)
        table.add_columns("#", "ACTION", "TARGET", "REASON")
        if app.view is None:
            note.update("loading topology…" if app.loading["topology"] else "no topology stored")
            return
        result = app.service.recommendations(app.view, app.health)
        if isinstance(result, Unavailable):
            note.update(str(result))
            self.advice = []
            return
        self.advice = result
        note.update(f"{len(result)} recommendation(s); enter applies the selected one after showing its plan")
        for i, a in enumerate(result):
            table.add_row(i + 1, a.kind, a.target, a.reason[:70], key=str(i))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key and event.row_key.value is not None and self.advice:
            a = self.advice[int(event.row_key.value)]
            self.query_one("#advice-why", Static).update("\n".join((a.reason, *a.evidence)))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_apply()  # the table takes enter itself

    def action_apply(self) -> None:
        table = self.query_one("#advice", DataTable)
        if not self.advice or table.cursor_row is None or not 0 <= table.cursor_row < len(self.advice):
            return
        chosen = self.advice[table.cursor_row]
        view = self.ibfab.view
        if not chosen.can_apply or view is None:
            self.notify(f"{chosen.kind} is advice only: run its commands yourself", severity="warning")
            return
        try:
            plan = self.ibfab.service.isolation_plan(view, chosen)
        except IbfabError as exc:
            self.notify(exc.one_line(), severity="error")
            return
        self.last_plan = isolation_plan_text(plan)

        def answered(yes: bool | None) -> None:
            if yes:
                self.apply(chosen, plan)
            else:
                self.post_message(ActionApplied(chosen.target, "not confirmed; nothing changed", False))

        self.app.push_screen(ConfirmScreen(self.last_plan), answered)

    @work(thread=True, exclusive=True, group="apply", exit_on_error=False)
    def apply(self, chosen: Advice, plan: IsolationPlan) -> None:
        try:
            changes = self.ibfab.service.apply_isolation(plan)
        except IbfabError as exc:
            self.post_message(ActionApplied(chosen.target, exc.one_line(), False))
            return
        text = "; ".join(f"audit {c.audit_id}: {c.command}: {c.result}" for c in changes)
        self.post_message(ActionApplied(chosen.target, text, True))
