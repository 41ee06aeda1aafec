"""Recommendations: the advice list (the highlighted one's reason and evidence whole below);
enter shows its plan. An isolation applies only through :class:`~tui.screens.confirm.ConfirmChange`
(the port's name typed), then runs the same use case as ``ibfab isolate --apply`` (safety checked,
audited); a drain likewise (the Slurm node's name typed) runs what ``ibfab drain recommended
--apply`` does (scontrol, audited); anything else is advice whose labelled commands the operator runs."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from fabric.app.drains.changes import drain
from fabric.app.drains.drain import DrainPlan
from fabric.app.isolation.isolate import IsolationPlan
from fabric.app.readmodel.views import Advice, Unavailable
from fabric.app.twin import apply_isolation_checked
from fabric.present.advice import change_title, held_back_text, isolation_plan_text, render_actions
from fabric.present.slurm import render_drain_plan
from fabric.present.table import ellipsis
from topology.errors import IbfabError
from tui.messages import ActionApplied, OpenDetail
from tui.screens.base import DataScreen, plain
from tui.screens.confirm import ConfirmChange, Waiting


class RecommendationsScreen(DataScreen):
    NAME = "recommendations"
    HELP = (
        "enter shows the plan of the highlighted action. An isolation is applied only after you type\n"
        "the port's name in the plan window (safety-checked and audited like ibfab isolate --apply);\n"
        "a drain only after you type the Slurm node's name (audited like ibfab drain --apply);\n"
        "other actions are advice: their [manager apply] / [manager undo] commands are shown to run.\n"
        "The list is ibfab recommend's with the same store (health, the newest reading, the newest\n"
        "sweep). Advice that needs the subnet manager (routing engine, AR, NCCL settings) is held\n"
        "back unless the TUI runs on a lab: the note above the list says which, and why."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        # priority: the plan window is up as the key arrives, so keys typed behind enter land on
        # its closed name box (dropped), never on screen keys
        Binding("enter", "plan", "plan…", priority=True),
        Binding("d", "open_target", "detail"),
    ]
    DEFAULT_CSS = (
        "#advice { height: 1fr; } #advice-why { height: auto; max-height: 12; }"
        " #advice-note { height: auto; max-height: 5; }"
    )

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

    def on_mount(self) -> None:
        super().on_mount()
        self.set_focus(self.query_one("#advice", DataTable))

    def draw(self) -> None:
        app = self.data
        note = self.query_one("#advice-note", Static)
        table = self.query_one("#advice", DataTable)
        table.clear(columns=True)
        table.add_columns("#", "ACTION", "TARGET", "REASON")
        if app.view is None:
            note.update("loading topology…" if app.loading["topology"] else "no topology stored")
            return
        got = app.service.advice(app.view, app.health)
        if isinstance(got, Unavailable):
            note.update(plain(str(got)))
            self.advice = []
            return
        result = self.advice = list(got.advice)
        held = held_back_text(got)
        note.update(
            plain(
                f"{len(result)} recommendation(s); enter shows the plan of the highlighted one"
                + (f"\n{held}" if held else "")
            )
        )
        for i, a in enumerate(result):
            reason = ellipsis(a.reason, self.room(len(a.target) + len(a.kind) + 12))
            table.add_row(i + 1, plain(a.kind), plain(a.target), plain(reason), key=str(i))

    def chosen(self) -> Advice | None:
        table = self.query_one("#advice", DataTable)
        row = table.cursor_row
        return self.advice[row] if self.advice and row is not None and 0 <= row < len(self.advice) else None

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key and event.row_key.value is not None and self.advice:
            a = self.advice[int(event.row_key.value)]
            self.query_one("#advice-why", Static).update(plain("\n".join((a.reason, *a.evidence))))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_plan()  # a double click on a row

    def action_open_target(self) -> None:
        """The element the advice is about: the port's cable, else nothing to open."""
        chosen, view = self.chosen(), self.data.view
        port = chosen.action.port if chosen is not None else None
        if port is not None and view is not None and (port.guid, port.port) in view.port_row:
            self.post_message(OpenDetail(link=view.links[view.port_row[(port.guid, port.port)]].key))

    def action_plan(self) -> None:
        chosen, view = self.chosen(), self.data.view
        if chosen is None or view is None:
            return
        if not chosen.can_apply:
            self.last_plan = render_actions([chosen.action])
            self.app.push_screen(
                ConfirmChange(
                    change_title(chosen.kind, chosen.target),
                    self.last_plan,
                    chosen.target,
                    blocked=f"{chosen.kind} is advice: run its commands yourself (ibfab applies isolations only)",
                )
            )
            return
        if chosen.kind == "drain_node":
            self.drain_plan(chosen)
            return
        try:
            plan = self.data.service.isolation_plan(view, chosen)
        except IbfabError as exc:
            self.notify(exc.one_line(), severity="error", markup=False)
            return
        self.last_plan = isolation_plan_text(plan)
        target = plan.steps[0].name if plan.steps else chosen.target
        blocked = (
            None
            if plan.safe and plan.steps
            else "the plan breaks safety rules (STOP above); nothing can change"
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self.apply(chosen, plan)
            else:
                self.post_message(ActionApplied(chosen.target, "not confirmed; nothing changed", False))

        self.app.push_screen(
            ConfirmChange(change_title(chosen.kind, chosen.target), self.last_plan, target, blocked), answered
        )

    def drain_plan(self, chosen: Advice) -> None:
        """The dry run of ``ibfab drain recommended`` for this host; it applies once the node's
        name is typed. Slurm is asked for the node's state now, off the UI thread, behind a
        :class:`Waiting` window that keeps keys typed meanwhile from the screen."""
        waiting = Waiting(change_title(chosen.kind, chosen.target), "asking Slurm for the node's state now")
        self.app.push_screen(waiting)
        self.ask_drain_plan(chosen, waiting)

    @work(thread=True, exclusive=True, group="plan", exit_on_error=False)
    def ask_drain_plan(self, chosen: Advice, waiting: Waiting) -> None:
        try:
            plan = self.data.service.drain_plan(chosen)
        except IbfabError as exc:
            self.app.call_from_thread(waiting.failed, exc.one_line())
            return
        self.app.call_from_thread(self.confirm_drain, chosen, plan, waiting)

    def confirm_drain(self, chosen: Advice, plan: DrainPlan, waiting: Waiting) -> None:
        self.last_plan = render_drain_plan(plan)
        target = plan.drains[0].node if plan.drains else chosen.target
        skipped = next((d.skip for d in plan.drains if d.skip), None)
        blocked = f"nothing to drain: {skipped}" if not plan.to_apply else None

        def answered(yes: bool | None) -> None:
            if yes:
                self.apply_drain(chosen, plan)
            else:
                self.post_message(ActionApplied(chosen.target, "not confirmed; nothing changed", False))

        waiting.replace_with(
            ConfirmChange(
                change_title(chosen.kind, chosen.target), self.last_plan, target, blocked, changes="Slurm"
            ),
            answered,
        )

    @work(thread=True, exclusive=True, group="apply", exit_on_error=False)
    def apply_drain(self, chosen: Advice, plan: DrainPlan) -> None:
        try:
            svc = self.data.service  # the drains room makes the change, with the UI's session
            done = drain(svc.session, plan, svc.slurm())
        except IbfabError as exc:
            self.post_message(ActionApplied(chosen.target, exc.one_line(), False))
            return
        text = "; ".join(
            f"audit {d.audit_id}: {d.command}: {d.result} (undo: c, or ibfab drain undo {d.audit_id})"
            for d in done
        )
        self.post_message(ActionApplied(chosen.target, text, True))

    @work(thread=True, exclusive=True, group="apply", exit_on_error=False)
    def apply(self, chosen: Advice, plan: IsolationPlan) -> None:
        try:
            changes = apply_isolation_checked(self.data.service.session, plan)  # the twin's gate first
        except IbfabError as exc:
            self.post_message(ActionApplied(chosen.target, exc.one_line(), False))
            return
        text = "; ".join(
            f"audit {c.audit_id}: {c.command}: {c.result} (undo: c, or ibfab isolate --undo {c.audit_id})"
            for c in changes
        )
        self.post_message(ActionApplied(chosen.target, text, True))
