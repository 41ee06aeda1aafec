"""Changes and runs: the isolations and Slurm drains still in force with their age (enter or u:
undo, through the same safety checks and audit as ``ibfab isolate --undo`` / ``ibfab drain undo``),
the audit log, and the last collection, sweep and daemon runs with their errors."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from fabric.app.drains.changes import resume, resume_plan
from fabric.app.drains.drain import ResumePlan, check_resume
from fabric.app.isolation.changes import undo, undo_plan
from fabric.app.isolation.isolate import UndoPlan, check_undo
from fabric.app.readmodel.operations import OpenChange, Operations
from fabric.present.advice import undo_plan_text
from fabric.present.operations import open_change_row, runs_text
from fabric.present.overview import when
from fabric.present.slurm import render_resume_plan
from fabric.present.table import ellipsis
from topology.errors import IbfabError, SafetyError
from tui.messages import ActionApplied, OpenDetail
from tui.screens.base import DataScreen, plain
from tui.screens.confirm import ConfirmChange, Waiting


class OperationsScreen(DataScreen):
    NAME = "operations"
    HELP = (
        "Open changes: enter (or u) on an isolation shows its undo plan; it applies after you type the\n"
        "port's name, only once the re-test window has passed (ibfab isolate --undo ID --force otherwise).\n"
        "On a drain it shows the resume plan; it applies after you type the Slurm node's name, only once\n"
        "the re-test window has passed with no failed re-test (ibfab drain undo ID --force otherwise).\n"
        "d opens the isolated cable, or the drained host."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("u", "undo", "undo…"),
        Binding("enter", "undo_here", "undo…", show=False, priority=True),  # see recommendations
        Binding("d", "open_cable", "detail"),
    ]
    DEFAULT_CSS = (
        "#ops-open { height: auto; max-height: 8; } #ops-audit { height: auto; max-height: 12; }"
        " .ops-title { padding: 0 1; text-style: bold; }"
    )

    def __init__(self) -> None:
        super().__init__()
        self.ops: Operations | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        with VerticalScroll(id="ops-body"):
            yield Static("OPEN CHANGES", id="ops-open-title", classes="ops-title")
            yield DataTable(id="ops-open", cursor_type="row")
            yield Static("LAST RUNS", classes="ops-title")
            yield Static("", id="ops-runs", classes="panel")
            yield Static("AUDIT LOG (newest first)", classes="ops-title")
            yield DataTable(id="ops-audit", cursor_type="row", zebra_stripes=True)
        yield from self.compose_footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.set_focus(self.query_one("#ops-open", DataTable))

    def draw(self) -> None:
        try:
            self.ops = ops = self.data.service.operations(now=self.data.now())
        except IbfabError as exc:
            self.query_one("#ops-runs", Static).update(plain(exc.one_line()))
            return
        now = self.data.now()
        open_table = self.query_one("#ops-open", DataTable)
        open_table.clear(columns=True)
        open_table.add_columns("AUDIT", "ACTION", "TARGET", "AGE", "BY")
        for c in ops.open_changes:
            open_table.add_row(*(plain(x) for x in open_change_row(c)), key=str(c.entry.id))
        self.query_one("#ops-open-title", Static).update(
            f"OPEN CHANGES ({len(ops.open_changes)})" if ops.open_changes else "OPEN CHANGES: none in force"
        )
        self.query_one("#ops-runs", Static).update(plain(runs_text(ops, self.data.state, now)))
        audit = self.query_one("#ops-audit", DataTable)
        audit.clear(columns=True)
        audit.add_columns("ID", "WHEN", "USER", "ACTION", "TARGET", "RESULT")
        for e in ops.audit:
            audit.add_row(
                e.id,
                when(e.time),
                plain(e.user),
                plain(e.action),
                plain(ellipsis(e.target, 40)),
                plain(ellipsis(e.result, self.room(90, 24))),
                key=str(e.id),
            )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "ops-open":
            self.action_undo()  # a double click on an open change

    def action_undo_here(self) -> None:
        """enter: the undo plan of the open change under the cursor (elsewhere enter is the table's)."""
        focused = self.focused
        if focused is None or focused.id != "ops-open":
            raise SkipAction()
        self.action_undo()

    def highlighted(self) -> OpenChange | None:
        table = self.query_one("#ops-open", DataTable)
        if self.ops is None or not self.ops.open_changes or table.cursor_row is None:
            return None
        return self.ops.open_changes[min(table.cursor_row, len(self.ops.open_changes) - 1)]

    def action_open_cable(self) -> None:
        """The cable of the highlighted isolation (its audit target starts ``GUID/PORT``), or the
        host of the highlighted drain."""
        change, view = self.highlighted(), self.data.view
        if change is None or view is None:
            return
        if change.is_drain:
            if not change.entry.hosts:
                self.notify("the drain's audit entry names no fabric host", severity="warning")
                return
            host = change.entry.hosts[0]
            guid = self.data.service.find_node(view, host)
            if guid is None:
                self.notify(f"{host} is not in the latest topology", severity="warning", markup=False)
                return
            self.post_message(OpenDetail(guid=guid))
            return
        ports = change.entry.ports
        row = view.port_row.get((ports[0].guid, ports[0].port)) if ports else None
        if row is None:
            self.notify("that port has no cable in the latest topology", severity="warning")
            return
        self.post_message(OpenDetail(link=view.links[row].key))

    def action_undo(self) -> None:
        change = self.highlighted()
        if change is None:
            return
        if change.is_drain:
            self.resume(change)
            return
        try:
            plan = undo_plan(self.data.service.session, change.entry.id)
        except IbfabError as exc:
            self.notify(exc.one_line(), severity="error", markup=False)
            return
        try:
            check_undo(plan)
            blocked = None
        except SafetyError as exc:
            blocked = exc.one_line().replace("--force", f"ibfab isolate --undo {plan.entry.id} --force")
        target = plan.entry.target.split(" ", 2)[1] if " " in plan.entry.target else plan.entry.target

        def answered(yes: bool | None) -> None:
            if yes:
                self.apply_undo(plan)
            else:
                self.post_message(ActionApplied(plan.entry.target, "not confirmed; nothing changed", False))

        self.app.push_screen(
            ConfirmChange(f"RETURN TO SERVICE {plan.entry.target}", undo_plan_text(plan), target, blocked),
            answered,
        )

    def resume(self, change: OpenChange) -> None:
        """The resume plan of a drain (``ibfab drain undo ID``); it applies, never forced, once the
        node's name is typed. Slurm is asked for the node's state now, off the UI thread, behind a
        :class:`Waiting` window that keeps keys typed meanwhile from the screen."""
        waiting = Waiting(f"RESUME {change.entry.target}", "asking Slurm for the node's state now")
        self.app.push_screen(waiting)
        self.ask_resume_plan(change, waiting)

    @work(thread=True, exclusive=True, group="plan", exit_on_error=False)
    def ask_resume_plan(self, change: OpenChange, waiting: Waiting) -> None:
        try:
            svc = self.data.service
            plan = resume_plan(svc.session, change.entry.id, svc.slurm())
        except IbfabError as exc:
            self.app.call_from_thread(waiting.failed, exc.one_line())
            return
        self.app.call_from_thread(self.confirm_resume, plan, waiting)

    def confirm_resume(self, plan: ResumePlan, waiting: Waiting) -> None:
        try:
            check_resume(plan)
            blocked = None
        except IbfabError as exc:
            blocked = exc.one_line().replace("--force", f"ibfab drain undo {plan.entry.id} --force")

        def answered(yes: bool | None) -> None:
            if yes:
                self.apply_resume(plan)
            else:
                self.post_message(ActionApplied(plan.entry.target, "not confirmed; nothing changed", False))

        waiting.replace_with(
            ConfirmChange(
                f"RESUME {plan.entry.target}", render_resume_plan(plan), plan.node, blocked, changes="Slurm"
            ),
            answered,
        )

    @work(thread=True, exclusive=True, group="undo", exit_on_error=False)
    def apply_resume(self, plan: ResumePlan) -> None:
        try:
            svc = self.data.service
            change = resume(svc.session, plan, svc.slurm())
        except IbfabError as exc:
            self.post_message(ActionApplied(plan.entry.target, exc.one_line(), False))
            return
        self.post_message(
            ActionApplied(
                plan.entry.target, f"audit {change.audit_id}: {change.command}: {change.result}", True
            )
        )
        self.app.call_from_thread(self.refresh_data)

    @work(thread=True, exclusive=True, group="undo", exit_on_error=False)
    def apply_undo(self, plan: UndoPlan) -> None:
        try:
            change = undo(self.data.service.session, plan)
        except IbfabError as exc:
            self.post_message(ActionApplied(plan.entry.target, exc.one_line(), False))
            return
        self.post_message(
            ActionApplied(
                plan.entry.target, f"audit {change.audit_id}: {change.command}: {change.result}", True
            )
        )
        self.app.call_from_thread(self.refresh_data)
