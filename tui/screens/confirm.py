"""The one way the TUI changes the fabric: a modal that shows the whole labelled plan and applies
only when the operator types the target's name into it.

Keys typed for something else cannot confirm: the modal has no single-key answer, its name box
opens only :data:`GRACE_S` after the plan is on screen (keys already queued, from a burst or a
paste, land on a closed box and are dropped), and the typed text must be exactly the target's
name (``leaf-su01-r0:5``). ``escape`` or Cancel leaves without a change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from tui.screens.base import guard_typing, plain

GRACE_S = 0.6


class ConfirmChange(ModalScreen[bool]):
    """Dismissed with True only after the exact name was typed (or Apply clicked once it was)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]
    AUTO_FOCUS = "#confirm-scroll"
    DEFAULT_CSS = """
    ConfirmChange { align: center middle; }
    #confirm { width: 110; max-width: 100%; height: auto; max-height: 100%;
               border: thick $warning; background: $surface; padding: 0 1; }
    #confirm-scroll { height: auto; max-height: 45vh; }
    #confirm-buttons { height: auto; }
    #confirm-prompt { margin-top: 1; }
    """

    def __init__(
        self, title: str, plan_text: str, target: str, blocked: str | None = None, changes: str = "the fabric"
    ) -> None:
        super().__init__()
        self.changes = changes  # what applying changes, in the prompt: the fabric, Slurm
        self.title_text = title
        self.plan_text = plan_text
        self.target = target
        self.blocked = blocked
        self.box_open = False

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(plain(self.title_text), id="confirm-title")
            with VerticalScroll(id="confirm-scroll"):
                yield Static(plain(self.plan_text), id="confirm-plan")
            if self.blocked:
                prompt = f"cannot apply: {self.blocked}\nesc closes; nothing was changed."
            else:
                prompt = (
                    f"This changes {self.changes} and is recorded in the audit log.\n"
                    f"To apply, type the name {self.target}  and press enter; esc cancels."
                )
            yield Static(plain(prompt), id="confirm-prompt")
            if not self.blocked:  # nothing to type or press where nothing may change
                yield Input(placeholder=f"type {self.target}", id="confirm-name", disabled=True)
            with Horizontal(id="confirm-buttons"):
                if not self.blocked:
                    yield Button("Apply", variant="error", id="apply", disabled=True)
                yield Button("Cancel (esc)" if not self.blocked else "Close (esc)", id="cancel")

    def on_mount(self) -> None:
        if not self.blocked:
            self.set_timer(GRACE_S, self.open_box)

    def open_box(self) -> None:
        box = self.query_one("#confirm-name", Input)
        box.disabled = False
        self.box_open = True
        self.set_focus(box)

    @property
    def confirmed(self) -> bool:
        return (
            not self.blocked
            and self.box_open
            and self.query_one("#confirm-name", Input).value.strip() == self.target
        )

    def on_key(self, event: events.Key) -> None:
        guard_typing(self, event)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#apply", Button).disabled = not self.confirmed

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.confirmed:
            self.dismiss(True)
        else:
            self.query_one("#confirm-prompt", Static).update(
                plain(f"the name does not match: type {self.target} exactly (esc cancels)")
            )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "apply" and self.confirmed)

    def action_cancel(self) -> None:
        self.dismiss(False)


class Waiting(ModalScreen[None]):
    """Up while a plan is being asked for (Slurm's node state: up to the client's timeout), so the
    UI keeps drawing and every key typed meanwhile lands here and is dropped, never on the screen
    below; ``escape`` gives up (the answer, when it comes, is then ignored). The plan's
    :class:`ConfirmChange` replaces it, its name box closed for :data:`GRACE_S` as always."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    Waiting { align: center middle; }
    #waiting { width: 80; max-width: 100%; height: auto; border: thick $primary;
               background: $surface; padding: 0 1; }
    """

    def __init__(self, title: str, doing: str) -> None:
        super().__init__()
        self.title_text = title
        self.doing = doing
        self.cancelled = False

    def compose(self) -> ComposeResult:
        with Vertical(id="waiting"):
            yield Static(plain(self.title_text), id="waiting-title")
            yield Static(plain(f"{self.doing} …\nesc gives up; nothing is changed."), id="waiting-text")

    def on_key(self, event: events.Key) -> None:
        if event.key != "escape":  # typed ahead: not for anything on this screen or below
            event.stop()
            event.prevent_default()

    def action_cancel(self) -> None:
        self.cancelled = True
        self.dismiss(None)

    def replace_with(self, screen: ConfirmChange, answered: Callable[[bool | None], None]) -> bool:
        """Swap this for the plan's window; False (and nothing shown) when the operator gave up."""
        if self.cancelled or self.app.screen is not self:
            return False
        self.app.pop_screen()
        self.app.push_screen(screen, answered)
        return True

    def failed(self, message: str) -> None:
        """The plan could not be had: close and say why (nothing when the operator gave up)."""
        if self.cancelled or self.app.screen is not self:
            return
        self.app.pop_screen()
        self.app.notify(message, severity="error", markup=False)
