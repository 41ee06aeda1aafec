"""What every data screen shares: header, a status line saying what is loaded, a footer,
``refresh_data`` when the app's data changed, and the typing guard.

The typing guard: a printable key that reaches the screen while a text box has focus was sent
before the focus moved there (a burst of keys from a fast typist or a paste into the terminal:
``/`` moves the focus, the letters behind it were already queued for the table). It is typed
into the box, never read as a hotkey. Keys the box handles itself never get here.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Footer, Header, Input, Static

from tui.state import FabricData, fabric_data


def plain(text: str) -> Text:
    """Text shown as written: names and commands in square brackets (``dgx-[01-04]``,
    ``[opensm apply]``, a node described ``leaf[/]x``) are not markup.

    The one way text from the fabric, the store or a host reaches a widget (a Static, a table
    cell or column, a border title); notifications pass ``markup=False`` instead."""
    return Text(text)


def guard_typing(screen: Screen[Any], event: events.Key) -> bool:
    """Type a stray printable key into the focused text box; True when it did."""
    focused = screen.focused
    if isinstance(focused, Input) and event.is_printable and event.character:
        event.stop()
        event.prevent_default()
        focused.insert_text_at_cursor(event.character)
        return True
    return False


class DataScreen(Screen[None]):
    """A screen drawn from the app's data (``self.data``)."""

    # What ? says about this screen beyond its keys (a filter's language, what a mark means).
    HELP: ClassVar[str] = ""
    # The screen as operators call it, in ?'s heading ("KEYS OF THE FABRIC MAP SCREEN").
    NAME: ClassVar[str] = ""
    drawn_generation = -1
    drawn_width: int | None = None

    @property
    def data(self) -> FabricData:
        return fabric_data(self.app)

    def compose_frame(self) -> ComposeResult:
        yield Header()
        yield Static("", id="status-line")

    def compose_footer(self) -> ComposeResult:
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_data()

    def on_screen_resume(self) -> None:
        if self.drawn_generation != self.data.generation:
            self.refresh_data()

    def on_key(self, event: events.Key) -> None:
        guard_typing(self, event)

    def on_resize(self, event: events.Resize) -> None:
        # table cells end in an ellipsis at the width there is: a new width draws them again
        if self.drawn_width is not None and event.size.width != self.drawn_width:
            self.refresh_data()
        self.drawn_width = event.size.width

    def room(self, used: int, least: int = 16) -> int:
        """Columns left for a table's last (free text) column when the others take ``used``."""
        return max(least, self.app.size.width - used)

    def refresh_data(self) -> None:
        self.drawn_generation = self.data.generation
        self.query_one("#status-line", Static).update(plain(self.data.status_line()))
        self.draw()

    def draw(self) -> None:
        """Redraw from the app's data (override)."""

    def go_back(self) -> None:
        """One step back in the history (the overview at the bottom stays)."""
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()


# A large fabric's thousands of rows are listed again once typing pauses (or on enter).
FILTER_DEBOUNCE_S = 0.15


class FilterScreen(DataScreen):
    """A data screen with a filter box over one table: typing filters it once typing pauses
    (``debounce_s``), enter filters at once and moves to the table, ``/`` goes to the box (even
    when it arrives before the screen is built), escape leaves the box, then the screen.
    Subclasses give :meth:`filtered` (the table) and draw with ``filter_text``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # priority: handled as the key arrives, so the keys queued behind it already find the box
        Binding("slash", "focus_filter", "filter", priority=True),
        Binding("escape", "leave_filter_or_back", "back"),
    ]
    filter_first = False  # a / came before the screen was built: its filter box takes the focus

    def __init__(self) -> None:
        super().__init__()
        self.filter_text = ""
        self.debounce_s = FILTER_DEBOUNCE_S
        self._debounce: Timer | None = None

    def filtered(self) -> Widget:
        """The table the filter applies to (where enter and escape move the focus)."""
        raise NotImplementedError

    def on_mount(self) -> None:
        super().on_mount()
        self.set_focus(self.query_one(Input) if self.filter_first else self.filtered())

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(self.debounce_s, self.draw)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        self.filter_text = event.value
        self.draw()
        self.set_focus(self.filtered())

    def action_focus_filter(self) -> None:
        if not self.is_mounted:  # / right behind the screen key: the box takes focus once built
            self.filter_first = True
            return
        self.set_focus(self.query_one(Input))  # at once: the keys behind / are already queued

    def action_leave_filter_or_back(self) -> None:
        if isinstance(self.focused, Input):
            self.set_focus(self.filtered())
        else:
            self.go_back()
